import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from disan.tools.results import brief, chosen, portable, table


def run(test, dev, fold=0, metric="accuracy"):
    return {"test": test, "dev": dev, "metric": metric, "name": f"f{fold}", "fold": fold, "seed": 0,
            "command": "python -m disan train --task cr", "minutes": 2.0, "shuffled": False}


def test_folds_are_summarised_as_mean_and_std_with_the_gap_to_the_paper():
    rows = table({("cr", "cr", "disan"): [run(0.80, 0.81, 0), run(0.82, 0.83, 1), run(0.84, 0.85, 2)],
                  ("sick", "sick-bilstm", "bilstm"): [run(0.85, 0.86, metric="pearson")]}).splitlines()
    cr = next(r for r in rows if r.startswith("| cr"))
    cells = [c.strip() for c in cr.split("|")]
    assert cells[4] == "82.00 ± 2.00" and cells[5] == "84.8" and cells[6] == "-2.80" and cells[7] == "3"
    sick = next(r for r in rows if r.startswith("| sick"))
    cells = [c.strip() for c in sick.split("|")]
    assert cells[4] == "0.8500" and cells[5] == cells[6] == ""  # the paper's figure is DiSAN's, not a baseline's
    assert cells[9] == "2"


@pytest.mark.parametrize("metric", ["accuracy", "pearson"])
def test_a_single_run_has_no_std(metric):
    row = table({("trec", "trec", "disan"): [run(0.9, 0.9, metric=metric)]}).splitlines()[-1]
    assert "±" not in row


def setting(task, name, test, dev, seed=0, encoder="disan", vectors="100d"):
    """A row of collect()'s answer: one run of one fold."""
    return (task, name, f"{encoder} · {vectors}"), [{**run(test, dev), "seed": seed, "encoder": encoder,
                                                     "vectors": vectors}]


@pytest.mark.quick
def test_dev_of_one_seed_s_disan_runs_with_100d_vectors_chooses_a_task_s_figure():
    runs = dict([setting("trec", "trec-a", 0.92, 0.90), setting("trec", "trec-b", 0.95, 0.89),
                 setting("trec", "trec-seed1", 0.80, 0.99, seed=1),  # another dev split: does not compete
                 setting("trec", "trec-bilstm", 0.70, 0.98, encoder="bilstm"),  # not the paper's model
                 setting("trec", "trec-50d", 0.70, 0.97, vectors="50d"),  # the older vectors
                 setting("sick-e", "sick-e", 0.79, 0.80)])
    assert {task: name for task, (name, _) in chosen(runs).items()} == {"trec": "trec-a", "sick-e": "sick-e"}
    rows = brief(runs).splitlines()
    assert "| trec (accuracy) | 92.00 | 94.2 | trec-a |" in rows
    assert "| sick-e (accuracy) | 79.00 |  | sick-e |" in rows  # the paper has no SICK-E figure


def trained(folder, task, dev, test=None, seed=0, embeddings="glove-100d", fold=0, shuffle_labels=False, **metrics):
    """A run's folder as training leaves it and results/ keeps it: config, metrics and model card, no weights
    (``test`` None: a run still training)."""
    folder.mkdir(parents=True)
    config = {"task": task, "kind": "classify", "model": {"encoder": "disan"},
              "train_config": {"embeddings": embeddings, "seed": seed, "fold": fold, "out": str(folder),
                               "shuffle_labels": shuffle_labels,
                               "command": f"python -m disan train --task {task} --out {folder}"}}
    metrics = {"dev": {"accuracy": dev}, "train_seconds": 120, "best_epoch": 2, "epochs_run": 3, **metrics}
    if test is not None:
        metrics["test"] = {"accuracy": test}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "README.md").write_text(f"# {folder.name}\n")


def test_runs_without_weights_are_collected_and_vectors_make_separate_rows(tmp_path):
    from disan.tools.results import collect
    trained(tmp_path / "cr-50d-fold0", "cr", 0.81, 0.80, embeddings=None)
    trained(tmp_path / "cr-50d-fold1", "cr", 0.85, 0.84, embeddings=None, fold=1)
    trained(tmp_path / "cr-fold0", "cr", 0.91, 0.9)
    trained(tmp_path / "cr-fold1", "cr", 0.91, fold=1)  # still training
    trained(tmp_path / "cr-dropout0.4-fold0", "cr", 0.71, 0.7)
    (tmp_path / "notes").mkdir()
    runs = collect([tmp_path])
    assert sorted(runs) == [("cr", "cr", "disan · 100d"), ("cr", "cr-50d", "disan · 50d"),
                            ("cr", "cr-dropout0.4", "disan · 100d")]
    assert [r["fold"] for r in runs[("cr", "cr-50d", "disan · 50d")]] == [0, 1]
    assert len(runs[("cr", "cr", "disan · 100d")]) == 1
    row = next(r for r in table(runs).splitlines() if "50d" in r)
    assert "82.00 ± 2.83" in row


def test_a_run_on_shuffled_labels_is_a_row_of_its_own_without_the_papers_figure_and_never_chosen(tmp_path):
    from disan.tools.results import collect
    trained(tmp_path / "trec", "trec", 0.90, 0.92)
    trained(tmp_path / "trec-shuffled-labels", "trec", 0.95, 0.30, shuffle_labels=True)  # its dev as high as can be
    runs = collect([tmp_path])
    assert sorted(runs) == [("trec", "trec", "disan · 100d"),
                            ("trec", "trec-shuffled-labels", "disan, labels shuffled · 100d")]
    cells = [c.strip() for c in next(r for r in table(runs).splitlines() if "shuffled" in r).split("|")]
    assert cells[4] == "30.00" and cells[5] == cells[6] == ""
    assert {task: name for task, (name, _) in chosen(runs).items()} == {"trec": "trec"}


@pytest.mark.quick
def test_a_command_shows_the_same_wherever_its_run_was_made():
    made = "python -m disan train --task sst5 --out /home/me/runs/item4 --logdir '/tmp/tb x/item4' --dropout 0.2"
    assert portable(made) == "python -m disan train --task sst5 --out runs/item4 --dropout 0.2"
    relative = "python -m disan train --task trec --out checkpoints/trec --logdir tb/trec"
    assert portable(relative) == relative


# scripts/update_results.py, run on a repository of its own: checkpoints/, results/, $RUNS, docs/results.md and a
# README
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "update_results.py"
MARKED = "<!-- results:start -->\nold\n<!-- results:end -->\n<!-- recipe:start -->\nold\n<!-- recipe:end -->\n"
BRIEF = "# a README\n<!-- brief:start -->\nold\n<!-- brief:end -->\n"


def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "scripts")
    (root / "disan").symlink_to(SCRIPT.parent.parent / "disan")
    (root / "docs").mkdir()
    (root / "docs" / "results.md").write_text(MARKED)
    (root / "README.md").write_text(BRIEF)
    (root / "results").mkdir()
    trained(root / "checkpoints" / "sst5", "sst5", 0.50, 0.49)
    return root


def update(root, *args):
    done = subprocess.run([sys.executable, root / "scripts" / "update_results.py", *args],
                          env={**os.environ, "RUNS": str(root.parent / "runs")}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return (root / "docs" / "results.md").read_text()


def dev_test(folder):
    metrics = json.loads((folder / "metrics.json").read_text())
    return metrics["dev"]["accuracy"], metrics["test"]["accuracy"]


def test_dev_alone_chooses_the_shipped_checkpoint_and_every_other_run_keeps_its_record(tmp_path):
    root, runs = repo(tmp_path), tmp_path / "runs"
    trained(root / "checkpoints" / "trec", "trec", 0.90, 0.92)
    trained(runs / "trec-better-dev", "trec", 0.91, 0.88)
    trained(runs / "trec-better-test", "trec", 0.89, 0.97)
    trained(runs / "trec-other-seed", "trec", 0.99, 0.99, seed=1)  # another dev split: does not compete
    trained(runs / "trec-cv-fold0", "trec", 0.99, 0.99)  # a fold: does not compete either
    trained(runs / "trec-unfinished", "trec", 0.995)  # no test figure yet
    readme = update(root, "--no-ship")
    assert dev_test(root / "checkpoints" / "trec") == (0.90, 0.92)
    assert {p.name for p in (root / "results").iterdir()} == {
        "trec-better-dev", "trec-better-test", "trec-other-seed", "trec-cv-fold0"}
    assert "| trec-better-test |" in readme and "trec-unfinished" not in readme

    update(root)
    assert dev_test(root / "checkpoints" / "trec") == (0.91, 0.88)
    assert dev_test(root / "results" / "trec-100d") == (0.90, 0.92)  # the checkpoint it replaced
    brief_rows = (root / "README.md").read_text().splitlines()  # the README's table, refreshed too
    assert "| sst5 (accuracy) | 49.00 | 51.72 | sst5 |" in brief_rows and "old" not in brief_rows
    assert not (root / "results" / "trec-better-dev").exists()  # shipped: no second record of it
    assert dev_test(root / "results" / "trec-better-test") == (0.89, 0.97)
    update(root)  # run again: nothing changes hands
    assert dev_test(root / "checkpoints" / "trec") == (0.91, 0.88)


def test_a_recipe_run_s_figures_so_far_outlive_its_state_file_until_it_finishes(tmp_path):
    import torch
    root, runs = repo(tmp_path), tmp_path / "runs"
    runs.mkdir()
    history = [{"epoch": 1, "step": 1000, "dev_accuracy": 0.43}, {"epoch": 1, "step": 2000, "dev_accuracy": 0.46},
               {"epoch": 1, "step": 3000, "dev_accuracy": 0.44}]
    torch.save({"history": history, "best": 2, "seconds": 600}, runs / "sst5-authors.resume.pt")
    row = "| sst5-authors | 46.00 | step 2,000 of 3,000 so far | 10 | not finished |"
    assert row in update(root).splitlines()
    (runs / "sst5-authors.resume.pt").unlink()  # the machine that trained is gone
    assert row in update(root).splitlines()

    trained(runs / "sst5-authors", "sst5", 0.47, 0.48, best_step=4000, steps_run=5000)
    assert "| sst5-authors | 47.00 | step 4,000 of 5,000 | 2 | finished |" in update(root).splitlines()
    assert not (root / "results" / "sst5-authors" / "progress.json").exists()
    shutil.rmtree(runs)  # the finished record stands on its own
    assert "| sst5-authors | 47.00 | step 4,000 of 5,000 | 2 | finished |" in update(root).splitlines()
