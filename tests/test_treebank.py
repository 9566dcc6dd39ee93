"""SST's human labels of a model's tokens: a tree worked out by hand, and the alignment on the real test trees."""
import pytest

from disan.analyses import corpus
from disan.data.loaders import parse_tree
from disan.data.text import check_text, tokenize
from disan.data.treebank import HumanLabels, marked, split_trees, token_labels, token_spans, trained_labels

pytestmark = pytest.mark.quick

# "The too-tepid sci-fi ( fun )": a phrase of label 0 over two leaves, PTB brackets around a leaf of 4
TREE = "(1 (2 (2 The) (0 (1 too-tepid) (2 sci-fi))) (3 (2 -LRB-) (4 (4 fun) (2 -RRB-))))"


def test_the_tokens_of_a_tree_take_the_labels_of_their_leaves():
    tree = parse_tree(TREE)
    assert tree.text() == "The too-tepid sci-fi ( fun )"
    tokens = tokenize(tree.text())
    assert tokens == ["The", "too", "-", "tepid", "sci", "-", "fi", "(", "fun", ")"]
    # a hyphen-split leaf gives each of its tokens its label: "too-tepid" is 1 in all three, "sci-fi" 2
    assert token_labels(tree, tokens).tolist() == [2, 1, 1, 1, 2, 2, 2, 2, 4, 2]
    assert marked([2, 1, 1, 1, 2, 2, 2, 2, 4, 2]).tolist() == [False, True, True, True] + [False] * 4 + [True, False]


def test_a_token_over_several_leaves_takes_the_smallest_phrase_that_holds_them():
    tree = parse_tree(TREE)
    # "too-tepid sci-fi" is the phrase of 0; "fun )" the phrase of 4; "The too-tepid" lies in the phrase of 2
    assert token_labels(tree, ["The", "too-tepid sci-fi", "(", "fun )"]).tolist() == [2, 0, 2, 4]
    assert token_labels(tree, ["The too-tepid", "sci-fi", "(", "fun", ")"]).tolist() == [2, 2, 2, 4, 2]


def test_tokens_are_found_in_order_and_a_missing_one_is_refused():
    assert token_spans("a-b a", ["a", "-", "b", "a"]) == [(0, 1), (1, 2), (2, 3), (4, 5)]
    with pytest.raises(ValueError, match="not in the text"):
        token_spans("a b", ["a", "c"])


def leaf_labels(tree) -> list[int]:
    """The label of each word's own leaf node, read from the spans as the test's own reckoning."""
    labels = [None] * len(tree.words)
    for label, start, end in tree.spans:
        if end - start == 1:
            labels[start] = label
    return labels


def test_every_token_of_the_sst5_test_trees_lies_in_one_leaf_and_takes_its_label(data_root):
    trees = split_trees("sst5", "test", data_root)
    assert len(trees) > 2000
    split_leaves = 0
    for text, tree in trees.items():
        tokens = tokenize(text)
        labels = token_labels(tree, tokens)
        own = leaf_labels(tree)
        at, per_leaf = 0, [[] for _ in tree.words]
        for token, label in zip(tokens, labels):
            start = text.index(token, at)
            at = start + len(token)
            word = text.count(" ", 0, start)  # the leaves are joined by single spaces
            assert text.count(" ", 0, at) == word, f"{token!r} crosses a leaf in {text!r}"
            assert label == own[word]
            per_leaf[word].append(token)
        # the tokens of a leaf spell it (spaCy keeps no whitespace)
        assert ["".join(t) for t in per_leaf] == ["".join(w.split()) for w in tree.words]
        split_leaves += sum(len(t) > 1 for t in per_leaf)
    assert split_leaves > 100  # hyphens, clitics: the case the alignment is for


def test_a_models_test_items_get_their_tokens_labels(data_root):
    for task in ("sst5", "sst2"):
        config = {"task": task, "train_config": {"data_dir": str(data_root)}}
        items = corpus.trained_items(config, "test", 25)
        got = trained_labels(config, items)
        assert got.reason == "" and len(got.labels) == len(items)
        trees = split_trees(task, "test", data_root)
        for item, labels in zip(items, got.labels):
            assert len(labels) == len(check_text(item))
            assert set(labels.tolist()) <= set(leaf_labels(trees[item]))
    with pytest.raises(ValueError, match="not a sentence of sst5 test"):
        trained_labels({"task": "sst5", "train_config": {"data_dir": str(data_root)}}, ["not in the treebank at all"])


def test_a_model_without_sst_has_no_labels_and_says_why():
    own = trained_labels({"task": "sst5", "data": {"path": "mine.csv"}}, ["a"])
    assert own == HumanLabels(None, own.reason) and "file of its own" in own.reason
    sick = trained_labels({"task": "sick-e"}, [("a", "b")])
    assert sick.labels is None and "sick-e" in sick.reason and "not the Stanford Sentiment Treebank" in sick.reason
    with pytest.raises(ValueError, match="not the Stanford"):
        split_trees("trec")


def test_whether_a_model_has_labels_is_told_without_reading_the_data():
    from disan.data.treebank import unlabelled

    assert unlabelled({"task": "sst5"}) == unlabelled({"task": "sst2"}) == ""
    for config in ({"task": "sick-e"}, {"task": "trec"}, {"task": "sst2", "data": {"path": "mine.csv"}}):
        assert unlabelled(config) and unlabelled(config) == trained_labels(config, ["a"]).reason
