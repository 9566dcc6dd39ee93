"""Hostile text, killed and failing saves, NaN losses: clear messages, nothing lost."""
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import disan
from disan.__main__ import run
from disan.data.text import MAX_CHARS, MAX_TOKENS
from disan.render import tables, views
from disan.nn import checkpoint
from disan.training.train import TrainConfig, train

from .conftest import make_model

ROOT = Path(__file__).resolve().parent.parent

HOSTILE = ["", " ", "\u200b", "word", "x" * 10_000, "x" * (MAX_CHARS + 1), "🙂👍🏽 emoji", "中文句子没有空格",
           "שלום עולם مرحبا", "a\x00b\x07c\x1b[31m", "e\u0301\u0301\u0301 combining", "<script>alert(1)</script>",
           "<img src=x onerror=alert(1)>", "**bold** _it_ [link](http://x) `code`", "$$x^2$$", "\ufeff\u202e reversed",
           "\U0001f600" * 50, "the " * 1000]

# The documented refusals of check_text (disan/data/text.py), written out here so that a changed
# message fails the test: (pattern, limit); the number a pattern captures must exceed its limit.
REFUSALS = [
    (r"the text is empty: type at least one word", None),
    (rf"the text has (?P<n>[\d,]+) characters; the limit is {MAX_CHARS:,}", MAX_CHARS),
    ((rf"the text has (?P<n>\d+) tokens; the limit is {MAX_TOKENS} "
      r"\(attention memory grows with the square of the length\)"), MAX_TOKENS),
    (r"the text holds the control character U\+[0-9A-F]{4}( \([A-Z0-9 -]+\))? at character \d+, which no sentence "
     r"has: remove it", None),
    (r"the text holds an unpaired surrogate \(U\+D[89A-F][0-9A-F]{2}\) at character \d+, half of a character that "
     r"UTF-8 cannot write: remove it", None),
]


def assert_documented_refusal(error: ValueError) -> None:
    """The error is one of check_text's documented messages, with a number over its limit."""
    message = str(error)
    for pattern, limit in REFUSALS:
        found = re.fullmatch(pattern, message)
        if found:
            assert limit is None or int(found["n"].replace(",", "")) > limit, message
            return
    raise AssertionError(f"not a documented refusal: {message!r}")


def make_pipe(tmp_path_factory, encoder):
    model, vocab = make_model("classify", encoder)
    path = tmp_path_factory.mktemp("ck") / encoder
    checkpoint.save(path, model, vocab, {"task": "tiny", "kind": "classify", "labels": ["a", "b", "c"]})
    return disan.load(path)


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    return make_pipe(tmp_path_factory, "disan")


@pytest.fixture(scope="module", params=["disan", "disan-nodir"])
def any_pipe(tmp_path_factory, request):
    return make_pipe(tmp_path_factory, request.param)


def view_options(sentence):
    """(view, options) for every view of the registry: its defaults, and for the Attention page every
    mode with the other choices away from their defaults."""
    out = [(view, view.options()) for view in views.VIEWS.values() if view.available(sentence.trace)]
    names = views.block_names(sentence.trace)
    if names:
        last_feature = sentence.trace.blocks[0].probs.shape[-1] - 1
        out += [(views.VIEWS["attention"],
                 views.AttentionOptions(mode, last_feature if mode == "one feature" else None, names[-1], query=0))
                for mode in views.MODES]
    return out


def draw_everything(result) -> None:
    """Every figure and table the pages draw from one trace: all views, word senses, downloads."""
    s = result.sentence
    drawings = [view.draw(s, options) for view, options in view_options(s)]
    drawings.append(views.word_senses([s, s]))  # a sentence shares every word with itself
    for drawing in drawings:
        # something to see: figures, or a note saying why there are none (a one-token sentence)
        assert drawing.figures or any(isinstance(panel, views.Note) for panel in drawing.values())
        for panel in drawing.values():
            if isinstance(panel, views.Html):
                text = panel.body
            elif isinstance(panel, views.Note | pd.DataFrame):
                continue
            else:
                text = json.dumps(panel.to_plotly_json(), default=str)
            assert "<script" not in text.lower() and "<img" not in text.lower()
    tables.trace_npz(s.tokens, s.trace)
    tables.trace_csv(s.tokens, s.trace)
    for block in s.trace.blocks:
        assert np.isfinite(np.asarray(block.probs)).all()
    assert np.isfinite(np.asarray(s.trace.encoding)).all()


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_gives_a_result_or_a_documented_refusal(any_pipe, text):
    try:
        result = any_pipe.trace(text)
    except ValueError as e:
        assert_documented_refusal(e)
        return
    draw_everything(result)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_random_unicode_through_tokenizer_trace_and_figures(pipe, text):
    try:
        result = pipe.trace(text)
    except ValueError as e:
        assert_documented_refusal(e)
        return
    draw_everything(result)


SAVER = """
import sys, torch
sys.path.insert(0, {root!r})
from disan.nn import checkpoint
from tests.conftest import make_model
model, vocab = make_model("classify")
for i in range(10**6):
    for p in model.parameters():
        p.data.fill_(i)
    checkpoint.save({path!r}, model, vocab, {{"task": "t", "kind": "classify", "labels": ["a", "b", "c"]}}, {{"i": i}})
    print(i, flush=True)
"""


def test_sigkill_at_any_moment_leaves_a_consistent_checkpoint(tmp_path):
    path = tmp_path / "ck"
    rng = np.random.default_rng(0)
    for attempt in range(6):
        proc = subprocess.Popen([sys.executable, "-c", SAVER.format(root=str(ROOT), path=str(path))],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline()  # at least one save finished
        time.sleep(float(rng.uniform(0.0, 0.3)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        model, _, _, metrics = checkpoint.load(path)
        # weights and metrics come from the same save: nothing half-written is ever read
        assert (model.encoder.fw.w1.weight == metrics["i"]).all()


def test_a_failing_disk_write_is_reported_and_keeps_the_old_checkpoint(make_checkpoint, monkeypatch):
    path = make_checkpoint()
    before = checkpoint.load(path)[0].encoder.fw.w1.weight.clone()
    model, vocab = make_model("classify", seed=5)

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint, "save_file", full_disk)
    with pytest.raises(OSError, match="No space left on device.*previous checkpoint is unchanged"):
        checkpoint.save(path, model, vocab, {"task": "t", "kind": "classify", "labels": ["a", "b", "c"]})
    assert not path.with_name(path.name + ".tmp").exists()
    assert torch.equal(checkpoint.load(path)[0].encoder.fw.w1.weight, before)


@pytest.mark.usefixtures("data_root")
def test_a_nan_loss_stops_the_run_with_a_message(tmp_path, capsys):
    with pytest.raises(FloatingPointError, match="loss became nan"):
        train(TrainConfig(task="trec", out=str(tmp_path / "nan"), epochs=2, d_h=8, d_fc=8, max_train=128,
                          extra_vocab=0, lr=1e30))
    assert run(["train", "--task", "trec", "--out", str(tmp_path / "nan2"), "--epochs", "2", "--d-h", "8",
                "--max-train", "128", "--extra-vocab", "0", "--lr", "1e30"]) == 1
    assert "error: the loss became nan" in capsys.readouterr().err
    assert not (tmp_path / "nan").exists()
