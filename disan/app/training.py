"""Streamlit glue of the Training page: the server's one job registry, a file of one's own (the upload
kept in the uploads folder, its preview and label balance read once per version of the file), the form's
fields assembled into a :class:`TrainConfig`, and a finished run's evaluation and misclassified examples.

What it computes comes from :mod:`disan.data` (files, uploads, where checkpoints and uploads go) and
:mod:`disan.training` (configuration, jobs, evaluation, where event files go); the names the page's widgets
offer (encoders, optimizers, the authors' recipe items, table formats) are read from there too, so that
the page imports nothing below :mod:`disan.app`. :class:`DataError` and :class:`Busy` are the page's to
catch: a file that cannot be used, a second job while one runs.
"""
from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path

import pandas as pd
import streamlit as st

from disan.app.traces import open_in_attention  # noqa: F401  (upload: for the page)
from disan.app.widgets import upload
from disan.data import files, uploads
from disan.data.files import DEFAULT_FRACTION, TABLES, DataError, guess_columns, kinds_for  # noqa: F401  (for the page)
from disan.data.kinds import kind_of
from disan.data.loaders import data_dir
from disan.data.paths import checkpoint_folders, checkpoints_dir, uploads_dir
from disan.data.registry import trainable
from disan.data.text import split_pair
from disan.data.uploads import table_files
from disan.nn.checkpoint import names
from disan.render.kinds import look_of
from disan.nn.baselines import ENCODERS  # noqa: F401  (for the page)
from disan.training.config import OPTIMIZERS, RECIPE_ITEMS, RECIPES, TrainConfig  # noqa: F401  (for the page)
from disan.training.board import logdir_root
from disan.training.evaluate import Evaluation, examples_table
from disan.training.jobs import PROBE, Busy, Job, Registry  # noqa: F401  (for the page)
from disan.training.train import state_path

TRAINABLE = trainable()  # the benchmarks with a training split here
UPLOADED = "uploads"  # how the file picker names the folder of the uploads kept


@st.cache_resource
def registry() -> Registry:
    # One registry per server: every session sees the same job, and only one runs at a time.
    return Registry()


def resumable(job: Job) -> bool:
    """Whether a job can go on from the end of its last finished epoch: it stopped or failed, and its
    run kept what ``--resume`` needs."""
    return job.status in ("stopped", "failed") and state_path(job.config).exists()


def forget_staged() -> None:
    """Remove the temporary copy of the upload before, if there is one."""
    seen = st.session_state.pop("train-upload-staged", None)
    if seen:
        uploads.discard(Path(seen[1]))


def staged(file) -> Path:
    """The uploaded file in a temporary folder of its own, written once per upload (a rerun does not write it
    again), where the page reads it until it can be trained on."""
    seen = st.session_state.get("train-upload-staged")
    if seen and seen[0] == file.file_id and Path(seen[1]).is_file():
        return Path(seen[1])
    forget_staged()
    path = uploads.stage_upload(file.name, file.getvalue())
    st.session_state["train-upload-staged"] = (file.file_id, str(path))
    return path


def kept_upload(file) -> Path | None:
    """Where the upload was kept on an earlier run, or None."""
    seen = st.session_state.get("train-upload-kept")
    return Path(seen[1]) if seen and seen[0] == file.file_id and Path(seen[1]).is_file() else None


def keep(file) -> Path:
    """The uploaded file, once it can be trained on, saved in the uploads folder (where the run and the file
    picker find it; hashed once per upload) and its temporary copy removed: an upload that is refused is
    never kept."""
    path = kept_upload(file)
    if path is None:
        path = uploads.save_upload(uploads_dir(), file.name, file.getvalue())
        st.session_state["train-upload-kept"] = (file.file_id, str(path))
        forget_staged()
    return path


def offered_files() -> tuple[dict[str, Path], str]:
    """The files one may pick to train on, by the name the picker shows: the uploads kept
    (``uploads/NAME``), then the table files at the top of the benchmark data folder when there is one;
    and where they are, as the page says it."""
    found = {f"{UPLOADED}/{name}": path for name, path in table_files(uploads_dir()).items()}
    where = f"{UPLOADED}/ is {uploads_dir()}"
    try:
        folder = data_dir()
    except FileNotFoundError:
        return found, where
    return found | table_files(folder), f"{where}; the others are in the data folder {folder}"


def message(error: DataError, path: Path, name: str) -> str:
    """A file's error as the page shows it: the file named as the page lists it, not by its place on the server."""
    return str(error).replace(str(path), name)


def asks_header(path: Path) -> bool:
    """Whether a file's format may or may not have a header row (JSON Lines name their columns)."""
    return files.FORMATS[path.suffix.lower()].header_row


def modified(path: Path) -> tuple[int, int]:
    """Cache key part that changes when a data file is rewritten: its size and modification time."""
    found = path.stat()
    return found.st_size, found.st_mtime_ns


# ``version`` (from :func:`modified`) is part of the cache keys: a rewritten file is read again.
@st.cache_data(max_entries=8, show_spinner="Reading the file…")
def _preview(path: str, version: tuple, header: bool):
    return files.preview(path, header)


@st.cache_data(max_entries=16, show_spinner="Reading the labels…")
def _label_summary(path: str, version: tuple, text: str, label: str, text_b: str | None, kind: str,
                   dev: float, test: float) -> files.Summary:
    return files.summarize(path, text, label, text_b, kind, dev, test)


def preview(path: Path, header: bool) -> pd.DataFrame:
    """The first rows of a file of one's own; DataError says what is wrong with it."""
    return _preview(str(path), modified(path), header)


def data_fields(path: Path, text: str, text_b: str | None, label: str, kind: str, dev: float,
                test: float) -> dict:
    """The :class:`TrainConfig` fields of a file of one's own: its columns, kind and split fractions."""
    return {"data": str(path), "text_column": text, "text_b_column": text_b, "label_column": label, "kind": kind,
            "dev_fraction": float(dev), "test_fraction": float(test)}


def label_summary(fields: dict) -> files.Summary:
    """The labels' balance and the split sizes of the file that :func:`data_fields` describes; DataError
    says what is wrong with it."""
    return _label_summary(fields["data"], modified(Path(fields["data"])), fields["text_column"],
                          fields["label_column"], fields["text_b_column"], fields["kind"],
                          fields["dev_fraction"], fields["test_fraction"])


def split_caption(counted: files.Summary) -> str:
    """How the file's rows are shared among the splits, as the page says it."""
    sizes = counted.splits
    strata = look_of(counted.kind).strata
    return (f"{counted.rows} rows: {sizes['train']} to train on, {sizes['dev']} dev and {sizes['test']} test, "
            f"drawn stratified by {strata}.")


def checkpoint_name(typed: str, encoder: str, task: str | None, own: dict | None) -> str:
    """The run's checkpoint name: the one typed, else the benchmark (or the file's name), the encoder and
    the time; ValueError for a name that would leave the checkpoints folder or hide in it, or that a listed
    checkpoint has (a shipped one is read-only, and a name finds one checkpoint)."""
    source = task or Path(own["data"]).stem
    name = typed.strip() or f"{source}-{encoder}-{time.strftime('%Y%m%d-%H%M%S')}"
    if any(c in name for c in "/\\") or name.startswith("."):
        raise ValueError("A checkpoint name cannot contain slashes or start with a dot.")
    taken = next((folder for folder in checkpoint_folders() if name in names(folder)), None)
    if taken is not None:
        raise ValueError(f"{taken / name} exists already: choose another checkpoint name.")
    return name


def saved_where() -> str:
    """Where the page's runs are saved, as the page says it: the checkpoints folder, each run's TensorBoard
    event files and its resume file."""
    return (f"Models are saved in {checkpoints_dir()}, under the checkpoint name (a stopped run's resume file "
            f"beside it); TensorBoard event files go to {logdir_root()}.")


def train_config(name: str, own: dict | None, items: Collection[int], *, task: str | None, encoder: str,
                 epochs: int, patience: int, lr: float, optimizer: str, dropout: float, d_h: int, vectors: str,
                 seed: int, cap: int) -> TrainConfig:
    """The run the form describes: a benchmark ``task``, or the fields of a file of one's own (``own``,
    from :func:`data_fields`), trained into the checkpoints folder under ``name``. ``vectors`` empty and
    ``cap`` 0 leave the word vectors and the training examples to TrainConfig's defaults. The chosen
    ``items`` of the authors' recipe win over the fields (dropout, patience). ValueError for fields
    TrainConfig refuses."""
    fields = dict(task=task, encoder=encoder, out=str(checkpoints_dir() / name), epochs=int(epochs),
                  patience=int(patience), lr=float(lr), optimizer=optimizer, dropout=float(dropout),
                  d_h=int(d_h), embeddings=vectors.strip() or None, seed=int(seed), max_train=int(cap) or None,
                  keep_state=False,  # the page resumes only stopped runs: a finished run's state would only take room
                  **(own or {}))
    fields.update({flag: RECIPES["authors"][flag] for item, _, flags in RECIPE_ITEMS if item in items
                   for flag in flags})
    cfg = TrainConfig(**fields)
    cfg.command = cfg.command_line()  # what the model card offers to reproduce the run
    return cfg


@st.cache_data(max_entries=16, show_spinner="Evaluating on the test split…")
def evaluation(path: str, mtime: float) -> Evaluation:
    """A checkpoint's figures and examples on its test split, once per checkpoint version."""
    return examples_table(path, "test")


def worst_first(table: pd.DataFrame) -> pd.DataFrame:
    """A relatedness evaluation's examples, the largest errors first."""
    return table.reindex(table["error"].abs().sort_values(ascending=False).index)


def misclassified(table: pd.DataFrame) -> pd.DataFrame:
    """A classification evaluation's wrong examples, numbered from 0."""
    return table[~table["correct"]].reset_index(drop=True)


def open_example(checkpoint: str, kind: str, text: str) -> None:
    """Open an example of an evaluation's table (a pair joined as one text) in the Attention page."""
    open_in_attention(checkpoint, kind, text, split_pair(text) if kind_of(kind).pairs else None)

