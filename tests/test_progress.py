"""What the Training page says about a run (disan.app.progress)."""
import pytest

from disan.app import progress

pytestmark = pytest.mark.quick


def test_the_remaining_time_covers_the_whole_run():
    step = {"epoch": 2, "step": 30, "steps": 100, "eta": 70.0, "loss": 1.0, "accuracy": None}
    history = [{"epoch": 1, "epoch_seconds": 120.0}]
    # 70 s left in epoch 2, then epochs 3, 4 and 5 at the 120 s that epoch 1 took
    assert progress.remaining_seconds(step, 5, history) == pytest.approx(70 + 3 * 120)
    first = {**step, "epoch": 1}
    # no epoch finished yet: 70 s for 70 steps is 1 s a step, 100 s an epoch
    assert progress.remaining_seconds(first, 3, []) == pytest.approx(70 + 2 * 100)
    assert progress.remaining_seconds({}, 3, []) is None
    assert progress.remaining_seconds({**step, "epoch": 5, "step": 100, "eta": 0.0}, 5, []) == 0.0


def test_the_remaining_time_waits_for_measured_steps():
    # the warm-up steps of the first epoch carry no eta: nothing to estimate from yet
    warming = {"epoch": 1, "step": 2, "steps": 77, "eta": None, "loss": 1.0, "accuracy": None}
    assert progress.remaining_seconds(warming, 5, []) is None
    # in a later epoch's warm-up, the rest of the epoch goes at the finished epochs' pace
    later = {**warming, "epoch": 2, "step": 7, "steps": 70}
    assert progress.remaining_seconds(later, 3, [{"epoch": 1, "epoch_seconds": 14.0}]) == pytest.approx(
        63 * 0.2 + 14)


def test_a_steps_figures_are_named_as_the_training_batches():
    step = {"epoch": 2, "step": 30, "steps": 100, "eta": 70.0, "loss": 0.51234, "accuracy": 0.8514}
    line = progress.step_line(step, 5)
    assert line == "epoch 2/5, step 30/100, train loss 0.5123, train accuracy 0.851"
    # a relatedness model has no accuracy: the loss alone, named as well
    assert progress.step_line({**step, "accuracy": None}, 5).endswith(", train loss 0.5123")


def test_durations_read_as_people_say_them():
    assert [progress.duration(s) for s in (4.4, 200, 3900)] == ["4 s", "3 min 20 s", "1 h 05 min"]


def test_metrics_become_a_table_and_curves_skip_the_dev_size():
    table = progress.metrics_table({"accuracy": 0.92612, "macro_f1": 0.9, "n": 500, "kind": "classify"})
    assert table.to_dict("records") == [{"metric": "accuracy", "value": 0.9261, "examples": 500},
                                        {"metric": "macro_f1", "value": 0.9, "examples": 500}]
    history = [{"epoch": 1, "train_loss": 1.0, "dev_accuracy": 0.5, "dev_n": 500, "epoch_seconds": 3.0}]
    assert progress.curve_keys(history) == ["train_loss", "dev_accuracy"] and progress.curve_keys([]) == []
