"""Tokenisation and the word vocabulary.

Training data and the app's free text go through the same :func:`tokenize`, so a
sentence typed by a user is split exactly as the training sentences were. Tokens
keep their spelling (for display); :func:`normalize` maps them to vocabulary keys.
:func:`check_text` adds the limits of what the model can trace (:func:`check_characters`: the characters no
sentence holds), and :func:`join_pair` /
:func:`split_pair` write a sentence pair as one line of text and read it back.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Iterable

PAD, UNK = "<pad>", "<unk>"
PAD_ID, UNK_ID = 0, 1

# Tracing keeps (n, n, d_h) probabilities per direction, so memory grows as n^2 d_h:
# 200 tokens x 300 features is 48 MB per direction in float32.
MAX_TOKENS = 200
# Checked before tokenising, so that a pasted book is refused without any work.
MAX_CHARS = 20_000

# Joins a (premise, hypothesis) pair into the one text column of an evaluation table.
PAIR_SEPARATOR = " ||| "


@lru_cache(maxsize=1)
def _tokenizer():
    """spaCy's rule-based English tokenizer; loaded on first use (importing spaCy takes seconds)."""
    import spacy

    return spacy.blank("en").tokenizer


def tokenizer_version() -> str:
    """What :func:`tokenize` gives besides this package's code depends on: spaCy's version, read from its
    installed metadata without importing it. Tokens kept on disk are keyed by it."""
    return f"spacy {importlib.metadata.version('spacy')}"


ZWJ = "\u200d"  # ZERO WIDTH JOINER: joins emoji into one (👨‍👩‍👧 is 👨 ZWJ 👩 ZWJ 👧)


def _invisible(char: str) -> bool:
    """A character that shows nothing by itself: a format character (ZWJ, zero-width space, tags) or a
    combining mark (variation selectors)."""
    return unicodedata.category(char) in ("Cf", "Mn", "Me")


def _modifies(char: str) -> bool:
    """A character that belongs to the one before it: an invisible one, or an emoji skin-tone modifier."""
    return _invisible(char) or "\U0001F3FB" <= char <= "\U0001F3FF"


def tokenize(text: str) -> list[str]:
    """Split text into tokens in their original spelling; whitespace is dropped.

    spaCy splits emoji sequences at their joiners and modifiers ("👨", "\u200d", "👩", ...); here a
    sequence stays one token, and a token of invisible characters alone (a stray joiner or zero-width
    space) is dropped, so that no token shows as a blank.
    """
    tokens: list[str] = []
    attached = False  # the previous token has no whitespace after it
    for t in _tokenizer()(text):
        if t.is_space:
            attached = False
            continue
        if tokens and attached and (_modifies(t.text[0]) or tokens[-1].endswith(ZWJ)):
            tokens[-1] += t.text
        else:
            tokens.append(t.text)
        attached = not t.whitespace_
    return [t for t in tokens if not all(_invisible(c) for c in t)]


def leaves(text: str) -> list[str]:
    """Split a text at ASCII spaces only: the leaves of an SST tree, which the loader joins with spaces
    (a leaf may hold a no-break space, and "sci-fi" or "'ve" stay one token, as in the authors' code)."""
    return [t for t in text.split(" ") if t]


# How training text is split into tokens (``--tokens``): spaCy, as the app splits typed text, or SST's own leaves.
TOKENIZERS = {"spacy": tokenize, "leaves": leaves}


# What no sentence holds, one rule for every way text comes in (typed, a link, a file's cell, a command's input):
# control characters (C0, DEL and C1), which show as nothing or as a box and come from a binary file or a stray
# key, except the tab and line breaks of pasted text; and surrogates, which in a Python string are always half
# of a UTF-16 pair (a pair is one character), from a notebook or a file read with surrogateescape.
REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def character_name(char: str) -> str:
    """A character as Unicode writes it, with its name where :mod:`unicodedata` has one: "U+0000",
    "U+00AD (SOFT HYPHEN)"."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


def check_characters(text: str) -> None:
    """ValueError, one line naming the character and its place (counted from 1), for the first character of
    ``text`` that :data:`REFUSED` matches: a control character other than tab and line breaks (CR, LF), or
    half of a UTF-16 pair."""
    found = REFUSED.search(text)
    if found is None:
        return
    char, at = found.group(), found.start() + 1
    if unicodedata.category(char) == "Cs":
        raise ValueError(f"the text holds an unpaired surrogate ({character_name(char)}) at character {at}, "
                         "half of a character that UTF-8 cannot write: remove it")
    raise ValueError(f"the text holds the control character {character_name(char)} at character {at}, "
                     "which no sentence has: remove it")


def check_text(text) -> list[str]:
    """Tokens of a text, or ValueError saying why the text cannot be encoded and traced."""
    if not isinstance(text, str):
        raise ValueError(f"expected text (a string), got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise ValueError(f"the text has {len(text):,} characters; the limit is {MAX_CHARS:,}")
    check_characters(text)
    tokens = tokenize(text)
    if not tokens:
        raise ValueError("the text is empty: type at least one word")
    if len(tokens) > MAX_TOKENS:
        raise ValueError(f"the text has {len(tokens)} tokens; the limit is {MAX_TOKENS} "
                         f"(attention memory grows with the square of the length)")
    return tokens


def join_pair(premise: str, hypothesis: str) -> str:
    """A sentence pair as one line of text; :func:`split_pair` takes it apart again.

    The split is at the first separator, so the hypothesis may contain it but the premise
    may not (no SICK or SNLI sentence does).
    """
    return premise + PAIR_SEPARATOR + hypothesis


def split_pair(text: str) -> tuple[str, str]:
    """(premise, hypothesis) of a line made by :func:`join_pair`; ValueError if it holds no pair."""
    premise, sep, hypothesis = text.partition(PAIR_SEPARATOR)
    if not sep:
        raise ValueError(f"not a sentence pair: no {PAIR_SEPARATOR.strip()!r} separator in {text[:60]!r}")
    return premise, hypothesis


def normalize(token: str) -> str:
    """Vocabulary key of a token: lowercase, as the GloVe 6B vocabulary is."""
    return token.lower()


class Vocab:
    """Normalised token <-> id, with id 0 = padding and id 1 = unknown."""

    def __init__(self, itos: list[str]):
        if itos[:2] != [PAD, UNK]:
            raise ValueError(f"a vocabulary starts with {PAD!r}, {UNK!r}, not {itos[:2]}")
        if len(set(itos)) != len(itos):
            raise ValueError("vocabulary entries must be unique")
        self.itos = list(itos)
        self.stoi = {word: i for i, word in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists: Iterable[Iterable[str]], min_count: int = 1,
              extra: Iterable[str] | None = None) -> Vocab:
        """Words seen at least ``min_count`` times, most frequent first (ties alphabetical),
        then the ``extra`` words not already in (e.g. pre-trained words of the dev/test text)."""
        counts = Counter(normalize(t) for tokens in token_lists for t in tokens)
        for special in (PAD, UNK):
            counts.pop(special, None)
        frequent = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        return cls([PAD, UNK] + frequent).extended(extra or ())

    def extended(self, words: Iterable[str]) -> Vocab:
        """This vocabulary followed by the ``words`` it lacks, in their order (ids of its own words unchanged)."""
        itos = list(self.itos)
        known = set(itos)
        for word in map(normalize, words):
            if word not in known:
                known.add(word)
                itos.append(word)
        return Vocab(itos)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Token ids; a word the vocabulary lacks gets UNK_ID."""
        return [self.stoi.get(normalize(t), UNK_ID) for t in tokens]

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return normalize(token) in self.stoi

    def to_json(self) -> dict:
        """The vocabulary as a JSON object (``{"itos": [...]}``), as checkpoints store it."""
        return {"itos": list(self.itos)}

    @classmethod
    def from_json(cls, obj: dict) -> Vocab:
        """The inverse of :meth:`to_json`; ValueError for anything else."""
        if not isinstance(obj, dict) or not isinstance(obj.get("itos"), list):
            raise ValueError("expected a JSON object with an 'itos' list")
        return cls(obj["itos"])

    def save(self, path: str | os.PathLike) -> None:
        """Write :meth:`to_json` to a UTF-8 file."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocab:
        """Read a file written by :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(json.load(f))
