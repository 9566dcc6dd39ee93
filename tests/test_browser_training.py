"""Bring your own data in Chromium: upload a small CSV on the Training page, see its preview, column pickers
and label balance, train a tiny model on it, and trace the new model on the Attention page. The app runs
with no benchmark data folder at all, an empty uploads folder and an empty checkpoints folder; screenshots
are saved under test-artifacts/screenshots/."""
import csv
import json
from pathlib import Path

import pytest

from disan.tools.browser import CHROMIUM, VIEWPORT, chromium, navigate, server, wait_drawn, wait_idle

from .test_browser import SHOTS, no_exception, texts

GOOD = ["a wonderful moving story", "great acting and a fine plot", "superb and funny", "brilliant work",
        "charming and warm", "beautifully made"]
BAD = ["a dull boring story", "bad acting and a weak plot", "awful and tedious", "terrible work",
       "cold and lifeless", "poorly made"]


@pytest.fixture
def app_url(tmp_path):
    uploaded, ckdir = tmp_path / "uploads", tmp_path / "checkpoints"
    ckdir.mkdir()
    env = {"DISAN_DATA_DIR": str(tmp_path / "no-data"), "DISAN_UPLOADS": str(uploaded),
           "DISAN_CHECKPOINTS": str(ckdir)}
    with server(env) as (_, address):
        yield address, uploaded, ckdir


def reviews(path: Path) -> Path:
    """60 short rows of two classes, an id column first, so that the text column must be picked."""
    rows = [(f"r{i}", text, label) for i, (text, label) in
            enumerate([(t, "positive") for t in GOOD] * 5 + [(t, "negative") for t in BAD] * 5)]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "review", "sentiment"])
        writer.writerows(rows)
    return path


def pick(page, label: str, option: str) -> None:
    """Choose an option of the main area's select box with this label, as a user does."""
    page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').filter(has_text=label).first.click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_idle(page)


def fill(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Tab")


def test_an_uploaded_file_trains_a_model_that_the_attention_page_traces(app_url, tmp_path):
    url, uploaded, ckdir = app_url
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium(CHROMIUM) as browser:
        page = browser.new_page(viewport={**VIEWPORT, "height": 2400})  # the whole form in a screenshot
        page.goto(url)
        page.get_by_role("heading", name="Token2token attention").first.wait_for(timeout=120_000)
        wait_idle(page)
        assert "No checkpoint yet" in page.locator('[data-testid="stSidebar"]').inner_text()
        navigate(page, "Training")
        page.get_by_role("heading", name="Training").first.wait_for(timeout=120_000)
        wait_idle(page)
        page.locator('[data-testid="stRadio"]').get_by_text("a file of your own", exact=True).click()
        wait_idle(page)
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(reviews(tmp_path / "my reviews.csv")))
        wait_drawn(page, "label balance of uploads/my_reviews.csv")
        wait_idle(page)  # the table's own browser code may still be loading once the figure is drawn
        no_exception(page)
        assert (uploaded / "my_reviews.csv").read_bytes() == (tmp_path / "my reviews.csv").read_bytes()
        assert "The first 20 rows of uploads/my_reviews.csv" in texts(page, '[data-testid="stCaptionContainer"]')
        assert page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').count() == 1
        pickers = texts(page, '[data-testid="stMain"] [data-testid="stSelectbox"] label')
        assert {"Text column", "Second text column", "Label column", "Kind"} <= set(pickers), pickers
        second = page.locator('[data-testid="stSelectbox"]').filter(has_text="Second text column").locator("input")
        assert second.first.input_value() == "none (one text)"
        page.screenshot(path=str(SHOTS / "training-own-file-guessed.png"))

        pick(page, "Text column", "review")  # the guess was the first column, "id"
        wait_drawn(page, "label balance of uploads/my_reviews.csv: 60 rows, 2 classes")
        assert "60 rows: 48 to train on, 6 dev and 6 test" in " ".join(
            texts(page, '[data-testid="stCaptionContainer"]'))
        bars = page.locator('.js-plotly-plot .bars .point')
        assert bars.count() == 2
        page.screenshot(path=str(SHOTS / "training-own-file.png"))

        assert f"Models are saved in {ckdir}," in " ".join(texts(page, '[data-testid="stCaptionContainer"]'))
        fill(page, "Epochs", "1")
        fill(page, "d_h", "8")
        fill(page, "Checkpoint name", "mine")
        fill(page, "Word vectors", "glove-50d")
        page.get_by_role("button", name="Start").click()
        page.get_by_role("heading", name="Job mine: done").first.wait_for(timeout=300_000)
        wait_idle(page)
        no_exception(page)
        page.get_by_role("heading", name="Evaluation on the test split").first.wait_for(timeout=120_000)
        page.screenshot(path=str(SHOTS / "training-own-file-done.png"))
        config = json.loads((ckdir / "mine" / "config.json").read_text())
        assert config["data"]["files"]["data"]["path"] == str((uploaded / "my_reviews.csv").resolve())
        assert config["data"]["columns"] == {"text": "review", "text_b": None, "label": "sentiment"}

        navigate(page, "Attention")
        page.get_by_role("heading", name="Token2token attention").first.wait_for(timeout=120_000)
        wait_drawn(page, "· query ")
        no_exception(page)
        model = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"] input').first.input_value()
        assert model.startswith("mine"), model
        assert page.locator(".js-plotly-plot .heatmaplayer").count() >= 2
        page.screenshot(path=str(SHOTS / "attention-own-file-model.png"))
        page.close()
