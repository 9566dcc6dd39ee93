import pytest

from disan.tools.results import table


def run(test, dev, fold=0, metric="accuracy"):
    return {"test": test, "dev": dev, "metric": metric, "name": f"f{fold}", "fold": fold, "seed": 0,
            "command": "python -m disan train --task cr", "minutes": 2.0}


def test_folds_are_summarised_as_mean_and_std_with_the_gap_to_the_paper():
    rows = table({("cr", "disan"): [run(0.80, 0.81, 0), run(0.82, 0.83, 1), run(0.84, 0.85, 2)],
                  ("sick", "bilstm"): [run(0.85, 0.86, metric="pearson")]}).splitlines()
    cr = next(r for r in rows if r.startswith("| cr"))
    cells = [c.strip() for c in cr.split("|")]
    assert cells[3] == "82.00 ± 2.00" and cells[4] == "84.8" and cells[5] == "-2.80" and cells[6] == "3"
    sick = next(r for r in rows if r.startswith("| sick"))
    cells = [c.strip() for c in sick.split("|")]
    assert cells[3] == "0.8500" and cells[4] == cells[5] == ""  # the paper's figure is DiSAN's, not a baseline's
    assert cells[8] == "2"


@pytest.mark.parametrize("metric", ["accuracy", "pearson"])
def test_a_single_run_has_no_std(metric):
    row = table({("trec", "disan"): [run(0.9, 0.9, metric=metric)]}).splitlines()[-1]
    assert "±" not in row
