"""Refresh the results table between the README's results markers.

Runs trained into runs/ (not versioned: their weights are large) keep their config, metrics and
model card in results/<run>/; shipped checkpoints are read from checkpoints/.
"""
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from disan.tools.results import collect, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
readme = ROOT / "README.md"
text = readme.read_text(encoding="utf-8")
for run in sorted((ROOT / "runs").glob("*/metrics.json")):
    if "test" in run.read_text(encoding="utf-8"):  # finished runs only
        target = ROOT / "results" / run.parent.name
        target.mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "metrics.json", "README.md"):
            shutil.copyfile(run.parent / name, target / name)
new = table(collect([ROOT / "checkpoints", ROOT / "results"]))
text = re.sub(r"(<!-- results:start -->\n).*?(\n<!-- results:end -->)", lambda m: m.group(1) + new + m.group(2),
              text, flags=re.S)
readme.write_text(text, encoding="utf-8")
print(new)
