"""The screenshots of the README and the documentation: the app's views in Chromium at 1600x1000, with its defaults or the widgets set as
their captions say, saved as small PNGs in docs/.

    python scripts/screenshots.py [NAME.png ...]   # all of them, or only those named
"""
import io
import sys
import tempfile
from functools import partial
from pathlib import Path
from urllib.parse import quote

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from disan.data.paths import REPO_ROOT
from disan.__main__ import run
from disan.inspect.senses import VECTORS
from disan.tools.browser import VIEWPORT, choose, chromium, server, wait_drawn

DOCS = REPO_ROOT / "docs"
# the model of the shots whose path names none: the app's default is the first single-sentence model by name,
# which the 2-class model (TWO_CLASS) would be
MODEL = "sst5"
# the analyses' example for one sentence (docs/analyses/), as a link's text (the sidebar's model: MODEL)
EXAMPLE = "?text=" + quote("A gorgeous , witty film that nobody should miss")
# a 2-class model as a user trains one: customer reviews (CR), 1,500 training sentences, 2 epochs
TWO_CLASS = "cr-small"
TWO_CLASS_RUN = ["train", "--task", "cr", "--max-train", "1500", "--epochs", "2", "--d-h", "60", "--no-tensorboard"]


def type_option(page, label: str, option: str) -> None:
    """Type an option into the select box labelled ``label`` and take it, as a user does."""
    box = page.locator("[data-testid='stSelectbox']", has_text=label).locator("input").first
    box.click()
    box.fill(option)
    box.press("Enter")


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()


# (file, path of the page, a figure title to wait for, the element to scroll to the top, and the
# widgets to set first: (what a user does, a figure title that shows it is drawn))
SHOTS = [
    ("attention.png", "/", "· query ", "[data-testid='stMain'] [data-testid='stRadio']", ()),
    ("attention-features.png", "/", "· query ", "h3:has-text('Sharpest features')", ()),
    ("gates.png", "/gates", "fusion gate F", "[data-testid='stHtml']", ()),
    ("word-senses.png", "/word_senses", "“glass”", "h2", ()),
    ("corpus-senses.png", "/corpus_senses", " occurrences, ", "[data-testid='stMain'] [data-testid='stSelectbox']",
     ((partial(type_option, label="Word", option="like"), "“like” in sst5 test"),
      (partial(choose, option=VECTORS["output"]), "occurrences, outputs u"))),
    ("counterfactuals.png", "/counterfactuals" + EXAMPLE, "after − before",
     "[data-testid='stMain'] [data-testid='stMultiSelect']",
     ((partial(open_tab, name="Attention knockout"), "with the knockout"),)),
    ("attribution.png", "/attribution" + EXAMPLE, "beside attention", "h2", ()),
    ("compare-models.png", "/compare_models" + EXAMPLE, "A · forward", "h2",
     ((partial(type_option, label="Model B", option="trec"), "B · forward"),)),  # as docs/analyses/ says
    ("case-study.png", "/case_study", "by word class", "h2", ()),
    ("feature-atlas.png", "/feature_atlas", "attention features of",
     "[data-testid='stRadio']:has-text('Colour the map by')", ()),
    ("faithfulness.png", "/faithfulness?model=sst5", "Erasure over", "h2", ()),
    # a sentence-pair model: premise and hypothesis side by side, each figure fitted to half the width
    ("pair-attention.png", "/?model=sick-e", "· query ", "h3:has-text('Premise')", ()),
    ("pair-features.png", "/?model=sick-e", "· query ", "h3:has-text('Sharpest features')", ()),
    ("pair-gates.png", "/gates?model=sick-e", "fusion gate F", "h3:has-text('Every feature')", ()),
    ("pair-counterfactuals.png", "/counterfactuals?model=sick-e", "after − before",
     "[data-testid='stMain'] [data-testid='stMultiSelect']", ()),
    # a 2-class model of one's own (TWO_CLASS): its prediction charts and attribution
    ("two-class-counterfactuals.png", f"/counterfactuals?model={TWO_CLASS}&" + EXAMPLE[1:], "after − before",
     "[data-testid='stMain'] [data-testid='stMultiSelect']", ()),
    ("two-class-attribution.png", f"/attribution?model={TWO_CLASS}&" + EXAMPLE[1:], "beside attention", "h2", ()),
]


def save(png: bytes, path: Path) -> None:
    """A screenshot with its colours reduced to a palette: a quarter of the size, the same to the eye."""
    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256).save(path, optimize=True)


def checkpoints(folder: Path) -> Path:
    """The shipped checkpoints (linked) and the 2-class model (trained here once) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for shipped in (REPO_ROOT / "checkpoints").iterdir():
        if shipped.is_dir() and not (folder / shipped.name).exists():
            (folder / shipped.name).symlink_to(shipped)
    if not (folder / TWO_CLASS).exists() and run([*TWO_CLASS_RUN, "--out", str(folder / TWO_CLASS)]) != 0:
        raise SystemExit(f"cannot train {TWO_CLASS}")
    return folder


def main() -> None:
    folder = checkpoints(Path(tempfile.gettempdir()) / "disan-screenshots")
    with server({"DISAN_CHECKPOINTS": str(folder)}) as (_, url), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        # the first run loads the models and builds the kernel: the shots after it are drawn at their usual pace
        page.goto(f"{url}/?model={MODEL}")
        wait_drawn(page, "· query ")
        for name, path, title, top, steps in SHOTS:
            if sys.argv[1:] and name not in sys.argv[1:]:
                continue
            page.goto(url + path + ("" if "model=" in path else ("&" if "?" in path else "?") + f"model={MODEL}"))
            wait_drawn(page, title)
            for step, drawn in steps:
                step(page)
                page.wait_for_timeout(500)  # let the rerun start, so that the last one's idle state is not taken
                wait_drawn(page, drawn)
            page.locator(top).first.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.mouse.move(0, 0)  # off the figures: a hovered plotly figure shows its tool bar
            page.wait_for_timeout(1000)  # plotly's transitions
            save(page.screenshot(), DOCS / name)
            print(DOCS / name)


if __name__ == "__main__":
    main()
