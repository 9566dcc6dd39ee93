"""Two checkpoints on one sentence: DiSAN against DiSAN without directions, against an encoder without
token2token attention, two tasks, or two snapshots of one training run.

Both predictions; each model's attention, gates and source2token on one shared scale; their difference
where both have the same view (DiSA blocks of one name have the same mask); and what an encoder lacks.
Both checkpoints tokenise with the same tokenizer, so their traces of one text share the token axis.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from disan.explore import figures, markup, views
from disan.explore.tables import file_name
from disan.explore.views import Drawing, Row
from disan.inspect import measures
from disan.inspect.pipeline import Prediction, SentenceTrace


@dataclass
class Side:
    """One checkpoint's part of the comparison."""
    name: str                  # the checkpoint's name, as the picker shows it
    encoder: str               # its encoder, e.g. disan, disan-nodir, bilstm
    prediction: Prediction
    sentence: SentenceTrace    # the compared sentence (for a pair: the premise or the hypothesis)


def lacks(side: Side) -> list[str]:
    """What the encoder lacks of DiSAN's parts, in words (empty for DiSAN itself)."""
    tr = side.sentence.trace
    missing = []
    if not tr.blocks:
        missing += ["token2token attention (no DiSA block)", "fusion gates"]
    elif not {"forward", "backward"} <= {b.direction for b in tr.blocks}:
        missing.append("directional masks: every block attends to all the other tokens")
    if tr.source2token is None:
        missing.append("source2token attention")
    return missing


def statement(side: Side) -> str:
    """One sentence on what the checkpoint's encoder lacks, or that it has every part DiSAN has."""
    missing = lacks(side)
    if not missing:
        return f"{side.name} ({side.encoder}) has every part of DiSAN: directional token2token attention, " \
               f"fusion gates and source2token attention."
    return f"{side.name} ({side.encoder}) has no " + "; no ".join(missing) + "."


def mean_attention(block) -> np.ndarray:
    """(n, n) mean attention over features, NaN where the block's mask forbids the edge."""
    return np.where(np.asarray(block.mask), np.asarray(block.probs, dtype=float).mean(axis=-1), np.nan)


def drawing(a: Side, b: Side) -> Drawing:
    """The comparison's rows: predictions; attention of each model on one colour scale; the differences of
    the blocks both have; mean gates; source2token importance and its difference."""
    if a.sentence.tokens != b.sentence.tokens:
        raise ValueError("the two traces are of different token sequences")
    tokens = a.sentence.tokens
    sides = (a, b)
    labels = [f"A: {a.name}", f"B: {b.name}"]
    rows = [Row({f"compare-prediction-{k}": figures.class_probabilities(
        s.prediction.probs, None if s.prediction.score is not None else s.prediction.label)
        for k, s in zip("ab", sides)}, "Predictions of A (left) and B (right)")]
    blocks = [{block.name: block for block in s.sentence.trace.blocks} for s in sides]
    zmax = figures.peak(*(mean_attention(block) for side in blocks for block in side.values()))
    for k, (label, side) in enumerate(zip(labels, blocks)):
        if side:
            rows.append(Row({f"compare-attention-{'ab'[k]}-{file_name(name)}": figures.attention_heatmap(
                mean_attention(block), tokens, np.asarray(block.mask), f"{label} · {name}", zmax=zmax,
                width=views.panel_width(views.FULL, len(side)))
                for name, block in side.items()},
                f"{'AB'[k]}: token2token attention (mean over features, one scale for both)"))
    same = [name for name in blocks[0] if name in blocks[1]
            and blocks[0][name].direction == blocks[1][name].direction]
    if same:
        rows.append(Row({f"compare-diff-{file_name(name)}": figures.difference_heatmap(
            mean_attention(blocks[0][name]), mean_attention(blocks[1][name]), tokens, f"{name}: A − B",
            width=views.panel_width(views.FULL, len(same)))
            for name in same},
            "Difference where both have the block (red: A attends more)"))
    gates = {f"{label[:1]} · {name}": np.asarray(block.gate, dtype=float)
             for label, side in zip(labels, blocks) for name, block in side.items()}
    if gates:  # drawn as the Fusion gates page draws them
        rows.append(Row({"compare-gates": figures.mean_gate_bars(gates, tokens, markup.stop_words(tokens))},
                        "Fusion gates"))
    importance = {label[:1]: measures.token_importance(np.asarray(s.sentence.trace.source2token.probs))
                  for label, s in zip(labels, sides) if s.sentence.trace.source2token is not None}
    if importance:
        panels = {"compare-s2t": figures.token_bars(importance, tokens, "source2token importance",
                                                     "mean probability")}
        if len(importance) == 2:
            panels["compare-s2t-diff"] = figures.token_bars({"A − B": importance["A"] - importance["B"]}, tokens,
                                                             "source2token importance: A − B", "difference")
        rows.append(Row(panels, "Source2token"))
    return Drawing(rows)
