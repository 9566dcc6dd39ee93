"""How each model kind is shown: the words the pages, figures and analyses use for its input and its
output, one entry per kind of :data:`disan.data.kinds.KINDS` (tests/test_registries.py checks that every
kind has one). What a kind computes (one sentence or two, classes or a score) is its entry there; this
table says only how that reads on screen.
"""
from __future__ import annotations

from dataclasses import dataclass

from disan.data.kinds import kind_of


@dataclass(frozen=True)
class Look:
    """What the pages call a kind's input and output."""
    sentences: tuple[str, ...]  # the input's sentences, in order, as labels name them
    outcome: str                # what the prediction above a page is called
    outcome_help: str | None    # and its tooltip
    followed: str               # the output that occlusion and attribution follow, in words
    strata: str                 # what the splits drawn from a file of one's own keep in proportion


CLASS_LOOK = dict(outcome="prediction", outcome_help=None, followed="probability of the predicted class",
                  strata="label")
LOOKS: dict[str, Look] = {
    "classify": Look(("sentence",), **CLASS_LOOK),
    "pair": Look(("premise", "hypothesis"), **CLASS_LOOK),
    "relatedness": Look(("premise", "hypothesis"), "relatedness", "expected score on the 1–5 scale",
                        "relatedness score", "rounded score"),
}


def look_of(kind: str) -> Look:
    """How a kind (a name of :data:`disan.data.kinds.KINDS`; ValueError for another) is shown."""
    return LOOKS[kind_of(kind).name]
