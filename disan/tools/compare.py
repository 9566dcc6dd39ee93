"""What ``disan compare`` computes (its arguments: :mod:`disan.tools.parsers.compare`).

    python -m disan compare runs/sst5 checkpoints/sst5 runs/sst5-item7-l2 --split dev

Every checkpoint is evaluated on the same examples of its benchmark (one split, each with the words it
was measured with), and each OTHER is compared with BASE example by example: the difference of their
figures (accuracy, or Pearson r for relatedness) with a 95% percentile bootstrap interval that resamples
the examples (both models see the same resample), and for classes McNemar's exact test on the examples
only one of the two gets right. A dev difference of a dozen sentences out of a thousand is often within
what resampling the sentences moves it: the interval says whether a choice made on dev rests on more.

Checkpoints of different tasks, folds or dev splits (TREC's dev is drawn from its training file by the
seed) do not share their examples; that is an error, not a comparison.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

import numpy as np

from disan.data.kinds import kind_of
from disan.analyses.stats import Estimate, cluster_bootstrap, mcnemar_exact
from disan.analyses.choices import RESAMPLES
from disan.tools.parsers.compare import parser
from disan.training.evaluate import Evaluation, examples_table


@dataclass(frozen=True)
class Comparison:
    """OTHER against BASE on the same examples."""
    name: str
    metric: str          # accuracy or pearson
    value: float         # OTHER's figure
    difference: Estimate  # OTHER minus BASE, with its bootstrap interval
    only_other: int | None = None  # examples only OTHER gets right (classes only)
    only_base: int | None = None   # examples only BASE gets right
    p_mcnemar: float | None = None


def accuracy_difference(sums):
    """(..., 3) totals of [other correct, base correct, examples] -> difference of accuracies."""
    return (sums[..., 0] - sums[..., 1]) / sums[..., 2]


def pearson_from_moments(t):
    """Pearson r from totals (..., 6) of [x, y, x², y², xy, 1]: the form a bootstrap of sums needs."""
    sx, sy, sxx, syy, sxy, n = (t[..., i] for i in range(6))
    return (n * sxy - sx * sy) / np.sqrt((n * sxx - sx ** 2) * (n * syy - sy ** 2))


def moments(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(N, 6) per-example [x, y, x², y², xy, 1], summed by :func:`pearson_from_moments`."""
    return np.stack([x, y, x * x, y * y, x * y, np.ones_like(x)], axis=1)


def pearson_difference(sums):
    """(..., 12) totals of the moments of (other, gold) then (base, gold) -> difference of Pearson r."""
    return pearson_from_moments(sums[..., :6]) - pearson_from_moments(sums[..., 6:])


def same_examples(base: Evaluation, other: Evaluation) -> bool:
    """Whether two evaluations ran on the same examples in the same order (texts and gold)."""
    return base.kind == other.kind and base.table[["text", "gold"]].equals(other.table[["text", "gold"]])


def compare(base: Evaluation, other: Evaluation, name: str, resamples: int = RESAMPLES, seed: int = 0) -> Comparison:
    """``other`` against ``base``, example by example (see the module's docstring)."""
    if not same_examples(base, other):
        raise ValueError(f"{name} was not evaluated on the same examples as the base checkpoint (another task, "
                         "fold or dev split): a paired comparison needs the same examples")
    if kind_of(base.kind).scored:
        gold = base.table["gold"].to_numpy(float)
        sums = np.concatenate([moments(other.table["predicted"].to_numpy(float), gold),
                               moments(base.table["predicted"].to_numpy(float), gold)], axis=1)
        diff = cluster_bootstrap(sums, pearson_difference, resamples, seed=seed)
        return Comparison(name, "pearson", other.metrics["pearson"], diff)
    a, b = other.table["correct"].to_numpy(bool), base.table["correct"].to_numpy(bool)
    sums = np.stack([a, b, np.ones_like(a)], axis=1).astype(np.float64)
    diff = cluster_bootstrap(sums, accuracy_difference, resamples, seed=seed)
    only_other, only_base = int((a & ~b).sum()), int((b & ~a).sum())
    return Comparison(name, "accuracy", other.metrics["accuracy"], diff, only_other, only_base,
                      mcnemar_exact(only_other, only_base))


def markdown(base_name: str, base: Evaluation, comparisons: list[Comparison], split: str) -> str:
    """The comparisons as a Markdown table, figures as the README prints them (accuracy in %); McNemar's
    columns for classes only."""
    classes = not kind_of(base.kind).scored
    scale, digits, metric = (100, 2, "accuracy") if classes else (1, 4, "pearson")
    fig = "{:+.%df}" % digits
    head = ["checkpoint", f"{split} {metric}", "minus base", "95% interval"]
    head += ["only this right", "only base right", "McNemar p"] if classes else []
    rows = [head, [f"{base_name} (base)", f"{scale * base.metrics[metric]:.{digits}f}"] + [""] * (len(head) - 2)]
    for c in comparisons:
        d = c.difference
        row = [c.name, f"{scale * c.value:.{digits}f}", fig.format(scale * d.value),
               f"[{fig.format(scale * d.low)}, {fig.format(scale * d.high)}]"]
        rows.append(row + ([str(c.only_other), str(c.only_base), f"{c.p_mcnemar:.3f}"] if classes else []))
    rule = ["---", "---:", "---:", "---"] + ["---:"] * (len(head) - 4)
    return "\n".join("| " + " | ".join(r) + " |" for r in [rows[0], rule, *rows[1:]])


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.resamples < 100:
        p.error("--resamples must be at least 100 for a 95% interval")
    base = examples_table(args.base, args.split, args.data_dir)
    comparisons = [compare(base, examples_table(path, args.split, args.data_dir), path, args.resamples)
                   for path in args.others]
    if args.json:
        for c in comparisons:
            print(json.dumps(asdict(c)))
    else:
        print(markdown(args.base, base, comparisons, args.split))
    return 0


if __name__ == "__main__":
    sys.exit(main())
