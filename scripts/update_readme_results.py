"""Record finished runs and refresh the results table between the README's results markers.

Runs trained into runs/ (not versioned: their weights are large) keep their config, metrics and
model card in results/<run>/. For each shipped checkpoint, the runs of its task and encoder that
are not cross-validation folds (runs/trec, runs/trec-dropout0.4, ...) and have its seed compete with
it on dev — dev, never test, decides — and the best one is shipped; every other one keeps its record in
results/, a run named after the task as results/<task>-<vectors>, so all of them are reported.
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
    dev = read(folder, "metrics.json")["dev"]
    return dev["pearson"] if "pearson" in dev else dev["accuracy"]


def same_run(a: Path, b: Path) -> bool:
    ma, mb = read(a, "metrics.json"), read(b, "metrics.json")
    return (ma["dev"], ma["test"]) == (mb["dev"], mb["test"])


def setting(folder: Path) -> tuple[str, str, int]:
    """What runs must share to compete on dev: task, encoder and seed (the seed draws TREC's dev split,
    and dev scores compare only on one split)."""
    config = read(folder, "config.json")
    return config["task"], config["model"]["encoder"], (config.get("train_config") or {}).get("seed", 0)


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


runs = [p.parent for p in sorted((ROOT / "runs").glob("*/metrics.json")) if finished(p.parent)]
shipped = {setting(p): p for p in sorted((ROOT / "checkpoints").iterdir()) if finished(p)}
for key, current in shipped.items():
    rivals = [r for r in runs if setting(r) == key and not re.search(r"-fold\d+$", r.name)]
    if not rivals:
        continue
    runs = [r for r in runs if r not in rivals]
    others = [r for r in rivals if not same_run(r, current)]  # a rival shipped earlier is the current one
    best = max(others, key=dev_score, default=None)
    if best is not None and dev_score(best) > dev_score(current):
        keep_record(current)
        shutil.rmtree(current)
        shutil.copytree(best, current)
        others.remove(best)
        print(f"{current.name}: shipped {best.name} (dev {dev_score(best):.4f})")
    for rival in others:
        keep_record(rival)
for run in runs:
    keep_record(run)

readme = ROOT / "README.md"
text = readme.read_text(encoding="utf-8")
new = table(collect([ROOT / "checkpoints", ROOT / "results"]))
text = re.sub(r"(<!-- results:start -->\n).*?(\n<!-- results:end -->)", lambda m: m.group(1) + new + m.group(2),
              text, flags=re.S)
readme.write_text(text, encoding="utf-8")
print(new)
