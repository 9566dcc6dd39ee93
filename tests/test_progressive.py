"""Analyses over growing samples (disan.analyses.progressive, disan.app.runner): the schedule, the
nested samples, and pages whose final figures are those of the direct computation over the whole corpus,
drawn again from disk after a restart without computing anything or loading the model."""
import dataclasses
import json
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
import streamlit as st

import disan
from disan.app import models as app_models
from disan.app import runner
from disan.analyses import atlas, progressive
from disan.analyses.protocol import Analysis
from disan.analyses import attribution, casestudy, corpus
from disan.render import atlas as atlas_render
from disan.render import casestudy as case_render
from disan.render import corpus as corpus_render
from disan.render.attribution import corpus_drawing

from .test_analysis_pages import PAGES, models  # noqa: F401 (a fixture: tiny checkpoints named for benchmarks)
from .test_app import app, assert_page_draws, assert_same_json, charts, decoded, visit


@pytest.mark.quick
def test_samples_grow_from_the_first_to_the_whole_corpus(monkeypatch):
    assert progressive.sizes(2000, 50, 4) == [50, 200, 800, 2000]
    assert progressive.sizes(200, 50, 4) == [50, 200]
    assert progressive.sizes(30, 50, 4) == [30]
    assert progressive.sizes(500, 0) == [500]
    monkeypatch.delenv(progressive.FIRST_ENV, raising=False)
    assert progressive.first_size(20) == 20  # an analysis's own first sample, where the environment says nothing
    monkeypatch.setenv(progressive.FIRST_ENV, "10")
    assert progressive.first_size(20) == 10
    assert [(s.number, s.count, s.size, s.final) for s in progressive.plan(100, growth=3)] == [
        (1, 4, 10, False), (2, 4, 30, False), (3, 4, 90, False), (4, 4, 100, True)]
    monkeypatch.setenv(progressive.FIRST_ENV, "many")
    with pytest.raises(ValueError, match=progressive.FIRST_ENV):
        progressive.sizes(100)
    with pytest.raises(ValueError, match="grow"):
        progressive.sizes(100, 10, 1)


@pytest.mark.quick
def test_each_sample_is_in_corpus_order_and_inside_every_larger_one():
    samples = [progressive.nested(500, size) for size in (50, 200, 500)]
    for small, large in zip(samples, samples[1:]):
        assert set(small) <= set(large)
    for sample in samples:
        assert list(sample) == sorted(set(sample))
    assert list(samples[-1]) == list(range(500))  # the last stage is the corpus itself
    assert list(progressive.nested(500, 50)) == list(samples[0])  # a function of the corpus and the size only
    assert set(progressive.nested(500, 50, seed=1)) != set(samples[0])
    with pytest.raises(ValueError, match="a sample of 600 of 500"):
        progressive.nested(500, 600)


def rows_of(words: list) -> pd.DataFrame:
    """Per-item rows as an analysis gives them: a word of one letter a row, numbered by the word's place in
    the list given; the empty word gives none."""
    return pd.DataFrame([{"item": i, "letter": letter, "at": k} for i, word in enumerate(words)
                         for k, letter in enumerate(word)], columns=["item", "letter", "at"])


@pytest.mark.quick
def test_rows_of_the_items_each_stage_adds_join_into_those_of_the_whole_sample():
    words = ["".join(np.random.default_rng(i).choice(list("abc"), i % 4)) for i in range(300)]
    frame, done = None, None
    for size in progressive.sizes(len(words), 20):
        new = progressive.added(len(words), size, done or 0)
        assert not set(new) & set(progressive.nested(len(words), done or 0))
        part = rows_of([words[i] for i in new])
        frame = part if done is None else progressive.joined(
            [(frame, progressive.nested(len(words), done)), (part, new)], "item")
        done = size
        direct = rows_of([words[i] for i in progressive.nested(len(words), size)])
        pd.testing.assert_frame_equal(frame, direct)
    with pytest.raises(ValueError, match="share"):
        progressive.joined([(rows_of(words[:3]), [0, 1, 2]), (rows_of(words[:2]), [2, 3])], "item")
    # results one per item, in the order of their places whatever order the parts come in
    assert progressive.in_order([(["c", "a"], [7, 2]), (["b", "d"], [5, 9])]) == ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="share"):
        progressive.in_order([(["a"], [1]), (["b"], [1])])


def figures_of(at, keys) -> dict:
    return {k: decoded(json.loads(v.proto.spec)) for k, v in charts(at).items() if k in keys}


@pytest.mark.usefixtures("data_root")
def test_pages_refine_to_the_direct_result_and_read_it_from_disk_after_a_restart(models, tmp_path, monkeypatch):
    monkeypatch.setenv(progressive.FIRST_ENV, "20")
    pipe = disan.load(tmp_path / "a-trec")
    trec = corpus.benchmark_corpus("trec", "test")
    at = visit(app(), PAGES["case"])
    sampled = corpus.sample(trec, corpus.SAMPLE_SENTENCES)
    paper = casestudy.measure(pipe, [pipe.trace_sentence(s).tokens for s in casestudy.PAPER_SENTENCES],
                              "the paper's sentences")
    study = casestudy.measure(pipe, sampled.tokens, sampled.name)
    assert_page_draws(at, case_render.drawing(casestudy.findings(study), paper, casestudy.findings(paper)))
    assert not at.get("progress")  # the bar and the stages' figures are gone
    computed = {PAGES["case"]: figures_of(at, set(charts(at)))}

    visit(at, PAGES["corpus"])
    words = at.selectbox(key="_corpus-word").options
    assert words == corpus.frequent_words(trec)
    senses = corpus.analyse(pipe, trec, words[0], "source2token")
    assert_page_draws(at, corpus_render.drawing(senses, "cluster", 0, corpus.neighbours(senses, 0)))
    computed[PAGES["corpus"]] = figures_of(at, set(charts(at)))

    visit(at, "app_pages/feature_atlas.py")
    direct = atlas.profile(pipe, sampled.tokens, sampled.name)
    selected = direct.position(at.selectbox(key="_atlas-block").value, at.selectbox(key="_atlas-feature").value)
    for key, fig in atlas_render.drawing(direct, atlas.overview(direct), "type", selected).figures.items():
        assert_same_json(figures_of(at, {key})[key], decoded(json.loads(fig.to_json())), key)
    computed["app_pages/feature_atlas.py"] = figures_of(at, set(charts(at)))

    visit(at, PAGES["attribution"])
    items = corpus.benchmark_items("trec", "test", 200)
    expected = corpus_drawing(attribution.summarised(attribution.corpus_agreement(pipe, items))).figures
    drawn = figures_of(at, set(expected))
    assert set(drawn) == set(expected)
    for key, fig in expected.items():
        assert_same_json(drawn[key], decoded(json.loads(fig.to_json())), key)
    computed[PAGES["attribution"]] = figures_of(at, set(charts(at)))

    # a restart: nothing in memory, nothing computed or read again, the model not loaded where the page draws
    # only kept results; every page draws what it drew, from disk
    st.cache_data.clear()
    st.cache_resource.clear()
    for name in ("measure", "findings", "analyse", "sums", "profile", "explanation", "corpus_agreement",
                 "split_corpus", "sample_items", "frequent_words", "make_corpus"):
        for module in (casestudy, corpus, atlas, attribution):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("computed again after a restart"))
    loads = []
    monkeypatch.setattr(app_models, "load", lambda path, load=app_models.load: loads.append(path) or load(path))
    again = app()
    for page in (PAGES["case"], PAGES["corpus"], "app_pages/feature_atlas.py", PAGES["attribution"]):
        st.cache_resource.clear()  # no model in memory (the first page of the session loaded one)
        loads.clear()
        after = figures_of(visit(again, page), set(charts(again)))
        assert list(after) == list(computed[page])
        for key in after:
            assert_same_json(computed[page][key], after[key], key)
        # only the Attribution page loads the model: the sidebar's sentence is traced and attributed above it
        assert bool(loads) == (page == PAGES["attribution"]), page
    # the corpus's word list, read back without classifying its words again
    assert visit(again, PAGES["corpus"]).selectbox(key="_corpus-word").options == words


@dataclasses.dataclass(frozen=True)
class SquaresAnalysis(Analysis):
    """A toy additive analysis: the sum of the squares of the items of a sample, and how many there were."""
    items: tuple
    name: ClassVar[str] = "squares"
    additive: ClassVar[bool] = True

    def total(self) -> int:
        return len(self.items)

    def settings(self) -> dict:
        return {"items": list(self.items)}

    def part(self, pipe, places):
        return (sum(self.items[i] ** 2 for i in places), len(places))

    def join(self, parts):
        return (sum(p[0] for p, _ in parts), sum(p[1] for p, _ in parts))

    def finish(self, part, size):
        return {"sum": part[0], "n": part[1], "of": self.sample_name("squares", size)}


@pytest.mark.quick
def test_an_additive_analysis_computes_a_sample_from_its_parts_and_the_whole_directly():
    toy = SquaresAnalysis(tuple(range(1, 11)))
    whole = toy.compute(None, 10)
    assert whole == {"sum": sum(v * v for v in range(1, 11)), "n": 10, "of": "squares"}
    # a stage's sample is nested in the next, and its result is computed from the items at its places
    small, large = toy.places(4), toy.places(8)
    assert set(small) <= set(large) and len(small) == 4
    assert toy.compute(None, 4) == {"sum": sum(toy.items[i] ** 2 for i in small), "n": 4, "of": "squares [4 of 10]"}
    # joined parts of disjoint samples are the part of their union
    new = np.setdiff1d(large, small)
    joined = toy.join([(toy.part(None, small), small), (toy.part(None, new), new)])
    assert toy.finish(joined, 8) == toy.compute(None, 8)
    with pytest.raises(NotImplementedError):  # an analysis that is not additive must say how it computes
        Analysis().compute(None, 1)


@pytest.mark.quick
def test_a_result_key_names_the_model_the_analysis_its_settings_and_the_sample(make_checkpoint):
    path = str(make_checkpoint("classify", name="m"))
    other = str(make_checkpoint("classify", name="n", labels=["x", "y", "z", "w"]))
    toy = SquaresAnalysis((1, 2, 3))
    key = runner.key(toy, path)
    assert key == runner.key(SquaresAnalysis((1, 2, 3)), path) == runner.key(toy, path, 3)
    assert len({key, runner.key(toy, path, 2), runner.key(SquaresAnalysis((1, 2, 4)), path),
                runner.key(toy, other)}) == 4
    derived = runner.derived_key(key, "findings", resamples=10)
    assert derived != runner.derived_key(key, "findings", resamples=20) != key
