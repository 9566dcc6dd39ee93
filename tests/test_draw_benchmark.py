"""``python -m disan latency --draw`` in Chromium. A module of its own: Playwright's sync API runs one
browser per thread, and the other browser modules hold theirs open for the whole module."""
import pytest

from disan.render import views
from disan.inspect.pipeline import Pipeline
from disan.nn import checkpoint
from disan.tools import browser, latency

from .conftest import LABELS, make_model


@pytest.mark.usefixtures("data_root")  # the maps of Corpus senses and the Feature atlas read trec's test split
def test_the_draw_benchmark_draws_every_figure_the_pages_draw(tmp_path, capsys):
    model, vocab = make_model("classify")
    path = tmp_path / "tiny-trec"
    checkpoint.save(path, model, vocab, {"task": "trec", "kind": "classify", "labels": LABELS["classify"]},
                    {"test": {"accuracy": 0.5}}, "# tiny\n")
    latency.main([str(path), "--draw", "--tokens", "12", "--repeats", "1"])
    rows = [line.strip("| ").split(" | ") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ") and not line.startswith("| figure")]
    drawn = {key: (traces, float(ms)) for key, traces, _, ms in rows}
    traced = Pipeline(model, vocab, {}, {}).trace_sentence(browser.sentence(12))
    pages = {key for view in views.VIEWS.values() for key in view.draw(traced, view.options()).figures}
    assert set(drawn) == pages | {"corpus-scatter", "atlas-map"}
    assert all(ms > 0 for _, ms in drawn.values())
    # the maps' points as SVG markers, not WebGL
    assert drawn["corpus-scatter"][0].endswith(" scatter") and drawn["atlas-map"][0].endswith(" scatter")


def test_the_restart_floor_waits_for_the_bare_page_s_figure_after_each_restart(monkeypatch):
    # a bare page whose figure comes 4 s after each session's script run starts (the page alone draws in about
    # 1.5 s): every time measured spans the wait, so each restart is timed to the drawn figure of a session of
    # its own, not to the page's loading
    slow = latency.BARE_PAGE.replace("st.plotly_chart(", "time.sleep(4.0)\nst.plotly_chart(")
    assert slow != latency.BARE_PAGE
    monkeypatch.setattr(latency, "BARE_PAGE", "import time\n" + slow)
    seconds = latency.bare_restarts()
    assert set(seconds) == set(latency.RESTARTS)
    assert all(4.0 <= s < 60 for s in seconds.values())
