"""The Stanford Sentiment Treebank's human labels of the tokens a model reads.

SST labels every word and every phrase of its sentences with a sentiment from 0 (very negative) to 4 (very
positive), 2 being neutral; the same text has the same label wherever it occurs in the treebank (a phrase
was labelled once, whatever sentence it came from). The loader keeps a sentence's text, its leaves joined by
spaces (:meth:`~disan.data.loaders.Tree.text`, PTB escapes undone); the models read that text through
:func:`disan.data.text.check_text`, whose tokens may be parts of a leaf ("too-tepid" is "too", "-", "tepid";
"10-year-olds" is five tokens). A token is placed in the text by its characters and takes the label of the
innermost node of the tree that holds every leaf it touches: its own leaf's label when it lies within one
leaf, which is always so for these tokens, since spaCy never joins across a space; a token of a tokeniser
that did join leaves would take the label of the smallest phrase holding them.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from disan.data import loaders
from disan.data.choices import SPLITS
from disan.data.loaders import NEUTRAL, Tree, read_trees
from disan.data.registry import BENCHMARKS, benchmark
from disan.data.text import check_text


def token_spans(text: str, tokens: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each token in ``text``, in characters, the tokens found in order (a tokeniser that
    keeps the spelling, as :func:`disan.data.text.tokenize` does); ValueError for a token not found."""
    spans, at = [], 0
    for token in tokens:
        start = text.find(token, at)
        if not token or start < 0:
            raise ValueError(f"token {token!r} is not in the text after character {at}: {text[:60]!r}")
        at = start + len(token)
        spans.append((start, at))
    return spans


def token_labels(tree: Tree, tokens: Sequence[str]) -> np.ndarray:
    """(n,) the human label 0..4 of each token of the tree's text (see the module's docstring)."""
    offsets = np.array(tree.offsets()).reshape(-1, 2)
    labels = []
    for start, end in token_spans(tree.text(), tokens):
        first = int(np.searchsorted(offsets[:, 1], start, side="right"))  # the first word ending after the start
        last = int(np.searchsorted(offsets[:, 0], end, side="left"))     # past the last word starting before the end
        labels.append(tree.label_of(first, last))
    return np.array(labels, dtype=np.int64)


def marked(labels) -> np.ndarray:
    """(n,) whether humans marked each token: its label is not neutral."""
    return np.asarray(labels) != NEUTRAL


def split_trees(task: str, split: str = "test", data_dir: str | os.PathLike | None = None) -> dict[str, Tree]:
    """A split of an SST benchmark's trees by their text (the first of equal texts: they have the same labels).
    Every tree of the file, those a binary benchmark drops (neutral sentences) too."""
    entry = benchmark(task)
    if not entry.sst:
        raise ValueError(f"{task} is not the Stanford Sentiment Treebank")
    trees: dict[str, Tree] = {}
    for tree in read_trees(entry.paths(loaders.data_dir(data_dir))[SPLITS.index(split)]):
        trees.setdefault(tree.text(), tree)
    return trees


@dataclass(frozen=True)
class HumanLabels:
    """The human labels of a model's inputs, or why there are none."""
    labels: list[np.ndarray] | None  # per input, (n,) 0..4 per token of check_text(input); None: no labels
    reason: str = ""                 # why ``labels`` is None


def unlabelled(config: dict) -> str:
    """Why the data a checkpoint was trained on (its config) has no human word labels, without reading it: a
    file of its own, or a benchmark that is not SST; "" for an SST benchmark (sst5, sst2)."""
    if "data" in config:
        return "the model was trained on a file of its own, which has no human word labels"
    task = config["task"]
    if task not in BENCHMARKS or not BENCHMARKS[task].sst:
        return f"{task} is not the Stanford Sentiment Treebank: it has no human word labels"
    return ""


def trained_labels(config: dict, items: Sequence, split: str = "test",
                   data_dir: str | os.PathLike | None = None) -> HumanLabels:
    """The human labels of ``items``, inputs of a split of the data a checkpoint was trained on (its config,
    ``config.json``), in their order: what :func:`disan.analyses.corpus.trained_items` drew, say. A label is
    a function of the text alone (see the module's docstring), so inputs are found in the split by their
    text, whatever sample they are. None with the reason (:func:`unlabelled`) for a model of a file of its own
    or of a benchmark that is not SST; ValueError for an input that is not a sentence of the split."""
    reason = unlabelled(config)
    if reason:
        return HumanLabels(None, reason)
    task = config["task"]
    trees = split_trees(task, split, data_dir or (config.get("train_config") or {}).get("data_dir"))
    labels = []
    for item in items:
        if item not in trees:
            raise ValueError(f"not a sentence of {task} {split}: {str(item)[:60]!r}")
        labels.append(token_labels(trees[item], check_text(item)))
    return HumanLabels(labels)
