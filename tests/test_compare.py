"""Paired comparison of checkpoints: McNemar's exact test, the bootstrap interval of a difference, and the
command line on two real runs."""
import io
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from disan.__main__ import main
from disan.analyses.stats import mcnemar_exact
from disan.tools.compare import compare, markdown
from disan.training.evaluate import Evaluation
from disan.training.train import train

from .test_train import tiny_trec


def likelihood_p(b: int, c: int) -> float:
    """Exact p by another definition: the total probability, under binomial(b + c, 1/2), of every
    outcome no more likely than the one observed."""
    n = b + c
    prob = [Fraction(math.comb(n, k), 2 ** n) for k in range(n + 1)]
    return float(sum(p for p in prob if p <= prob[b]))


@pytest.mark.parametrize("b, c", [(0, 0), (0, 5), (3, 3), (7, 2), (80, 94), (40, 1), (1500, 1400)])
def test_mcnemar_exact_is_the_two_sided_binomial_p_value_on_the_discordant_examples(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(likelihood_p(b, c), rel=1e-12)
    assert mcnemar_exact(b, c) == mcnemar_exact(c, b)


def test_mcnemar_exact_by_hand():
    # 7 against 2 of 9 discordant examples: twice P(at most 2 heads of 9) = 2 (1 + 9 + 36) / 2^9
    assert mcnemar_exact(7, 2) == pytest.approx(2 * (1 + 9 + 36) / 2 ** 9, rel=1e-12)
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 2 ** 5, rel=1e-12)
    assert mcnemar_exact(4, 5) == 1.0  # the two tails overlap: capped at 1
    with pytest.raises(ValueError, match="negative"):
        mcnemar_exact(-1, 3)


def classified(correct: np.ndarray, texts=None) -> Evaluation:
    """An evaluation whose examples are right where ``correct`` says (gold "a", predicted "a" or "b")."""
    texts = texts if texts is not None else [f"sentence {i}" for i in range(len(correct))]
    table = pd.DataFrame({"text": texts, "length": 2, "gold": "a", "predicted": np.where(correct, "a", "b")})
    table["correct"] = correct
    return Evaluation({"accuracy": float(correct.mean()), "n": len(correct)}, table, ["a", "b"], None, "classify")


def test_accuracy_difference_counts_the_discordant_examples_and_its_interval_has_the_paired_width():
    rng = np.random.default_rng(3)
    base = rng.random(2000) < 0.5
    other = np.where(rng.random(2000) < 0.2, ~base, base)  # 20% of the examples flip
    c = compare(classified(base), classified(other), "other")
    assert c.difference.value == pytest.approx(other.mean() - base.mean())
    assert (c.only_other, c.only_base) == ((other & ~base).sum(), (base & ~other).sum())
    assert c.p_mcnemar == pytest.approx(likelihood_p(c.only_other, c.only_base))
    # the normal approximation of a paired difference of proportions: what resampling the examples gives
    p01, p10 = c.only_other / 2000, c.only_base / 2000
    se = math.sqrt((p01 + p10 - (p01 - p10) ** 2) / 2000)
    assert c.difference.low < c.difference.value < c.difference.high
    assert c.difference.high - c.difference.low == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_a_checkpoint_against_itself_differs_by_nothing_and_checkpoints_on_other_examples_are_refused():
    correct = np.random.default_rng(0).random(300) < 0.6
    same = compare(classified(correct), classified(correct), "same")
    assert (same.difference.value, same.difference.low, same.difference.high, same.p_mcnemar) == (0, 0, 0, 1)
    other_texts = [f"another sentence {i}" for i in range(300)]
    with pytest.raises(ValueError, match="same examples"):
        compare(classified(correct), classified(correct, other_texts), "elsewhere")


@pytest.mark.quick
def test_the_relatedness_difference_is_the_difference_of_pearson_r():
    rng = np.random.default_rng(1)
    gold = rng.uniform(1, 5, 500)

    def related(pred):
        table = pd.DataFrame({"text": [f"pair {i}" for i in range(500)], "length": 3, "gold": gold,
                              "predicted": pred, "error": pred - gold})
        return Evaluation({"pearson": float(np.corrcoef(pred, gold)[0, 1]), "n": 500}, table, [], None,
                          "relatedness")
    close, far = gold + rng.normal(0, 0.5, 500), gold + rng.normal(0, 1.5, 500)
    c = compare(related(far), related(close), "close")
    expected = np.corrcoef(close, gold)[0, 1] - np.corrcoef(far, gold)[0, 1]
    assert c.difference.value == pytest.approx(expected)
    assert 0 < c.difference.low < expected < c.difference.high  # much closer: the interval excludes 0
    assert c.p_mcnemar is None
    head, _, base_row, row = markdown("far", related(far), [c], "dev").splitlines()
    assert "McNemar" not in head and row.split(" | ")[2] == f"{expected:+.4f}" and base_row.count("|") == 5


@pytest.mark.usefixtures("data_root")
def test_compare_on_the_command_line_pairs_two_runs_on_their_shared_dev_split(tmp_path, capsys):
    for name, lr in (("a", 1.0), ("b", 0.1)):  # one seed: the same dev split drawn from TREC's training file
        train(tiny_trec(tmp_path / name, epochs=1, lr=lr), log=io.StringIO())
    capsys.readouterr()
    recorded = {}
    for name in "ab":
        main(["evaluate", str(tmp_path / name), "--split", "dev", "--json"])
        recorded[name] = json.loads(capsys.readouterr().out)
    main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--split", "dev", "--json", "--resamples", "500"])
    result = json.loads(capsys.readouterr().out)
    assert result["value"] == recorded["b"]["accuracy"] and result["metric"] == "accuracy"
    assert result["difference"]["value"] == pytest.approx(recorded["b"]["accuracy"] - recorded["a"]["accuracy"])
    assert result["only_other"] - result["only_base"] == round(result["difference"]["value"] * recorded["a"]["n"])
    train(tiny_trec(tmp_path / "seed1", epochs=1, seed=1), log=io.StringIO())  # another dev split
    with pytest.raises(ValueError, match="same examples"):
        main(["compare", str(tmp_path / "a"), str(tmp_path / "seed1"), "--split", "dev"])
