"""What the app shares, through Streamlit's AppTest: the input's HTML report, which the pages download, is the
file `disan report` writes."""
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from disan.__main__ import run

from .test_app import app, checkpoints, visit  # noqa: F401 (fixture)


@pytest.mark.parametrize("page", ["app_pages/attention.py", "app_pages/attribution.py"])
def test_the_pages_report_is_the_file_disan_report_writes(checkpoints, monkeypatch, tmp_path, page):
    made = {}  # the download buttons' data, made only when clicked: the function each button is given
    add = MediaFileManager.add_deferred

    def kept(self, data, mimetype, coordinates, file_name=None, **kwargs):
        made[file_name] = data
        return add(self, data, mimetype, coordinates, file_name=file_name, **kwargs)
    monkeypatch.setattr(MediaFileManager, "add_deferred", kept)
    text = "the man is pouring <b>tea</b>"
    visit(app(checkpoint="a-sentiment", text=text), page)
    out = tmp_path / "report.html"
    assert run(["report", str(checkpoints / "a-sentiment"), text, "--out", str(out)]) == 0
    assert made["disan-report-a-sentiment.html"]() == out.read_bytes()
