"""Record finished runs and refresh the results tables: the full one and the recipe one between the markers of
docs/results.md, and the brief one (each task's chosen setting against the paper) between the README's.

Runs trained into runs/ (not versioned: their weights are large) keep their config, metrics and
model card in results/<run>/. For each shipped checkpoint, the runs of its task and encoder that
are not cross-validation folds (runs/trec, runs/trec-dropout0.4, ...) and have its seed compete with
it on dev — dev, never test, decides — and the best one is shipped; every other one keeps its record in
results/, a run named after the task as results/<task>-<vectors>, so all of them are reported.
$RUNS names the runs' folder (default: runs/, as scripts/reproduce.sh). With --no-ship every finished
run is recorded and the tables refreshed, but no checkpoint is replaced: for the time while the runs
that compete with a shipped checkpoint are not all done.

The table between the recipe markers lists the run of our own SST-5 recipe (runs/sst5) and the recipe runs
(sst5-authors*, sst5-item*, sst5-items*): their best dev accuracy, where it was reached and their minutes,
read from the finished records (the one shipped as checkpoints/sst5 says so), or for a run still going (or
stopped, to be resumed) from results/<run>/progress.json: its best dev evaluation so far, its last one and its
time, copied there from the run's state file whenever that file is in $RUNS. The state file (weights and
optimiser, tens of MB) stays with the machine that trained; the progress record keeps the figures when that
machine is gone.
"""
import json
import os
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from disan.data.kinds import kind_of  # noqa: E402
from disan.tools.results import brief, collect, table, vectors_label  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUNS = Path(os.environ.get("RUNS") or ROOT / "runs")
RECORD = ("config.json", "metrics.json", "README.md")
PROGRESS = "progress.json"  # an unfinished run's figures so far, see the docstring
RECIPE_RUN = re.compile(r"^sst5-(authors|items?\d)")
BASELINE = "sst5"  # the run of our own SST-5 recipe (reproduce.sh: runs/sst5), the recipe table's first row
SHIPPED_SST5 = ROOT / "checkpoints" / "sst5"


def read(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text(encoding="utf-8"))


def finished(folder: Path) -> bool:
    """A run that ended: test figures, and not stopped by hand."""
    try:
        metrics = read(folder, "metrics.json")
    except (OSError, ValueError):
        return False
    return "test" in metrics and not metrics.get("stopped")


def dev_score(folder: Path) -> float:
    """The run's dev figure in its kind's metric."""
    return read(folder, "metrics.json")["dev"][kind_of(read(folder, "config.json")["kind"]).metric]


def same_run(a: Path, b: Path) -> bool:
    ma, mb = read(a, "metrics.json"), read(b, "metrics.json")
    return (ma["dev"], ma["test"]) == (mb["dev"], mb["test"])


def setting(folder: Path) -> tuple[str, str, int, bool]:
    """What runs must share to compete on dev: task, encoder and seed (the seed draws TREC's dev split,
    and dev scores compare only on one split), and true labels (a run on shuffled ones is a null, never shipped)."""
    config = read(folder, "config.json")
    train_config = config.get("train_config") or {}
    return (config["task"], config["model"]["encoder"], train_config.get("seed", 0),
            train_config.get("shuffle_labels", False))


def record_name(folder: Path) -> str:
    config = read(folder, "config.json")
    if folder.name != config["task"]:
        return folder.name
    return f"{config['task']}-{vectors_label((config.get('train_config') or {}).get('embeddings'))}"


def keep_record(folder: Path) -> None:
    target = ROOT / "results" / record_name(folder)
    target.mkdir(parents=True, exist_ok=True)
    for file in RECORD:
        shutil.copyfile(folder / file, target / file)
    (target / PROGRESS).unlink(missing_ok=True)  # finished: its record replaces the figures so far


def where(record: dict) -> str:
    """Where a history record stands: its step (runs evaluated every so many steps) or its epoch."""
    return f"step {record['step']:,}" if "step" in record else f"epoch {record['epoch']}"


def count(record: dict) -> str:
    """The steps or epochs a run has done at a history record, as :func:`where` counts them."""
    return f"{record['step']:,}" if "step" in record else f"{record['epoch']}"


def run_name(folder: Path) -> str:
    """The name a run was trained under: the last part of its --out."""
    return Path((read(folder, "config.json").get("train_config") or {}).get("out", folder.name)).name


def finished_by_name() -> dict[str, Path]:
    """Every finished run's folder by the name it was trained under, read once: the shipped SST-5 checkpoint
    first, then results/, then $RUNS (the first found of a name wins)."""
    folders = [SHIPPED_SST5, *sorted((ROOT / "results").iterdir())]
    folders += sorted(RUNS.iterdir()) if RUNS.exists() else []
    found = {}
    for folder in folders:
        if finished(folder):
            found.setdefault(run_name(folder), folder)
    return found


def recipe_row(name: str, records: dict[str, Path]) -> str | None:
    """A recipe run's row: finished (its record in ``records``), else its state file; None if neither."""
    label = f"{name} (our recipe)" if name == BASELINE else name
    if name in records:
        folder = records[name]
        m = read(folder, "metrics.json")
        at = (f"step {m['best_step']:,} of {m['steps_run']:,}" if "best_step" in m
              else f"epoch {m['best_epoch']} of {m['epochs_run']}")
        state = "finished, shipped" if same_run(folder, SHIPPED_SST5) else "finished"
        return f"| {label} | {100 * m['dev']['accuracy']:.2f} | {at} | {m['train_seconds'] / 60:.0f} | {state} |"
    progress = ROOT / "results" / name / PROGRESS
    state_file = RUNS / f"{name}.resume.pt"
    if state_file.exists():
        import torch
        state = torch.load(state_file, map_location="cpu", weights_only=True)
        history, best = state["history"], state["best"]
        p = {"best": history[best - 1], "last": history[-1], "seconds": state.get("seconds", 0)}
        progress.parent.mkdir(parents=True, exist_ok=True)
        progress.write_text(json.dumps(p, indent=1) + "\n", encoding="utf-8")
    elif progress.exists():
        p = json.loads(progress.read_text(encoding="utf-8"))
    else:
        return None
    return (f"| {label} | {100 * p['best']['dev_accuracy']:.2f} | {where(p['best'])} of {count(p['last'])} so far "
            f"| {p['seconds'] / 60:.0f} | not finished |")


def recipe_table() -> str:
    records = finished_by_name()  # the shipped checkpoint's run too, which has no folder of its name
    names = sorted({p.name.removesuffix(".resume.pt") for folder in (ROOT / "results", RUNS) if folder.exists()
                    for p in folder.iterdir() if RECIPE_RUN.match(p.name)} | set(filter(RECIPE_RUN.match, records)))
    rows = [recipe_row(name, records) for name in [BASELINE, *names]]
    return "\n".join(["| setting | dev | at | minutes | state |", "|---|---:|---|---:|---|"] + [r for r in rows if r])


no_ship = sys.argv[1:] == ["--no-ship"]
if sys.argv[1:] and not no_ship:
    sys.exit("usage: python scripts/update_results.py [--no-ship]")
runs = [p.parent for p in sorted(RUNS.glob("*/metrics.json")) if finished(p.parent)]
shipped = {setting(p): p for p in sorted((ROOT / "checkpoints").iterdir()) if finished(p)}
for key, current in shipped.items():
    rivals = [r for r in runs if setting(r) == key and not re.search(r"-fold\d+$", r.name)]
    if not rivals:
        continue
    runs = [r for r in runs if r not in rivals]
    others = [r for r in rivals if not same_run(r, current)]  # a rival shipped earlier is the current one
    best = None if no_ship else max(others, key=dev_score, default=None)
    if best is not None and dev_score(best) > dev_score(current):
        keep_record(current)
        shutil.rmtree(current)
        shutil.copytree(best, current)
        others.remove(best)
        shutil.rmtree(ROOT / "results" / record_name(best), ignore_errors=True)  # a --no-ship record of it
        print(f"{current.name}: shipped {best.name} (dev {dev_score(best):.4f})")
    for rival in others:
        keep_record(rival)
for run in runs:
    keep_record(run)


def refresh(path: Path, tables: dict[str, str]) -> None:
    """Each table between its ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers in ``path``."""
    text = path.read_text(encoding="utf-8")
    for name, new in tables.items():
        text = re.sub(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)",
                      lambda m: m.group(1) + new + "\n" + m.group(2), text, flags=re.S)
    path.write_text(text, encoding="utf-8")


runs_found = collect([ROOT / "checkpoints", ROOT / "results"])
new, recipe = table(runs_found), recipe_table()
refresh(ROOT / "docs" / "results.md", {"results": new, "recipe": recipe})
refresh(ROOT / "README.md", {"brief": brief(runs_found)})
print(new)
print(recipe)
