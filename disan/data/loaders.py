"""Readers of the benchmark files described in ``shared/data/README.md``, and the splits built from them;
which benchmarks there are, and how each is assembled from these, is :mod:`disan.data.registry`.

Every reader returns raw text, as a user would type it, so that training and the
app share one tokeniser (:mod:`disan.data.text`). The files come in several encodings:
UTF-8 (SST), Windows-1252 (MR, SUBJ), one stray 0xF0 byte (TREC), CRLF line endings
(two SICK files) and a BOM (the SICK readme); :func:`read_lines` handles all of them.
"""
from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from disan.data.checksums import CHECKSUM_FILE, parse_checksums, sha256_file
from disan.data.choices import SPLITS, SST_NODES
from disan.data.paths import DATA_ENV, DEFAULT_DATA_DIR

FOLDS = 10
DEV_FRACTION = 0.1

NLI_LABELS = ["entailment", "neutral", "contradiction"]  # SICK's judgments and SNLI's labels, in label order
SST5_LABELS = ["very negative", "negative", "neutral", "positive", "very positive"]  # SST's node labels 0..4
TREC_LABELS = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]  # TREC's coarse classes


@dataclass
class Example:
    """One labelled example of a benchmark."""
    text: str | tuple[str, str]  # a sentence, or (premise, hypothesis)
    label: int | float           # a class index, or a relatedness score


@dataclass
class TaskData:
    """A benchmark's splits, label names and evaluation protocol, as :func:`disan.data.registry.load_task`
    returns them."""
    name: str
    kind: str                    # a name of disan.data.kinds.KINDS
    labels: list[str]
    train: list[Example]
    dev: list[Example]
    test: list[Example]
    protocol: str


# ---------------------------------------------------------------- locating files

def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The benchmark folder: ``path``, else $DISAN_DATA_DIR, else ``../shared/data``
    next to the repository or the current directory."""
    hint = f"set {DATA_ENV} to the folder holding SST/, TREC/, ... or run `python -m disan download`"
    origin = "data folder"
    if path is None and os.environ.get(DATA_ENV):
        path, origin = os.environ[DATA_ENV], f"${DATA_ENV}"
    if path is not None:
        chosen = Path(path).expanduser()
        if chosen.is_dir():
            return chosen
        raise FileNotFoundError(f"{origin} {chosen} does not exist; {hint}")
    candidates = [DEFAULT_DATA_DIR, Path.cwd().parent / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no data folder found (looked in {', '.join(map(str, candidates))}); {hint}")


# verify_checksums takes a parameter named data_dir, which hides the function.
_locate = data_dir


# ---------------------------------------------------------------- decoding

def _cp1252_table() -> dict[int, str]:
    """Latin-1 code points 0x80-0x9F -> the Windows-1252 characters at those bytes.

    Bytes that cp1252 leaves undefined (0x81, 0x8D, ...) are not in the table, so
    they keep their Latin-1 control character rather than being dropped.
    """
    table = {}
    for byte in range(0x80, 0xA0):
        try:
            table[byte] = bytes([byte]).decode("cp1252")
        except UnicodeDecodeError:
            continue
    return table


_CP1252 = _cp1252_table()


def decode_line(raw: bytes) -> str:
    """UTF-8 where the line is valid UTF-8, else Windows-1252 (Latin-1 for bytes it lacks).

    Deciding per line keeps UTF-8 lines intact in a file that also holds a few
    Windows-1252 lines; a Windows-1252 line with non-ASCII bytes is almost never valid UTF-8.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1").translate(_CP1252)


def read_lines(path: Path) -> list[str]:
    """Every line of a file without its LF / CRLF terminator or BOM; blank lines are kept."""
    raw = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    lines = raw.split(b"\n")
    if lines[-1] == b"":  # the terminator of the last line, not a line
        lines.pop()
    return [decode_line(line.removesuffix(b"\r")) for line in lines]


def verify_checksums(data_dir: str | os.PathLike | None = None) -> dict[str, bool]:
    """{relative path: whether the file exists and matches SHA256SUMS} for every listed file."""
    root = _locate(data_dir)
    expected = parse_checksums((root / CHECKSUM_FILE).read_text(encoding="utf-8"))
    return {name: (root / name).is_file() and sha256_file(root / name) == digest
            for name, digest in expected.items()}


def folder_checksums(folder: str, root: Path) -> dict[str, str]:
    """SHA-256 of the data files in ``folder`` of the data folder, from its SHA256SUMS; {} without one."""
    sums = root / CHECKSUM_FILE
    if not sums.exists():
        return {}
    table = parse_checksums(sums.read_text(encoding="utf-8"))
    return {name: digest for name, digest in table.items() if name.startswith(folder + "/")}


# ---------------------------------------------------------------- SST trees

_TREE_TOKEN = re.compile(r"\(|\)|[^ ()]+")  # only ASCII spaces separate: leaves may hold U+00A0
_PTB_LEAVES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
               "``": '"', "''": '"'}


def unescape_ptb(word: str) -> str:
    """Undo the Penn Treebank escapes of one leaf: -LRB- -> (, `` -> ", 1\\/2 -> 1/2, \\* -> *."""
    return _PTB_LEAVES.get(word) or word.replace("\\/", "/").replace("\\*", "*")


@dataclass
class Tree:
    """A parsed SST tree: its words and one labelled span per node."""
    words: list[str]
    spans: list[tuple[int, int, int]]  # (label, start, end) per node, pre-order (root first)

    def text(self, start: int = 0, end: int | None = None) -> str:
        """The words of the span [start, end) joined by spaces."""
        return " ".join(self.words[start:end])

    def offsets(self) -> list[tuple[int, int]]:
        """(start, end) of each word in :meth:`text`, in characters."""
        out, start = [], 0
        for word in self.words:
            out.append((start, start + len(word)))
            start += len(word) + 1  # the joining space
        return out

    def label_of(self, start: int, end: int) -> int:
        """The label of the innermost node whose span holds the words [start, end): a word's own leaf for one
        word, else the smallest phrase that holds them all."""
        holding = [(e - s, -node) for node, (_, s, e) in enumerate(self.spans) if s <= start and end <= e]
        if start >= end or not holding:
            raise ValueError(f"no node of the tree holds the words [{start}, {end})")
        return self.spans[-min(holding)[1]][0]  # the narrowest; of equal ones (a unary chain) the inner, later in pre-order


def parse_tree(line: str) -> Tree:
    """Parse one binarised PTB line such as ``(3 (2 The) (4 (3 good) (2 film)))``."""
    tokens = _TREE_TOKEN.findall(line)
    words: list[str] = []
    spans: list[list[int]] = []
    open_nodes: list[int] = []  # indices into spans of the nodes not yet closed
    pos = 0
    while pos < len(tokens):
        token = tokens[pos]
        if token == "(":
            if pos + 1 >= len(tokens) or not tokens[pos + 1].isdigit():
                raise ValueError(f"expected a label after '(' at token {pos}")
            open_nodes.append(len(spans))
            spans.append([int(tokens[pos + 1]), len(words), -1])
            pos += 2
            if pos < len(tokens) and tokens[pos] not in ("(", ")"):
                words.append(unescape_ptb(tokens[pos]))
                pos += 1
                if pos >= len(tokens) or tokens[pos] != ")":
                    raise ValueError(f"a leaf must close right after its word, at token {pos}")
        elif token == ")":
            if not open_nodes:
                raise ValueError(f"unbalanced ')' at token {pos}")
            spans[open_nodes.pop()][2] = len(words)
            pos += 1
        else:
            raise ValueError(f"unexpected word {token!r} at token {pos}")
    if open_nodes or not spans or spans[0][2] != len(words) or any(s[1] == s[2] for s in spans):
        raise ValueError("not a single well-formed tree")
    return Tree(words, [tuple(s) for s in spans])


def read_trees(path: Path) -> list[Tree]:
    """An SST file, one tree per line, every node labelled 0..4."""
    trees = []
    for number, line in enumerate(read_lines(path), start=1):
        try:
            tree = parse_tree(line)
            if any(not 0 <= label < len(SST5_LABELS) for label, _, _ in tree.spans):
                raise ValueError("a sentiment label is outside 0..4")
        except ValueError as err:
            raise ValueError(f"{path}:{number}: {err}") from None
        trees.append(tree)
    return trees


def _sst_label(label: int, binary: bool) -> int | None:
    """sst5 keeps 0..4; sst2 drops neutral (2) and maps 0, 1 -> 0 and 3, 4 -> 1."""
    if not binary:
        return label
    return None if label == 2 else int(label > 2)


def _sst_sentences(trees: list[Tree], binary: bool) -> list[Example]:
    examples = [Example(t.text(), _sst_label(t.spans[0][0], binary)) for t in trees]
    return [e for e in examples if e.label is not None]


# How the phrase nodes of SST's training trees become examples (``--sst-nodes``: SST_NODES).
NEUTRAL = 2             # SST-5's neutral label
OVERSAMPLE_COPIES = 3   # extra copies of every non-neutral node and every whole sentence ("oversampled")


def _sst_phrases(trees: list[Tree], binary: bool, nodes: str = "unique") -> list[Example]:
    """Every node of every tree as an example.

    ``nodes``: "unique" keeps the first occurrence of each text; "every" keeps each node each time it
    occurs, as the authors' code does; "oversampled" adds to that :data:`OVERSAMPLE_COPIES` more copies
    of every node that is not neutral and of every whole sentence (their ``data_imbalance``), which
    brings neutral from about half of the examples to about a third.
    """
    if nodes not in SST_NODES:
        raise ValueError(f"unknown SST node selection {nodes!r}; choose one of {', '.join(SST_NODES)}")
    seen: set[str] = set()
    examples = []
    for tree in trees:
        for node, (label, start, end) in enumerate(tree.spans):
            text = tree.text(start, end)
            if nodes == "unique" and text in seen:
                continue
            seen.add(text)
            copies = 1 + OVERSAMPLE_COPIES * (nodes == "oversampled" and (label != NEUTRAL or node == 0))
            examples += [Example(text, _sst_label(label, binary))] * copies
    return [e for e in examples if e.label is not None]


def load_sst(paths: tuple[Path, Path, Path], binary: bool, phrases: bool,
             nodes: str = "unique", splits=SPLITS) -> tuple[list[Example], ...]:
    """(train, dev, test) examples of SST's train, dev and test tree files: the training examples are every
    phrase (``_sst_phrases``) or the whole sentences; dev and test are whole sentences. Only the files of
    ``splits`` are read (each split is a file of its own); the others come back empty."""
    train, dev, test = (read_trees(path) if split in splits else [] for split, path in zip(SPLITS, paths))
    train_examples = _sst_phrases(train, binary, nodes) if phrases else _sst_sentences(train, binary)
    return train_examples, _sst_sentences(dev, binary), _sst_sentences(test, binary)


# ---------------------------------------------------------------- splits

def subset(examples: list[Example], indices) -> list[Example]:
    """The examples at ``indices``, in their order in the file."""
    return [examples[i] for i in sorted(indices)]


def hold_out(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random ``fraction`` of range(n), and the rest: (kept, held) index arrays."""
    order = rng.permutation(n)
    cut = round(n * fraction)
    return order[cut:], order[:cut]


def cv_folds(n: int, seed: int, folds: int = FOLDS) -> list[np.ndarray]:
    """``folds`` contiguous slices of a seeded permutation of range(n): a fixed partition per seed."""
    order = np.random.default_rng(seed).permutation(n)
    return [order[k * n // folds:(k + 1) * n // folds] for k in range(folds)]


def cross_validation(examples: list[Example], fold: int, seed: int,
                     folds: int = FOLDS) -> tuple[list[Example], ...]:
    """(train, dev, test): test = fold ``fold`` of ``folds``; dev = a seeded 10% of the other folds; train = the rest."""
    if not 0 <= fold < folds:
        raise ValueError(f"fold must be in 0..{folds - 1}, not {fold}")
    parts = cv_folds(len(examples), seed, folds)
    others = np.concatenate([p for k, p in enumerate(parts) if k != fold])
    kept, held = hold_out(len(others), DEV_FRACTION, np.random.default_rng([seed, fold]))
    return subset(examples, others[kept]), subset(examples, others[held]), subset(examples, parts[fold])


# ---------------------------------------------------------------- other formats

def read_two_files(negative: Path, positive: Path) -> list[Example]:
    """Negative-class lines (label 0) then positive-class lines (label 1), each line one example (blank ones too)."""
    return [Example(line.strip(), label) for label, path in enumerate((negative, positive)) for line in read_lines(path)]


def read_trec(path: Path) -> list[Example]:
    """``COARSE:fine question words`` lines -> coarse-class examples."""
    examples = []
    for number, line in enumerate(read_lines(path), start=1):
        tag, _, text = line.partition(" ")
        coarse = tag.partition(":")[0]
        if coarse not in TREC_LABELS or not text.strip():
            raise ValueError(f"{path}:{number}: expected 'COARSE:fine question', got {line!r}")
        examples.append(Example(text.strip(), TREC_LABELS.index(coarse)))
    return examples


def read_sick(path: Path, relatedness: bool) -> list[Example]:
    """A SemEval-2014 SICK file (tab-separated, with a header) -> pair examples."""
    header, *rows = read_lines(path)
    columns = header.split("\t")
    needed = ["sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"]
    if any(c not in columns for c in needed):
        raise ValueError(f"{path}: header {columns} lacks one of {needed}")
    a, b, score, judgment = (columns.index(c) for c in needed)
    examples = []
    for number, row in enumerate(rows, start=2):
        fields = row.split("\t")
        if len(fields) != len(columns):
            raise ValueError(f"{path}:{number}: expected {len(columns)} tab-separated fields")
        label = float(fields[score]) if relatedness else NLI_LABELS.index(fields[judgment].lower())
        examples.append(Example((fields[a], fields[b]), label))
    return examples


def read_snli(folder: Path, split: str) -> list[Example]:
    """SentEval's s1.<split>, s2.<split> and labels.<split> in ``folder``: line i of each is one pair."""
    s1, s2, labels = (read_lines(folder / f"{part}.{split}") for part in ("s1", "s2", "labels"))
    if not len(s1) == len(s2) == len(labels):
        raise ValueError(f"SNLI {split}: {len(s1)}, {len(s2)} and {len(labels)} lines differ")
    unknown = set(labels) - set(NLI_LABELS)
    if unknown:
        raise ValueError(f"SNLI {split}: unknown labels {sorted(unknown)}")
    return [Example((p.strip(), h.strip()), NLI_LABELS.index(y)) for p, h, y in zip(s1, s2, labels)]
