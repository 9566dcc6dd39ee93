"""The standalone HTML report (python -m disan report) and the notebook API (disan.viz)."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

import disan
from disan import viz
from disan.__main__ import run
from disan.render import views
from disan.analyses import casestudy

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = '<script>alert(1)</script> the <img src=x onerror=alert(2)> glass </script><b>big</b>'


def test_the_report_is_one_offline_file_with_the_text_escaped(make_checkpoint, tmp_path):
    out = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "disan", "report", str(make_checkpoint()), HOSTILE, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>big" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the text is shown, as text
    # plotly.js is inside the file (several MB), and nothing is loaded from elsewhere
    assert len(page) > 3_000_000 and "Plotly" in page
    assert not re.search(r"<script[^>]*\bsrc=", page)
    for part in ("Prediction", "Token2token attention", "Fusion gates", "Source2token", "Attribution"):
        assert f"<h2>{part}" in page, part
    assert page.count('class="plotly-graph-div"') >= 7


def test_a_pair_report_has_both_sentences(make_checkpoint, tmp_path):
    out = tmp_path / "pair.html"
    path = str(make_checkpoint("pair"))
    assert run(["report", path, "a man <i>is</i> pouring", "--hypothesis", "the man drinks", "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "premise: a man &lt;i&gt;is&lt;/i&gt; pouring" in page and "hypothesis: the man drinks" in page
    assert "<h2>Token2token attention (hypothesis)" in page


@pytest.mark.parametrize("args,message", [
    (["/no/such/checkpoint", "text"], "no checkpoint"),
    (["{ckpt}", "   "], "empty"),
    (["{ckpt}", "word " * 300], "tokens"),
    (["{pair}", "a man"], "--hypothesis"),
    (["{ckpt}", "a man", "--hypothesis", "tea"], "only for sentence-pair"),
])
def test_bad_input_is_one_line_and_exit_1(make_checkpoint, tmp_path, capsys, args, message):
    paths = {"ckpt": str(make_checkpoint()), "pair": str(make_checkpoint("pair"))}
    out = tmp_path / "never.html"
    assert run(["report", *[a.format(**paths) for a in args], "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err
    assert not out.exists()


# ---------------------------------------------------------------- disan.viz

@pytest.fixture
def sst5():
    return disan.load(ROOT / "checkpoints" / "sst5")


def test_viz_attention_shows_the_traced_attention(sst5):
    result = sst5.trace("Families have some dogs in front of a carousel")
    fig = viz.attention(result, scale="probability")
    assert isinstance(fig, go.Figure) and len(fig.data) == 2
    for heatmap, block in zip(fig.data, result.sentence.trace.blocks):
        expected = np.where(block.mask.numpy(), block.probs.numpy().mean(-1), np.nan)
        np.testing.assert_allclose(np.asarray(heatmap.z, dtype=float), expected, rtol=1e-6)
    one = viz.attention(result, mode=7, scale="probability")
    np.testing.assert_allclose(np.asarray(one.data[0].z, dtype=float)[3, :3],
                               result.sentence.trace.forward.probs[3, :3, 7].numpy(), rtol=1e-6)
    # by default it is the Attention page's figure: lift over uniform, P x the keys of the row
    lifted = viz.attention(result)
    forward = result.sentence.trace.forward
    np.testing.assert_allclose(np.asarray(lifted.data[0].customdata, dtype=float)[5, :5],
                               forward.probs[5, :5].numpy().mean(-1) * 5, rtol=1e-5)
    page = views.attention(result.sentence)["attention-pair"]
    assert lifted.to_plotly_json() == page.to_plotly_json()


def test_viz_figures_of_one_token_and_of_the_gates(sst5):
    result = sst5.trace("Families have some dogs in front of a carousel")
    assert "query 3: dogs" in viz.query(result, j=3).layout.title.text
    assert "query 4: in" in viz.query(result).layout.title.text  # the page's first query: the middle token
    with pytest.raises(ValueError, match="out of range"):
        viz.query(result, j=9)
    with pytest.raises(ValueError, match="attends to no token"):
        viz.query(result, j=0)  # the first token has no earlier token to attend in the forward block
    received = viz.difference(result)  # DiSAN's blocks never share a cell: what each token receives, in each
    assert [bar.name for bar in received.data] == ["forward", "backward"]
    gates = viz.gates(result)
    bars = gates.data[1]  # drawn from 0.5, so that a gate's deviation from 0.5 is the bar
    np.testing.assert_allclose(np.asarray(bars.x, dtype=float) + (bars.base or 0.0),
                               result.sentence.trace.backward.gate.numpy().mean(1), rtol=1e-6)
    importance = viz.source2token(result)
    assert np.asarray(importance.data[0].x, dtype=float).sum() == pytest.approx(1.0, abs=1e-5)


def test_viz_picks_the_hypothesis_of_a_pair_and_refuses_a_baseline(make_checkpoint):
    pair = disan.load(make_checkpoint("pair"))
    result = pair.trace(("a man is pouring tea", "the man drinks"))
    ticks = viz.attention(result, sentence="hypothesis").layout.xaxis.ticktext
    assert list(ticks) == ["the", "man", "drinks"]
    baseline = disan.load(make_checkpoint(name="bilstm", encoder="bilstm"))
    with pytest.raises(ValueError, match="no DiSA blocks"):
        viz.gates(baseline.trace("the glass"))


def test_viz_analyses_return_their_panels(sst5, tmp_path):
    text = "A gorgeous , witty film"
    knocked = viz.knockout(sst5, text, keys=[1], blocks=["forward"])
    assert "cf-knockout-forward" in knocked and "cf-knockout-backward" not in knocked
    assert list(viz.attribution(sst5, text).figures) == ["attr-measures-0"]
    table = viz.case_study(sst5, [text, "The plot is dull and the acting is worse"], resamples=50)
    assert list(table.columns) == ["holds?", "paper claim", "measured", "null", "n"]
    assert set(table["holds?"]) == {casestudy.TOO_FEW}  # two texts: measures, no verdict
    path = viz.report(sst5, text, tmp_path / "r.html")
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_report_html_escapes_every_token_and_names_the_model(make_checkpoint):
    from disan.analyses.attribution import attributed
    from disan.render.report import report_html, report_input
    pipe = disan.load(make_checkpoint())
    result = pipe.trace(report_input(pipe, HOSTILE, None))
    html = report_html(pipe, result, attributed(pipe, result.sentences, steps=4))
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>big</b>" not in html
    assert "&lt;script&gt;" in html and "tiny-classify" in html
    listed = re.search(r"Unknown words \(embedded as &lt;unk&gt;\): (.*?)</p>", html).group(1).split(", ")
    assert listed and all(re.fullmatch("“\u2068[^\u2068\u2069]+\u2069”", w) for w in listed), listed  # each isolated
    with pytest.raises(ValueError, match="hypothesis"):
        report_input(pipe, HOSTILE, "a hypothesis")


def test_the_report_command_writes_the_file_or_says_why_in_one_line(make_checkpoint, tmp_path, capsys):
    from disan.tools.report import main as report
    out = tmp_path / "r.html"
    assert report([str(make_checkpoint()), "the glass is big", "--out", str(out), "--steps", "4"]) == 0
    assert "glass" in out.read_text(encoding="utf-8") and capsys.readouterr().out.strip() == f"wrote {out}"
    assert report([str(tmp_path / "none"), "the glass", "--out", str(tmp_path / "x.html")]) == 1
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "x.html").exists()
