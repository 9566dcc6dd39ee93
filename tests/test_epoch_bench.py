"""``python -m disan bench --epoch``: the epoch estimate's interval covers the truth as often as it
says, every configuration sees the same batches, what training does not run is refused, and random
word vectors (and, without the data, a synthetic SST-5) stand in for GloVe."""
import random
from collections import Counter

import pytest

from disan.data.batching import encode, tokens_of
from disan.data.paths import DATA_ENV
from disan.data.registry import load_task
from disan.data.text import Vocab
from disan.tools.bench import EpochTiming, epoch_data, epoch_timings, main, synthetic_sst5
from disan.training.config import TrainConfig


@pytest.mark.parametrize("timed", [300, 450])
def test_the_epoch_interval_covers_the_epoch_95_times_in_100(timed):
    # step times as skewed as a bucketed epoch's (a few long batches), an epoch of 500 batches
    rng = random.Random(timed)
    epoch = [rng.lognormvariate(-2.0, 0.6) for _ in range(500)]
    truth = sum(epoch)
    trials, covered = 2000, 0
    for _ in range(trials):
        t = EpochTiming("fast", "bucketed", len(epoch), rng.sample(epoch, timed), 0.0, 0)
        covered += abs(t.estimate - truth) <= t.half_width
    # sampling without replacement: 450 of 500 batches leave little to estimate; without that
    # correction the interval would cover nearly always
    assert 0.93 <= covered / trials <= 0.97


def test_a_whole_epoch_has_no_sampling_error():
    t = EpochTiming("fast", "random", 4, [0.1, 0.3, 0.2, 0.6], 0.5, 10)
    assert t.estimate == pytest.approx(1.2) and t.half_width == 0


def test_what_training_does_not_run_is_refused():
    base = TrainConfig(task="trec", out="unused")
    with pytest.raises(ValueError, match="fast, bilstm, multihead.*not reference"):
        epoch_timings(base, ["reference"], ["bucketed"], 10)
    with pytest.raises(ValueError, match="not sorted"):
        epoch_timings(base, ["fast"], ["sorted"], 10)


@pytest.mark.usefixtures("data_root")
def test_an_epoch_times_every_batch_but_the_warm_up_and_the_models_see_the_same_batches():
    base = TrainConfig(task="trec", out="unused", d_h=8, d_fc=8, max_train=320, batch_size=32, extra_vocab=0)
    timings = {(t.model, t.batching): t for t in epoch_timings(base, ["fast", "bilstm"], ["bucketed", "random"], 0)}
    assert all(t.batches == 10 and len(t.seconds) == 7 and min(t.seconds) > 0 for t in timings.values())
    for batching in ("bucketed", "random"):
        fast, bilstm = timings["fast", batching], timings["bilstm", batching]
        assert (fast.padding, fast.cells) == (bilstm.padding, bilstm.cells)
    bucketed, shuffled = timings["fast", "bucketed"], timings["fast", "random"]
    # TREC's questions run from 1 to 37 tokens: random batches are padded to their longest
    assert bucketed.padding < 0.15 < shuffled.padding and shuffled.cells > 1.5 * bucketed.cells


@pytest.mark.usefixtures("data_root")
def test_the_command_prints_a_row_per_configuration_and_the_ratios(capsys):
    main(["--epoch", "--task", "trec", "--sample", "2", "--threads", "1", "--models", "fast,bilstm"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("| fast |", "| bilstm |"))]
    assert len(rows) == 4 and "2 timed per configuration" in out
    assert "faster than the Bi-LSTM" in out and "random batches is than one of bucketed" in out
    # the table's epoch is the timed steps' mean times the epoch's batches
    batches = int(out.split(" batches of 64")[0].rsplit(" ", 1)[1].replace(",", ""))
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        mean_ms, epoch = float(cells[4]), float(cells[5].split(" ± ")[0].replace(",", ""))
        assert epoch == pytest.approx(batches * mean_ms / 1e3, rel=0.01, abs=1)


@pytest.mark.usefixtures("data_root")
def test_random_vectors_read_no_glove_and_add_no_glove_words():
    base = TrainConfig(task="trec", out="unused", max_train=320)
    glove, _ = epoch_data(base, "glove")
    drawn, words = epoch_data(base, "random")
    assert glove.glove_found > 0 and glove.frozen > 0  # what the random vectors leave out
    trained = len(glove.vocab) - glove.frozen
    assert drawn.vocab.itos == glove.vocab.itos[:trained] and drawn.glove_found == drawn.frozen == 0
    # GloVe 100d's width; every row drawn as a missing word's, from U(-0.05, 0.05), padding zero
    assert drawn.vectors.shape == (trained, 100) and abs(drawn.vectors).max() <= 0.05
    assert not drawn.vectors[0].any() and drawn.vectors[1:].all(axis=1).all()
    assert "random word vectors" in words


def test_without_the_data_random_vectors_time_a_synthetic_sst5(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "absent"))
    main(["--epoch", "--vectors", "random", "--batching", "bucketed", "--models", "fast,bilstm", "--sample", "1",
          "--threads", "1"])
    out = capsys.readouterr().out
    assert "synthetic corpus" in out
    # SST-5's epoch, as docs/performance.md measured it on the data: 2,489 batches, 7.1% of a bucketed epoch padding
    assert "2,489 batches of 64" in out
    rows = [line for line in out.splitlines() if line.startswith(("| fast |", "| bilstm |"))]
    assert len(rows) == 2 and all(abs(float(row.split("|")[3].strip(" %")) - 7.1) < 1 for row in rows)


def test_without_the_data_only_sst5_with_random_vectors_has_a_stand_in(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="stands in for SST-5"):
        epoch_data(TrainConfig(task="trec", out="unused"), "random")
    with pytest.raises(FileNotFoundError, match="stands in for SST-5"):
        epoch_data(TrainConfig(task="sst5", out="unused", sst_nodes="oversampled"), "random")
    with pytest.raises(FileNotFoundError, match="absent"):
        epoch_data(TrainConfig(task="sst5", out="unused"), "glove")


@pytest.mark.usefixtures("data_root")
def test_the_synthetic_sst5_has_the_lengths_and_vocabulary_of_training_on_sst5():
    cfg = TrainConfig(task="sst5", out="unused")
    data = load_task("sst5", phrases=cfg.phrases, nodes=cfg.sst_nodes)
    tokens = tokens_of(data, splits=("train",), tokenizer=cfg.tokens)["train"]
    real = encode(Vocab.build([t for row in tokens for t in row]), tokens, [e.label for e in data.train])
    synthetic = synthetic_sst5()
    assert Counter(synthetic.splits["train"].lengths) == Counter(real.lengths)
    assert len(synthetic.vocab) == len(Vocab.build([t for row in tokens for t in row]))
    assert max(max(row) for row in synthetic.splits["train"].columns[0]) < len(synthetic.vocab)
