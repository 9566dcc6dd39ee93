"""What ``disan analysis-bench`` runs (its arguments: :mod:`disan.tools.parsers.analysis_bench`):

    python -m disan analysis-bench [--checkpoint DIR] [--occurrences 1000] [--sentences 2000]
                                   [--only senses|case|atlas|faithfulness|startup]

* Corpus senses: :func:`disan.analyses.corpus.analyse` on ``--occurrences`` occurrences of a
  word (default: "film" in the SST train sentences), for each vector kind, with k picked by silhouette
  (k = 2..8) and with k chosen: vectors on the fast path, PCA, k-means. Target: 1,000 in 5 s or less.
* Case study: :func:`disan.analyses.casestudy.measure` on ``--sentences`` sentences of the test
  split (a seeded sample), then the claims and the page's figures. Target: 2,000 in 60 s or less.
* Feature atlas: :func:`disan.analyses.atlas.profile` on the same sentences (every feature of every
  block measured, typed with k by silhouette, mapped), then the page's other steps. Target: 2,000 in
  30 s or less.
* Faithfulness: :mod:`disan.analyses.faithfulness` on ``--faith-sentences`` test inputs (default
  500): the page's first stage (erasure over its first sample's inputs), erasure with every explanation, the
  interventions and their sum; then the cascade on ``--cascade-sentences`` (default 100). Targets: the
  first numbers within 5 s, erasure and interventions on 500 SST-5 sentences in 180 s, the cascade in
  120 s, on one core: run it as ``OMP_NUM_THREADS=1 python -m disan analysis-bench --only faithfulness``.
* Start-up: what a fresh server pays before any model runs: importing the modules a page imports (in a
  fresh interpreter, saying whether spaCy came with them), and reading the checkpoint's test split alone
  beside reading every split, as the pages did before.

Torch runs on one thread, as in the app. The machine's load average is printed with the figures, since
other work on the machine slows every figure.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import torch

from disan.data.choices import SPLITS
from disan.data.registry import load_task
from disan.analyses import atlas, progressive
from disan.analyses import casestudy, corpus, explainers, faithfulness, stats
from disan.inspect.catalog import default_checkpoint
from disan.inspect.pipeline import load
from disan.render import atlas as atlas_render
from disan.render import casestudy as case_render
from disan.nn import kernels
from disan.tools.parsers.analysis_bench import ANALYSES, parser


def _median_times(run, repeats: int) -> tuple[float, float]:
    """Median wall-clock seconds and median CPU seconds of this process (what the run cost, whatever
    else shares the cores) over ``repeats`` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def _median_seconds(run, repeats: int) -> float:
    return _median_times(run, repeats)[0]


def _load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def senses_rows(pipe, chosen: corpus.Corpus, word: str, n: int, repeats: int) -> list[tuple[str, str, float]]:
    """(vector kind, how k is set, median seconds) of :func:`corpus.analyse` on ``n`` occurrences."""
    found = len(corpus.occurrences(chosen, word, n))
    if found < n:
        raise ValueError(f"{word!r} occurs only {found} times in {chosen.name}; choose another word or fewer")
    corpus.analyse(pipe, chosen, word, "source2token", k=2, limit=50)  # warm-up: kernel, allocations
    rows = []
    for kind in pipe.vector_kinds:
        for k, how in ((None, "by silhouette (2..8)"), (3, "chosen (3)")):
            rows.append((kind, how, _median_seconds(lambda: corpus.analyse(pipe, chosen, word, kind, k, n), repeats)))
    return rows


def case_rows(pipe, chosen: corpus.Corpus, repeats: int) -> list[tuple[str, float]]:
    """(step, median seconds) of the case study on the corpus."""
    study = None

    def measure():
        nonlocal study
        study = casestudy.measure(pipe, chosen.tokens, chosen.name)
    rows = [("trace and measure", _median_seconds(measure, repeats))]
    rows.append((f"claims and figures ({stats.RESAMPLES:,} bootstrap resamples)",
                 _median_seconds(lambda: case_render.drawing(casestudy.findings(study)), repeats)))
    return rows


def atlas_rows(pipe, chosen: corpus.Corpus, repeats: int) -> list[tuple[str, float, float]]:
    """(step, median seconds, median CPU seconds) of the feature atlas on the corpus."""
    result = None

    def measure():
        nonlocal result
        result = atlas.profile(pipe, chosen.tokens, chosen.name)
    rows = [("trace, profile every feature, types (k by silhouette, 2..8), map", *_median_times(measure, repeats))]
    rows.append(("types with k chosen (4)", *_median_times(lambda: atlas.assign_types(result, 4), repeats)))
    rows.append(("map, counts and mirroring",
                 *_median_times(lambda: atlas_render.drawing(result, atlas.overview(result)), repeats)))
    block, k = result.blocks[0], 0
    rows.append(("one feature explained (its sharpest sentences traced)",
                 *_median_times(lambda: atlas_render.explained(atlas.explanation(pipe, result, chosen.texts,
                                                                                  block, k)), repeats)))
    rows.append(("search for a word", *_median_times(lambda: atlas.search(result, "not"), repeats)))
    return rows


def faithfulness_rows(pipe, items: list, cascade_items: list) -> list[tuple[str, float, float]]:
    """(step, seconds, CPU seconds) of the faithfulness checks, each run once (they take minutes): the
    page's first stage, erasure and interventions over ``items`` and their sum (the issue's 180 s), and the
    cascade over ``cascade_items`` (its 120 s); the explanations the page runs."""
    settings = faithfulness.Settings(explainers=explainers.on_pages())
    first = [items[i] for i in progressive.nested(len(items), min(faithfulness.FIRST, len(items)))]

    def erasure(chosen):
        return faithfulness.erasure_summary(faithfulness.erasure_records(pipe, chosen, settings), settings)
    rows = [(f"the page's first stage: erasure of {len(first)} inputs", *_median_times(lambda: erasure(first), 1))]
    erased = _median_times(lambda: erasure(items), 1)
    intervened = _median_times(lambda: faithfulness.intervention_summary(
        faithfulness.intervention_records(pipe, items, settings), len(items), settings), 1)
    rows += [(f"erasure, every explanation (explanations included), {len(items)} inputs", *erased),
             (f"interventions, every block, {len(items)} inputs", *intervened),
             (f"erasure and interventions, {len(items)} inputs (target 180 s)",
              erased[0] + intervened[0], erased[1] + intervened[1]),
             (f"cascading randomisation, {len(cascade_items)} inputs (target 120 s)",
              *_median_times(lambda: faithfulness.cascade(pipe, cascade_items, settings), 1))]
    return rows


# What a page imports before it draws anything, timed in a fresh interpreter, where nothing is imported yet.
PAGE_IMPORTS = ("import sys, time\nstart = time.process_time()\nimport disan.app.opening, disan.app.analyses\n"
                "print(time.process_time() - start, 'spacy' in sys.modules)")


def startup_rows(task: str, repeats: int) -> list[tuple[str, float]]:
    """(step, CPU seconds) of a fresh server's start before any model runs: the pages' imports, and reading a
    benchmark's test split alone and with the other splits (median of ``repeats``)."""
    done = subprocess.run([sys.executable, "-c", PAGE_IMPORTS], capture_output=True, text=True, check=True)
    seconds, spacy = done.stdout.split()
    rows = [(f"importing disan.app.opening and disan.app.analyses (spaCy imported: {spacy == 'True'})",
             float(seconds))]
    for splits in (SPLITS, ("test",)):
        cpu = _median_times(lambda: load_task(task, phrases=False, splits=splits), repeats)[1]
        rows.append((f"reading {task}'s {', '.join(splits)}", cpu))
    return rows


def main(argv=None) -> None:
    """``python -m disan analysis-bench``: time corpus senses, the case study and the feature atlas, printing
    tables."""
    p = parser()
    args = p.parse_args(argv)
    args.checkpoint = args.checkpoint or default_checkpoint()
    if args.checkpoint is None:
        p.error("no checkpoint found; name one")
    torch.set_num_threads(1)  # as the app runs it
    pipe = load(args.checkpoint)
    args.task = args.task or pipe.task
    # every step on one path: the C++ kernel built first where it can be
    print(f"checkpoint {args.checkpoint}; token2token kernel {kernels.resolve(wait=True)}; torch threads 1; "
          f"{os.cpu_count()} CPUs; median of {args.repeats}; load average before {_load()}")
    wanted = [args.only] if args.only else ANALYSES
    if "startup" in wanted:
        print("Start-up, before any model runs\n\n| step | CPU seconds |\n|---|---:|")
        for step, cpu in startup_rows(args.task, args.repeats):
            print(f"| {step} | {cpu:.2f} |")
        print()
    if "senses" in wanted:
        start = time.perf_counter()
        train = corpus.benchmark_corpus(args.task, "train")
        print(f"reading and tokenising {len(train)} {args.task} train sentences: {time.perf_counter() - start:.2f} s "
              f"(once per corpus, cached by the page)\n")
        print(f"Corpus senses: {args.occurrences} occurrences of {args.word!r}\n")
        print("| vector | k | seconds |\n|---|---|---:|")
        for kind, how, seconds in senses_rows(pipe, train, args.word, args.occurrences, args.repeats):
            print(f"| {kind} | {how} | {seconds:.2f} |")
    if "faithfulness" in wanted:
        items = corpus.benchmark_items(args.task, "test", args.faith_sentences)
        print(f"\nFaithfulness: {len(items)} test inputs of {args.task} (cascade: the first {args.cascade_sentences}); "
              f"each step once\n")
        print("| step | seconds | CPU seconds |\n|---|---:|---:|")
        for step, seconds, cpu in faithfulness_rows(pipe, items, items[:args.cascade_sentences]):
            print(f"| {step} | {seconds:.2f} | {cpu:.2f} |")
    if not {"case", "atlas"} & set(wanted):
        print(f"\nload average after {_load()}")
        return
    test = corpus.sample(corpus.benchmark_corpus(args.task, "test"), args.sentences)
    tokens = sum(len(t) for t in test.tokens)
    if "case" in wanted:
        print(f"\nCase study: {len(test)} sentences of {test.name}, {tokens} tokens\n")
        print("| step | seconds |\n|---|---:|")
        for step, seconds in case_rows(pipe, test, args.repeats):
            print(f"| {step} | {seconds:.2f} |")
    if "atlas" in wanted:
        print(f"\nFeature atlas: {len(test)} sentences of {test.name}, {tokens} tokens\n")
        print("| step | seconds | CPU seconds |\n|---|---:|---:|")
        for step, seconds, cpu in atlas_rows(pipe, test, args.repeats):
            print(f"| {step} | {seconds:.2f} | {cpu:.2f} |")
    print(f"\nload average after {_load()}")


if __name__ == "__main__":
    main()
