"""The shipped checkpoints reproduce the test figures their metrics.json records, and stay small.

The figures are computed here from the per-example predictions (accuracy as the share of correct
rows, Pearson r with numpy), not taken from the evaluation code's own metrics.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from disan.training.evaluate import examples_table

SHIPPED = sorted(p for p in (Path(__file__).resolve().parents[1] / "checkpoints").iterdir() if p.is_dir())
MAX_BYTES = 20_000_000


def test_every_task_of_the_readme_ships():
    assert {p.name for p in SHIPPED} >= {"sst5", "trec", "sick", "sick-e"}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_a_shipped_checkpoint_reproduces_its_recorded_test_figure(path, data_root):
    recorded = json.loads((path / "metrics.json").read_text())["test"]
    evaluation = examples_table(path, "test", data_dir=data_root)
    table = evaluation.table
    assert len(table) == recorded["n"]
    if evaluation.kind == "relatedness":
        pearson = np.corrcoef(table["predicted"], table["gold"])[0, 1]
        assert abs(pearson - recorded["pearson"]) <= 1e-4
        assert abs(((table["predicted"] - table["gold"]) ** 2).mean() - recorded["mse"]) <= 1e-4
    else:
        assert abs(table["correct"].mean() - recorded["accuracy"]) <= 1e-4


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_a_shipped_checkpoint_is_at_most_20_mb(path):
    assert sum(f.stat().st_size for f in path.iterdir()) <= MAX_BYTES
