"""What ``disan results`` tables (its arguments: :mod:`disan.tools.parsers.results`).

    python -m disan results [DIR ...]      (default: checkpoints/ and results/)

The folds of one run (folders named ``<run>-foldK``) are summarised as mean ± std.
``results/`` keeps the JSON files and model cards of runs whose weights are not shipped.
"""
from __future__ import annotations

import json
import re
import shlex
import statistics
from collections import defaultdict
from pathlib import Path

from disan.data.kinds import kind_of
from disan.data.registry import BENCHMARKS
from disan.tools.parsers.results import parser


def collect(dirs: list[Path]) -> dict[tuple[str, str, str], list[dict]]:
    """(task, run, model) -> [{test, dev, fold, seed, command, name}] over the finished runs in ``dirs``.

    ``run`` is the folder's name without its ``-foldK`` suffix: the folds of one setting are one row,
    runs of other settings (another name) are other rows.

    The model is the encoder, with the optimizer when it is not the paper's Adadelta, and the word
    vectors: runs with other vectors are other rows.
    """
    runs = defaultdict(list)
    for root in dirs:
        # results/ keeps only the JSON files of a run, not its weights: read them, not the checkpoint
        for folder in sorted(p for p in Path(root).iterdir() if (p / "metrics.json").is_file()):
            try:
                config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
                metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
                task, key, encoder = config["task"], kind_of(config["kind"]).metric, config["model"]["encoder"]
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not a run's record
            if "test" not in metrics:
                continue  # a run still in progress: only its best dev checkpoint so far
            tc = config.get("train_config") or {}
            optimizer = tc.get("optimizer", "adadelta")
            model = encoder if optimizer == "adadelta" else f"{encoder} ({optimizer})"
            if tc.get("shuffle_labels"):  # a sanity check's model, not DiSAN's figure for the task
                model += ", labels shuffled"
            model += f" · {vectors_label(tc.get('embeddings'))}"
            runs[(task, re.sub(r"-fold\d+$", "", folder.name), model)].append({
                "test": metrics["test"][key], "dev": metrics["dev"][key], "metric": key, "name": folder.name,
                "fold": tc.get("fold"), "seed": tc.get("seed"), "command": tc.get("command", ""),
                "encoder": encoder, "vectors": vectors_label(tc.get("embeddings")),
                "shuffled": bool(tc.get("shuffle_labels")),
                "minutes": metrics.get("train_seconds", 0) / 60})
    return runs


def vectors_label(embeddings: str | None) -> str:
    """Short name of a run's word vectors; runs made before 100d existed record None for the 50d package."""
    if embeddings in (None, "glove-50d"):
        return "50d"
    return "100d" if embeddings == "glove-100d" else Path(embeddings).name


def portable(command: str) -> str:
    """A run's command as the table shows it, the same whatever folder it ran in: an absolute --out
    becomes runs/<its name> (where scripts/reproduce.sh trains) and an absolute --logdir is left out."""
    args, shown, i = shlex.split(command), [], 0
    while i < len(args):
        flag, value = args[i], args[i + 1] if i + 1 < len(args) else ""
        if flag in ("--out", "--logdir") and Path(value).is_absolute():
            shown += [flag, f"runs/{Path(value).name}"] if flag == "--out" else []
            i += 2
        else:
            shown.append(flag)
            i += 1
    return shlex.join(shown)


def scale(metric: str, value: float) -> float:
    """Accuracy as a percentage, as the paper prints it; Pearson r unchanged."""
    return 100 * value if metric == "accuracy" else value


PAPER_ENCODER = "disan"  # the encoder whose figures the paper reports


def figure(metric: str, tests: list[float]) -> str:
    """A row's test figure as the tables print it: the mean over its folds, ± their std when there are several."""
    shown, digits = [scale(metric, t) for t in tests], 2 if metric == "accuracy" else 4
    text = f"{statistics.mean(shown):.{digits}f}"
    return text + (f" ± {statistics.stdev(shown):.{digits}f}" if len(shown) > 1 else "")


def table(runs: dict[tuple[str, str, str], list[dict]]) -> str:
    """The Markdown results table: one row per (task, run, model), mean ± std over its folds, gap to the paper."""
    lines = ["| task | run | model · vectors | ours (test) | paper | gap | folds | dev | minutes | command |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for (task, name, encoder), rs in sorted(runs.items()):
        metric = rs[0]["metric"]
        tests = [scale(metric, r["test"]) for r in rs]
        devs = [scale(metric, r["dev"]) for r in rs]
        digits = 2 if metric == "accuracy" else 4
        ours = figure(metric, [r["test"] for r in rs])
        # the paper's figures are DiSAN's on the true labels: a baseline's row or a shuffled-label check's gets
        # neither the figure nor a gap
        paper = (BENCHMARKS[task].paper if task in BENCHMARKS and encoder.split(" ")[0] == PAPER_ENCODER
                 and not rs[0]["shuffled"] else None)
        gap = f"{statistics.mean(tests) - paper:+.{digits}f}" if paper is not None else ""
        shown_paper = paper if paper is not None else ""
        lines.append(f"| {task} ({metric}) | {name} | {encoder} | {ours} | {shown_paper} | {gap} | "
                     f"{len(rs)} | {statistics.mean(devs):.{digits}f} | {sum(r['minutes'] for r in rs):.0f} | "
                     f"`{portable(rs[0]['command'])}` |")
    return "\n".join(lines)


CHOSEN_VECTORS = "100d"  # the vectors of the runs that compete for a task's figure (50d rows are older runs)


def chosen(runs: dict[tuple[str, str, str], list[dict]]) -> dict[str, tuple[str, list[dict]]]:
    """task -> (run, its folds): the DiSAN setting dev chooses for the task, the best mean dev among its DiSAN
    rows with GloVe 100d and seed 0 (each seed draws its own dev split, so only one seed's rows compare; test
    never chooses)."""
    best = {}
    for (task, name, _), rs in runs.items():
        first = rs[0]
        if (first["encoder"] != PAPER_ENCODER or first["shuffled"] or first["vectors"] != CHOSEN_VECTORS
                or (first["seed"] or 0) != 0):
            continue
        dev = statistics.mean(r["dev"] for r in rs)
        if task not in best or dev > best[task][0]:
            best[task] = (dev, name, rs)
    return {task: (name, rs) for task, (_, name, rs) in sorted(best.items())}


def brief(runs: dict[tuple[str, str, str], list[dict]]) -> str:
    """The README's table: per task, the setting dev chose (:func:`chosen`) against the paper."""
    lines = ["| task | ours (test) | paper | run |", "|---|---:|---:|---|"]
    for task, (name, rs) in chosen(runs).items():
        metric = rs[0]["metric"]
        paper = BENCHMARKS[task].paper if task in BENCHMARKS else None
        lines.append(f"| {task} ({metric}) | {figure(metric, [r['test'] for r in rs])} | "
                     f"{paper if paper is not None else ''} | {name} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    """``python -m disan results [DIR ...]``: print :func:`table` for the checkpoints under DIRs."""
    print(table(collect(parser().parse_args(argv).dirs)))


if __name__ == "__main__":
    main()
