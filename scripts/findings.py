"""The figures the analysis pages of the documentation quote (docs/analyses/*.md, "What it showed"), recomputed
on the shipped checkpoints, as markdown.

    OMP_NUM_THREADS=1 nice -n 10 python scripts/findings.py [section ...] > findings.out

Every number comes from the functions the analysis pages call, with the pages' defaults (the test
split, k by silhouette, 200 sampled inputs, up to 2,000 sentences, the same seeds), so each can be
checked on the page. Two figures are not on a page: the τ of raw probabilities between two models
(beside its null, to show why the page compares lifts) and the correlation of PC 1 with the position.
"""
import functools
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from disan.data.paths import shipped_checkpoints
from disan.analyses import atlas
from disan.render import views
from disan.render.casestudy import claims_table
from disan.analyses import attribution, casestudy, compare, corpus, explainers, faithfulness, gradients
from disan.analyses import counterfactual as cf
from disan.inspect import measures
from disan.inspect.pipeline import load
from disan.nn.checkpoint import WEIGHTS

CHECKPOINTS = shipped_checkpoints()
SENTENCE = "A gorgeous , witty film that nobody should miss"  # the analyses' example for a single sentence (docs/analyses/)


@functools.cache
def pipeline(name: str):
    return load(CHECKPOINTS / name)


def test_sample(pipe, n: int) -> corpus.Corpus:
    """The pages' default corpus: the checkpoint's own test split, a seeded sample of up to ``n`` sentences."""
    return corpus.sample(corpus.trained_corpus(pipe.config, "test"), n)


def markdown(frame: pd.DataFrame) -> str:
    """A table as markdown, floats to 3 decimals (pandas' to_markdown needs tabulate, which the app lacks)."""
    cells = frame.astype(object).map(lambda v: f"{v:.3f}" if isinstance(v, float) else str(v))
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + " --- |" * len(frame.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells.itertuples(index=False)])


def corpus_senses() -> None:
    print("## Corpus senses (sst5, SST-5 test split, outputs u, k by silhouette)\n")
    pipe = pipeline("sst5")
    test = corpus.trained_corpus(pipe.config, "test")
    for word in ("like", "film"):
        result = corpus.analyse(pipe, test, word, "output")
        t = result.table
        silhouettes = ", ".join(f"{k}: {s:.3f}" for k, s in result.silhouettes.items())
        print(f"### “{word}”: {len(t)} occurrences, k = {result.k} (silhouette {silhouettes})\n")
        print(f"PC 1 and PC 2 explain {result.explained[0]:.1%} and {result.explained[1]:.1%} (unit vectors); "
              f"r(PC 1, position) = {np.corrcoef(t.pc1, t.position)[0, 1]:+.2f} (each PC signed so that its "
              f"largest loading is positive)\n")
        clusters = t.groupby("cluster").agg(size=("position", "size"), first=("position", "min"),
                                            last=("position", "max"), median=("position", "median"))
        print(markdown(clusters.reset_index()) + "\n")
        # the gold labels in the order of the scale, so that a split by sentiment would show as a diagonal
        gold = pd.crosstab(t.cluster, pd.Categorical(t.label, pipe.labels), dropna=False)
        print(markdown(gold.reset_index()) + "\n")
        print("Contexts of the smallest cluster (first 5):\n")
        smallest = int(clusters["size"].idxmin())
        for context in t[t.cluster == smallest].context.head(5):
            print(f"- {context}")
        print()


def counterfactuals() -> None:
    print(f"## Counterfactuals (sst5, “{SENTENCE}”)\n")
    pipe = pipeline("sst5")
    result = pipe.trace(SENTENCE)
    sentences, label = result.sentences, result.prediction.label
    before = result.prediction.probs[label]
    tokens = sentences[0].tokens
    print(f"Prediction: {label} ({before:.3f})\n")
    print("Occlusion (the probability of the predicted class without each token):\n")
    print(markdown(cf.occlusion(pipe, sentences, 0)) + "\n")
    gorgeous = tokens.index("gorgeous")
    for op, replacement in (("replace", "dreadful"), ("mask", None)):
        after = cf.compare_edit(pipe, sentences, 0, cf.edit(tokens, op, gorgeous, replacement)).prediction_after
        print(f"- {op} “gorgeous”{' with “' + replacement + '”' if replacement else ''}: {after.label} "
              f"({after.probs[after.label]:.3f}; {label} {after.probs[label]:.3f})")
    names = views.block_names(sentences[0].trace)
    for blocks in (names, *([name] for name in names)):
        after = cf.knockout(pipe, sentences, 0, blocks, [gorgeous]).prediction_after
        print(f"- every edge into “gorgeous” knocked out in {' and '.join(blocks)}: {label} "
              f"{before:.3f} → {after.probs[label]:.3f} ({after.probs[label] - before:+.3f}; "
              f"predicted {after.label})")
    print()


def attributions() -> None:
    print("## Attribution (mean τ over 200 sampled test inputs; a pair gives a row per sentence)\n")
    attr = gradients.attribute(pipeline("sst5"), pipeline("sst5").trace(SENTENCE).sentences)
    print(f"Completeness on “{SENTENCE}” (sst5): f(x) = {attr.value:.4f}, f(baseline) = {attr.baseline:.4f}, "
          f"relative error {attr.completeness_gap:+.4%}\n")
    for name in ("sst5", "trec", "sick-e"):
        pipe = pipeline(name)
        frame = attribution.corpus_agreement(pipe, corpus.benchmark_items(pipe.task, "test", 200))
        summary = attribution.summarised(frame).summary
        # the page's "method | measure" column as two, so that its bar does not split a markdown cell
        pairs = summary.pop("attribution | attention").str.split(" | ", regex=False)
        summary.insert(0, "attention", pairs.str[1])
        summary.insert(0, "attribution", pairs.str[0])
        print(f"### {name}\n")
        print(markdown(summary) + "\n")


def compare_models() -> None:
    print(f"## Compare models (sst5 against trec, “{SENTENCE}”)\n")
    sides = []
    for name in ("sst5", "trec"):
        result = pipeline(name).trace(SENTENCE)
        sides.append(compare.Side(name, pipeline(name).model.cfg.encoder, result.prediction, result.sentence))
    print("The page's table (lift over uniform; source2token importance):\n")
    print(markdown(compare.agreements(*sides)) + "\n")
    print("The same on raw probabilities (what the page compared before), against its own null:\n")
    for x, y in zip(sides[0].sentence.trace.blocks, sides[1].sentence.trace.blocks):
        mask = np.asarray(x.mask, dtype=bool)
        raw = compare.agreement(compare.mean_attention(x), compare.mean_attention(y), mask)
        print(f"- {x.name}: τ {raw.tau:.3f}, unrelated models {raw.null}, largest |A − B| "
              f"{raw.largest_difference:.3f}")
    a, b = (s.sentence for s in sides)
    importance = [measures.token_importance(np.asarray(s.trace.source2token.probs)) for s in (a, b)]
    for name, values in zip(("sst5", "trec"), importance):
        top = np.argsort(-values, kind="stable")[:3]
        print(f"- {name} source2token top 3: " + ", ".join(f"{a.tokens[i]} ({values[i]:.3f})" for i in top))
    print()


def shipped_samples():
    """(name, pipeline, its test split's seeded sample) of each shipped checkpoint, as the analysis pages
    sample it."""
    for name in ("sst5", "trec", "sick-e", "sick"):
        pipe = pipeline(name)
        yield name, pipe, test_sample(pipe, corpus.SAMPLE_SENTENCES)


def case_study() -> None:
    print("## Case study (the checkpoint's test split, a seeded sample of up to 2,000 sentences)\n")
    for name, pipe, sampled in shipped_samples():
        study = casestudy.measure(pipe, sampled.tokens, sampled.name)
        print(f"### {name}: {len(study.sentences)} sentences of {sampled.name}, measured in {study.seconds:.1f} s\n")
        print(markdown(claims_table(casestudy.findings(study))) + "\n")
    pipe = pipeline("sst5")
    paper = casestudy.measure(pipe, [pipe.trace_sentence(s).tokens for s in casestudy.PAPER_SENTENCES],
                              "the paper's sentences")
    print("### sst5 on the paper's two sentences (measures; too few sentences for verdicts)\n")
    print(markdown(claims_table(casestudy.findings(paper))) + "\n")
    for s, tau, null in zip(casestudy.PAPER_SENTENCES, paper.sentences["tau"], paper.sentences["tau null"]):
        print(f"- τ (forward vs backward) {tau:.3f}, unrelated directions {null:.3f}: {s}")
    print()


def feature_atlas() -> None:
    print("## Feature atlas (the checkpoint's test split, a seeded sample of up to 2,000 sentences, k by silhouette)\n")
    for name, pipe, sampled in shipped_samples():
        result = atlas.profile(pipe, sampled.tokens, sampled.name)
        silhouettes = ", ".join(f"{k}: {v:.3f}" for k, v in result.silhouettes.items())
        print(f"### {name}: {len(sampled)} sentences of {sampled.name}, {int(result.lengths.sum())} tokens, "
              f"measured in {result.seconds:.1f} s; {result.k} types (silhouette {silhouettes})\n")
        print(markdown(atlas.kind_counts(result).reset_index()) + "\n")
        types, alike = atlas.mirroring(result)
        print(markdown(types.reset_index()) + f"\n\ntype mixes alike: {alike:.3f}\n")
        table = result.table
        for block in result.blocks:
            rows, uniform = table[table["block"] == block], result.uniform.loc[block]
            print(f"- {block}: entropy ÷ uniform median {rows['entropy ÷ uniform'].median():.3f}, lowest "
                  f"{rows['entropy ÷ uniform'].min():.3f}; distance ÷ uniform {rows['distance ÷ uniform'].min():.3f}"
                  f"–{rows['distance ÷ uniform'].max():.3f}; share at distance 1 at most "
                  f"{rows['share at distance 1'].max():.3f} (uniform {uniform['share at distance 1']:.3f}); "
                  f"mean gate {rows['mean gate'].min():.3f}–{rows['mean gate'].max():.3f}")
            for cls in ("stop words", "punctuation", "negations", "content words", "sentence ends"):
                lift = rows[f"{cls} ÷ uniform"]
                if lift.isna().all():
                    print(f"  - {cls}: none in the corpus")
                    continue
                print(f"  - {cls} ÷ uniform: median {lift.median():.2f}, {lift.min():.2f}–{lift.max():.2f} "
                      f"(highest: k = {rows.loc[lift.idxmax(), 'feature']})")
        for query in ("negations", "punctuation", "not"):
            print(f"\nSearch “{query}”:\n")
            try:
                print(markdown(atlas.search(result, query, 3)[["block", "feature", "lift", "share", "summary"]]))
            except ValueError as e:
                print(e)
        print()


FAITH_SENTENCES = 200  # test inputs of each checkpoint for erasure and interventions (the cascade: 100)
ROOT = Path(__file__).resolve().parent.parent


# The learned-attention run each uniform baseline is trained like (scripts/reproduce.sh faithfulness): TREC's
# shipped model (trec-dropout0.4); for SST-5 our recipe's sst5-100d, as the shipped sst5 adds the authors' item 4.
UNIFORM_BASELINES = {"trec-disan-uniform": CHECKPOINTS / "trec",
                     "sst5-disan-uniform": ROOT / "results" / "sst5-100d"}


def trained_run(name: str) -> Path | None:
    """A finished run of scripts/reproduce.sh's faithfulness queue: runs/NAME, else its record in results/."""
    for folder in (ROOT / "runs" / name, ROOT / "results" / name):
        if (folder / "metrics.json").is_file():
            return folder
    return None


# the explanations the page compares (the expensive ones, captum's, are the command's)
FAITH_SETTINGS = faithfulness.Settings(explainers=explainers.on_pages())


def faithfulness_of(name: str) -> None:
    """Erasure, interventions and the cascade of one shipped checkpoint."""
    pipe = pipeline(name)
    items = corpus.benchmark_items(pipe.task, "test", FAITH_SENTENCES)
    erasure = faithfulness.erasure_summary(faithfulness.erasure_records(pipe, items, FAITH_SETTINGS), FAITH_SETTINGS)
    print(f"### {name}: erasure\n")
    print(markdown(erasure.table) + "\n")
    print("random's corpus AOPC over its draws: " + "; ".join(f"{m} {erasure.random_spread[m]}"
                                                                for m in faithfulness.MEASURES) + "\n")
    inter = faithfulness.intervention_summary(faithfulness.intervention_records(pipe, items, FAITH_SETTINGS),
                                              len(items), FAITH_SETTINGS)
    print(f"### {name}: interventions\n")
    print(markdown(inter.table) + "\n")
    cascade = faithfulness.cascade(pipe, items[:faithfulness.CASCADE_SENTENCES], FAITH_SETTINGS)
    print(f"### {name}: cascading model randomisation (mean Spearman ρ with the trained model)\n")
    print(markdown(cascade.table) + "\n")
    sys.stdout.flush()


def faithfulness_checks() -> None:
    print(f"## Is the attention an explanation? ({FAITH_SENTENCES} seeded test inputs; cascade on "
          f"{faithfulness.CASCADE_SENTENCES})\n")
    for name in ("sst5", "trec", "sick-e"):
        faithfulness_of(name)
    shuffled = ROOT / "runs" / "trec-shuffled-labels"  # its weights: results/ keeps a run's record, not them
    if not (shuffled / WEIGHTS).is_file():
        print("### trec: data randomisation\n\nThe model trained on shuffled labels is not in runs/ here: "
              "`scripts/reproduce.sh faithfulness` trains it.\n")
    else:
        pipe = pipeline("trec")
        items = corpus.benchmark_items(pipe.task, "test", faithfulness.CASCADE_SENTENCES)
        result = faithfulness.data_randomisation(pipe, load(shuffled), items, FAITH_SETTINGS)
        test = json.loads((shuffled / "metrics.json").read_text())["test"]["accuracy"]
        print(f"### trec: data randomisation (a model trained on shuffled labels, test accuracy {test:.3f})\n")
        print(markdown(result.table) + "\n")
    print("### Uniform attention (Wiegreffe & Pinter's baseline): test accuracy against the learned attention "
          "trained with the same settings\n")
    for name, learned_run in UNIFORM_BASELINES.items():
        run = trained_run(name)
        task = json.loads((learned_run / "config.json").read_text())["task"]
        learned = json.loads((learned_run / "metrics.json").read_text())["test"]["accuracy"]
        uniform = (json.loads((run / "metrics.json").read_text()).get("test", {}).get("accuracy")
                   if run is not None else None)
        print(f"- {task}: learned attention {learned:.3f} ({learned_run.relative_to(ROOT)}), uniform "
              + (f"{uniform:.3f}" if uniform is not None else "not trained here yet (scripts/reproduce.sh faithfulness)"))
    print()


# each section and the page whose "What it showed" quotes its figures (tests/test_docs.py checks both ways)
PAGES = {corpus_senses: "docs/analyses/corpus-senses.md", counterfactuals: "docs/analyses/counterfactuals.md",
         attributions: "docs/analyses/attribution.md", compare_models: "docs/analyses/compare-models.md",
         case_study: "docs/analyses/case-study.md", feature_atlas: "docs/analyses/feature-atlas.md",
         faithfulness_checks: "docs/analyses/faithfulness.md"}
SECTIONS = tuple(PAGES)


def main() -> None:
    torch.set_num_threads(1)  # as the app runs the model (see app.py)
    wanted = sys.argv[1:]
    for section in SECTIONS:
        if wanted and section.__name__ not in wanted:
            continue
        print(f"<!-- the figures of {PAGES[section]} -->\n")
        section()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
