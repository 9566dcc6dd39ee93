"""The benchmarks, one entry each: what it is, where its files are, how it is split and loaded, its labels and
model kind, and DiSAN's figure in the paper.

A benchmark's name is how it is stored and typed (``"task": "sick"`` in a checkpoint's config, ``--task``);
everything else asks its entry (:data:`BENCHMARKS`), never compares the name. Adding a benchmark is adding
an entry: its loader may be one of those below (fixed splits of SST trees, TREC questions or SICK pairs,
k-fold cross-validation over two files of lines) or any function of the same signature. The file readers
are :mod:`disan.data.loaders`.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from disan.data.kinds import kind_of
from disan.data.loaders import (
    DEV_FRACTION,
    FOLDS,
    NLI_LABELS,
    OVERSAMPLE_COPIES,
    SPLITS,
    SST5_LABELS,
    TREC_LABELS,
    TaskData,
    cross_validation,
    data_dir,
    folder_checksums,
    hold_out,
    load_sst,
    read_sick,
    read_snli,
    read_trec,
    read_two_files,
    subset,
)

POLARITY = ["negative", "positive"]
SCORE_LEVELS = ["1", "2", "3", "4", "5"]  # SICK's relatedness scores run from 1 to 5


@dataclass(frozen=True)
class Options:
    """What a caller chooses of a benchmark's split: the cross-validation fold, the seed of the folds and of
    drawn dev sets, for SST whether to train on every labelled phrase and which nodes (``--sst-nodes``), and
    the splits wanted: a loader may leave the others empty where each is a file of its own (reading and
    parsing SST's train trees takes a second when only test is shown); a split carved out of another file
    (TREC's dev, the folds) reads that file whole, so what it holds never depends on what else is asked."""
    fold: int = 0
    seed: int = 0
    phrases: bool = True
    nodes: str = "unique"
    splits: tuple[str, ...] = SPLITS


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, as everything that loads, trains on, evaluates or shows it reads it."""
    name: str                 # the stored form: --task, checkpoints' configs
    description: str
    folder: str               # its folder in the data folder, as SHA256SUMS and disan.data.download name it
    files: tuple[str, ...]    # the files of that folder it reads, in the order its loader takes them
    kind: str                 # its model kind, a name of disan.data.kinds.KINDS (which says its metric)
    labels: tuple[str, ...]   # the class names in label order, or the score levels 1..K
    loader: Callable[[Benchmark, Path, Options], TaskData]
    folds: int | None = None  # k of its k-fold cross-validation (None: fixed train, dev and test files)
    trainable: bool = True    # whether it has a training split here (SNLI: dev and test only)
    ordered: bool = False     # whether its labels are ordered (a sentiment scale, score levels)
    paper: float | None = None  # DiSAN's test figure in the paper, in its kind's metric, as printed (accuracy in %)
    sst: bool = False         # SST's trees: phrases, --sst-nodes and --tokens leaves apply

    def paths(self, root: Path) -> list[Path]:
        """Its files in the data folder ``root``."""
        return [root / self.folder / name for name in self.files]

    def task(self, train: list, dev: list, test: list, protocol: str) -> TaskData:
        """The loaded splits as a :class:`~disan.data.loaders.TaskData` of this benchmark."""
        return TaskData(self.name, self.kind, list(self.labels), train, dev, test, protocol)


# ---------------------------------------------------------------- loaders

SST_UNITS = {"unique": "every labelled phrase of the train trees (deduplicated by text)",
             "every": "every node of the train trees, each time it occurs",
             "oversampled": f"every node of the train trees, each time it occurs, with {OVERSAMPLE_COPIES} "
                            f"more copies of every non-neutral node and every whole sentence"}


def sst_task(b: Benchmark, root: Path, o: Options, binary: bool) -> TaskData:
    """SST's train, dev and test trees; ``binary`` drops neutral and merges the polarities (SST-2)."""
    train, dev, test = load_sst(tuple(b.paths(root)), binary, o.phrases, o.nodes, o.splits)
    unit = SST_UNITS[o.nodes] if o.phrases else "train sentences"
    drop = "; neutral sentences and phrases removed" if binary else ""
    return b.task(train, dev, test, f"standard SST split: train on {unit}, dev and test on whole sentences{drop}.")


def trec_task(b: Benchmark, root: Path, o: Options) -> TaskData:
    """TREC's training and test questions; dev is a seeded share of the training questions."""
    train_path, test_path = b.paths(root)
    # the test file is read whatever is asked: the protocol counts its questions
    full = read_trec(train_path) if {"train", "dev"} & set(o.splits) else []
    kept, held = hold_out(len(full), DEV_FRACTION, np.random.default_rng(o.seed))
    test = read_trec(test_path)
    return b.task(subset(full, kept), subset(full, held), test,
                  f"test = {test_path.stem} ({len(test)} questions); dev = a random {DEV_FRACTION:.0%} of "
                  f"{train_path.stem} (seed {o.seed}), train = the other {1 - DEV_FRACTION:.0%}.")


def folds_task(b: Benchmark, root: Path, o: Options) -> TaskData:
    """Two files of lines, negative class then positive, split by k-fold cross-validation."""
    train, dev, test = cross_validation(read_two_files(*b.paths(root)), o.fold, o.seed, b.folds)
    return b.task(train, dev, test,
                  f"{b.folds}-fold cross-validation (folds fixed by seed {o.seed}): test = fold {o.fold}, "
                  f"dev = a random {DEV_FRACTION:.0%} of the other folds, train = the rest.")


def sick_task(b: Benchmark, root: Path, o: Options) -> TaskData:
    """SemEval-2014's SICK train, trial and test files: the relatedness score for a scored kind, else the
    entailment judgment."""
    paths = b.paths(root)
    train, dev, test = (read_sick(path, kind_of(b.kind).scored) if split in o.splits else []
                        for split, path in zip(SPLITS, paths))
    return b.task(train, dev, test, f"SemEval-2014 Task 1 split: train = {paths[0].stem}, dev = {paths[1].stem}, "
                                    f"test = {paths[2].stem}.")


def snli_task(b: Benchmark, root: Path, o: Options) -> TaskData:
    """SNLI's dev and test pairs in SentEval's format; there is no training split here."""
    dev, test = (read_snli(root / b.folder, split) if split in o.splits else [] for split in ("dev", "test"))
    return b.task([], dev, test,
                  "SNLI 1.0 dev and test in SentEval format; no train split is available here, "
                  "so train is empty and a model must be trained elsewhere.")


# ---------------------------------------------------------------- the benchmarks

SST_FILES = ("train.txt", "dev.txt", "test.txt")
SICK_FILES = ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt")

BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("sst5", "Stanford Sentiment Treebank, 5 classes (very negative .. very positive)", "SST", SST_FILES,
              "classify", tuple(SST5_LABELS), functools.partial(sst_task, binary=False), ordered=True, paper=51.72,
              sst=True),
    Benchmark("sst2", "Stanford Sentiment Treebank, binary (neutral removed)", "SST", SST_FILES,
              "classify", tuple(POLARITY), functools.partial(sst_task, binary=True), ordered=True, sst=True),
    Benchmark("trec", "TREC question classification, 6 coarse classes", "TREC", ("train_5500.label", "TREC_10.label"),
              "classify", tuple(TREC_LABELS), trec_task, paper=94.2),
    Benchmark("subj", "Subjectivity: subjective review snippets vs objective plot sentences", "SUBJ",
              ("subj.objective", "subj.subjective"), "classify", ("objective", "subjective"), folds_task,
              folds=FOLDS, paper=94.2),
    Benchmark("mpqa", "MPQA opinion polarity of short phrases", "MPQA", ("mpqa.neg", "mpqa.pos"),
              "classify", tuple(POLARITY), folds_task, folds=FOLDS, paper=90.1),
    Benchmark("cr", "Customer product review sentences, positive / negative", "CR", ("custrev.neg", "custrev.pos"),
              "classify", tuple(POLARITY), folds_task, folds=FOLDS, paper=84.8),
    Benchmark("mr", "Movie review snippets (rt-polarity), positive / negative", "MR",
              ("rt-polarity.neg", "rt-polarity.pos"), "classify", tuple(POLARITY), folds_task, folds=FOLDS),
    Benchmark("sick", "SICK sentence-pair relatedness, a score in [1, 5]", "SICK", SICK_FILES,
              "relatedness", tuple(SCORE_LEVELS), sick_task, ordered=True, paper=0.8695),
    Benchmark("sick-e", "SICK sentence-pair entailment, 3 classes", "SICK", SICK_FILES,
              "pair", tuple(NLI_LABELS), sick_task),
    Benchmark("snli", "SNLI 1.0 natural language inference, 3 classes (dev and test only)", "SNLI",
              tuple(f"{part}.{split}" for split in ("dev", "test") for part in ("s1", "s2", "labels")),
              "pair", tuple(NLI_LABELS), snli_task, trainable=False, paper=85.62),
)}


def benchmark(name: str) -> Benchmark:
    """The entry of a benchmark's name; ValueError naming the benchmarks for an unknown one."""
    if name not in BENCHMARKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def trainable() -> list[str]:
    """The names of the benchmarks that have a training split here, in the registry's order."""
    return [name for name, b in BENCHMARKS.items() if b.trainable]


# load_task takes a parameter named data_dir, which hides the function.
_locate = data_dir


def load_task(name: str, data_dir: str | os.PathLike | None = None, fold: int = 0, seed: int = 0,
              phrases: bool = True, nodes: str = "unique", splits: Sequence[str] = SPLITS) -> TaskData:
    """Load one benchmark's train / dev / test examples, as its entry's loader does.

    ``fold`` and ``seed`` select the cross-validation split of the k-fold benchmarks (``seed`` also draws
    trec's dev set); ``phrases`` trains SST on every labelled phrase, as the original DiSAN code did,
    rather than on whole sentences only; ``nodes`` says how ("unique", "every" or "oversampled", see
    :data:`disan.data.choices.SST_NODES`). ``splits``: the splits the caller reads; each of them is what
    loading every split gives, and the others may come back empty (see :class:`Options`).
    """
    b = benchmark(name)
    unknown = [s for s in splits if s not in SPLITS]
    if unknown:
        raise ValueError(f"unknown split {unknown[0]!r}; choose among {', '.join(SPLITS)}")
    return b.loader(b, _locate(data_dir), Options(fold, seed, phrases, nodes, tuple(splits)))



def task_checksums(task: str, root: Path) -> dict[str, str]:
    """SHA-256 of the benchmark's data files (those in its folder), from the data folder's SHA256SUMS; {} for
    a name that is not a benchmark's, or without SHA256SUMS."""
    return folder_checksums(BENCHMARKS[task].folder, root) if task in BENCHMARKS else {}
