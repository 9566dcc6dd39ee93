"""The README's screenshots: the app's default views in Chromium at 1600x1000, saved as small PNGs in docs/.

    python scripts/screenshots.py
"""
import io
import sys
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from disan.tools.latency import VIEWPORT, chromium, server, wait_drawn  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"
# (file, path of the page, a figure title to wait for, the element to scroll to the top)
SHOTS = [
    ("attention.png", "/", "· query ", "[data-testid='stMain'] [data-testid='stRadio']"),
    ("attention-features.png", "/", "· query ", "h3:has-text('Sharpest features')"),
    ("gates.png", "/gates", "fusion gate F", "[data-testid='stHtml']"),
    ("word-senses.png", "/word_senses", "“glass”", "h2"),
]


def save(png: bytes, path: Path) -> None:
    """A screenshot with its colours reduced to a palette: a quarter of the size, the same to the eye."""
    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256).save(path, optimize=True)


def main() -> None:
    with server() as (_, url), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        for name, path, title, top in SHOTS:
            page.goto(url + path)
            wait_drawn(page, title)
            page.locator(top).first.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(1000)  # plotly's transitions
            save(page.screenshot(), DOCS / name)
            print(DOCS / name)


if __name__ == "__main__":
    main()
