"""App latency: the trace plus every figure of a page for one sentence, once the model is loaded.

    python -m disan latency [CHECKPOINT] [--tokens 30] [--repeats 20]

A page's figures are its view in :data:`disan.explore.views.VIEWS` with the page's default options,
the very function the page calls; they are also serialised to JSON as Streamlit does
(``plotly.io.to_json(figure, validate=False)``) before sending them to the browser.
"""
from __future__ import annotations

import argparse
import statistics
import time

import plotly.io
import torch

from disan.explore.catalog import list_checkpoints
from disan.explore.pipeline import load
from disan.explore.views import VIEWS

SENTENCE = ("families have some dogs in front of a carousel while a man is pouring a glass of tea and "
            "the volleyball match is in progress between ladies near the big fountain at the restaurant")


def measure(path: str, n_tokens: int, repeats: int) -> list[tuple[str, float, float]]:
    """(page, median trace ms, median trace + figures + JSON ms) for every view in VIEWS."""
    pipe = load(path)
    torch.set_num_threads(1)  # as the app runs it (see app.py)
    words = SENTENCE.split()
    text = " ".join((words * (n_tokens // len(words) + 1))[:n_tokens])
    pipe.trace_sentence(text)  # warm-up: first-call allocations, spaCy load
    rows = []
    for page, view in VIEWS.items():
        times, trace_times = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            sentence = pipe.trace_sentence(text)
            t1 = time.perf_counter()
            for fig in view.draw(sentence, view.options()).figures.values():
                plotly.io.to_json(fig, validate=False)
            times.append(time.perf_counter() - t0)
            trace_times.append(t1 - t0)
        rows.append((page, 1e3 * statistics.median(trace_times), 1e3 * statistics.median(times)))
    return rows


def main(argv=None) -> None:
    """``python -m disan latency [CHECKPOINT]``: the latency table of every registered view."""
    parser = argparse.ArgumentParser(prog="python -m disan latency", description=__doc__.split("\n\n")[0])
    ok = [e for e in list_checkpoints() if e.ok and e.kind == "classify"]
    parser.add_argument("checkpoint", nargs="?", default=str(ok[0].path) if ok else None)
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    if args.checkpoint is None:
        parser.error("no checkpoint found; name one")
    print(f"checkpoint {args.checkpoint}, {args.tokens} tokens, median of {args.repeats}")
    print("| page | trace (ms) | trace + figures + JSON (ms) |\n|---|---:|---:|")
    for page, trace_ms, total_ms in measure(args.checkpoint, args.tokens, args.repeats):
        print(f"| {page} | {trace_ms:.1f} | {total_ms:.1f} |")


if __name__ == "__main__":
    main()
