"""Record finished runs and refresh the results table between the README's results markers.

Runs trained into runs/ (not versioned: their weights are large) keep their config, metrics and
model card in results/<run>/. A run of a shipped task (runs/sst5 for checkpoints/sst5, ...) replaces
the shipped checkpoint only when its dev score is better — dev, never test, decides — and the model
that is not shipped keeps its JSON files and card in results/<task>-<vectors>/, so both are reported.
"""
import json
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from disan.tools.results import collect, table, vectors_label  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RECORD = ("config.json", "metrics.json", "README.md")


def finished(folder: Path) -> dict | None:
    """The metrics of a run that ended (test figures, not stopped by hand), else None."""
    try:
        metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return metrics if "test" in metrics and not metrics.get("stopped") else None


def dev_score(metrics: dict) -> float:
    dev = metrics["dev"]
    return dev["pearson"] if "pearson" in dev else dev["accuracy"]


def keep_record(run: Path, name: str) -> None:
    target = ROOT / "results" / name
    target.mkdir(parents=True, exist_ok=True)
    for file in RECORD:
        shutil.copyfile(run / file, target / file)


def vectors_of(folder: Path) -> str:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return vectors_label((config.get("train_config") or {}).get("embeddings"))


for run in sorted(p.parent for p in (ROOT / "runs").glob("*/metrics.json")):
    metrics = finished(run)
    if metrics is None:
        continue
    shipped = ROOT / "checkpoints" / run.name
    if not shipped.is_dir():
        keep_record(run, run.name)
        continue
    old = finished(shipped)
    if old is not None and vectors_of(shipped) == vectors_of(run) and old["test"] == metrics["test"]:
        continue  # already shipped
    if old is None or dev_score(metrics) > dev_score(old):
        if old is not None:
            keep_record(shipped, f"{run.name}-{vectors_of(shipped)}")
        shutil.rmtree(shipped)
        shutil.copytree(run, shipped)
        print(f"{run.name}: shipped the new run (dev {dev_score(metrics):.4f} against "
              f"{dev_score(old) if old else float('nan'):.4f})")
    else:
        keep_record(run, f"{run.name}-{vectors_of(run)}")
        print(f"{run.name}: kept the shipped checkpoint (dev {dev_score(old):.4f} against {dev_score(metrics):.4f})")

readme = ROOT / "README.md"
text = readme.read_text(encoding="utf-8")
new = table(collect([ROOT / "checkpoints", ROOT / "results"]))
text = re.sub(r"(<!-- results:start -->\n).*?(\n<!-- results:end -->)", lambda m: m.group(1) + new + m.group(2),
              text, flags=re.S)
readme.write_text(text, encoding="utf-8")
print(new)
