"""Tokeniser, vocabulary and word vectors."""
import json
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disan.data.text import (
    PAD,
    PAD_ID,
    PAIR_SEPARATOR,
    UNK,
    UNK_ID,
    Vocab,
    character_name,
    check_characters,
    check_text,
    join_pair,
    normalize,
    split_pair,
    tokenize,
)
from disan.data.vectors import OOV_RANGE, embedding_matrix, load_glove

pytestmark = pytest.mark.quick

# ---------------------------------------------------------------- tokenize

def test_tokens_keep_their_spelling():
    assert tokenize("Don't  stop, Mr. O'Neil!\n") == ["Do", "n't", "stop", ",", "Mr.", "O'Neil", "!"]
    assert tokenize("The Rock is Destined") == ["The", "Rock", "is", "Destined"]


def test_unusual_text_yields_tokens():
    tokens = tokenize("<b>Great</b> film 😀🎉 日本語の映画 café\u00a0crème … “quoted”")
    assert "😀" in tokens and "日本語の映画" in tokens and "café" in tokens and "crème" in tokens
    assert "<" in tokens and "…" in tokens and "“" in tokens


@pytest.mark.parametrize("text", ["", " ", "\n\t \u00a0\u3000"])
def test_blank_text_has_no_tokens(text):
    assert tokenize(text) == []


def shows_something(char: str) -> bool:
    """Not a format character (soft hyphen, zero-width joiner, ...) or a combining or enclosing mark."""
    return unicodedata.category(char) not in ("Cf", "Mn", "Me")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_tokens_are_the_text_without_whitespace(text):
    """Nothing is rewritten, and nothing is dropped but whitespace and a run of characters that show
    nothing by themselves (a token of those alone would be a blank): no token is blank or holds whitespace."""
    tokens = tokenize(text)
    kept, source = "".join(tokens), iter("".join(text.split()))
    assert all(char in source for char in kept)  # in the text's order, each character once
    assert [c for c in kept if shows_something(c)] == [c for c in text if shows_something(c) and not c.isspace()]
    assert all(any(shows_something(c) for c in t) and not any(c.isspace() for c in t) for t in tokens)


@pytest.mark.parametrize("premise,hypothesis", [
    ("A man is playing a guitar", "A person plays an instrument"),
    ("a | b", "c || d"),              # text with bars of its own
    ("x|||y", "the ||| separator"),   # the separator without its spaces, and in the hypothesis
    ("", " "),
])
def test_a_pair_round_trips_through_one_line(premise, hypothesis):
    line = join_pair(premise, hypothesis)
    assert isinstance(line, str) and split_pair(line) == (premise, hypothesis)


@settings(max_examples=200, deadline=None)
@given(st.text().filter(lambda t: PAIR_SEPARATOR not in t), st.text())
def test_any_pair_whose_premise_lacks_the_separator_round_trips(premise, hypothesis):
    assert split_pair(join_pair(premise, hypothesis)) == (premise, hypothesis)


def test_a_single_sentence_is_not_a_pair():
    with pytest.raises(ValueError, match="not a sentence pair"):
        split_pair("just | one sentence")


def test_normalize_lowercases():
    assert normalize("The") == "the" and normalize("ÉTÉ") == "été" and normalize("n't") == "n't"


# ---------------------------------------------------------------- Vocab

SENTENCES = [["The", "film", "is", "good"], ["the", "FILM", "is", "bad"], ["the", "end", "<unk>"]]


def test_vocab_build_orders_by_frequency_and_filters():
    vocab = Vocab.build(SENTENCES)
    assert vocab.itos[:5] == [PAD, UNK, "the", "film", "is"]
    assert set(vocab.itos[5:]) == {"bad", "end", "good"} and len(vocab) == 8
    frequent = Vocab.build(SENTENCES, min_count=2, extra=["Good", "new", "the"])
    assert frequent.itos == [PAD, UNK, "the", "film", "is", "good", "new"]


def test_vocab_encode_normalizes_and_maps_unknowns():
    vocab = Vocab.build(SENTENCES)
    assert vocab.encode(["THE", "Film", "unseen", "<unk>"]) == [2, 3, UNK_ID, UNK_ID]
    assert "Good" in vocab and "unseen" not in vocab
    assert (vocab.stoi[PAD], vocab.stoi[UNK]) == (PAD_ID, UNK_ID)


def test_vocab_json_round_trip(tmp_path):
    vocab = Vocab.build(SENTENCES + [["café", "日本"]])
    path = tmp_path / "vocab.json"
    vocab.save(path)
    loaded = Vocab.load(path)
    assert loaded.itos == vocab.itos and loaded.encode(["Café", "the", "x"]) == vocab.encode(["Café", "the", "x"])
    assert json.loads(path.read_text(encoding="utf-8")) == vocab.to_json()
    assert Vocab.from_json(json.loads(json.dumps(vocab.to_json()))).itos == vocab.itos


@pytest.mark.parametrize("bad", [{"itos": ["the", PAD, UNK]}, {"itos": [PAD, UNK, "a", "a"]}, {"words": []}, []])
def test_vocab_rejects_malformed_json(bad):
    with pytest.raises(ValueError):
        Vocab.from_json(bad)


# ---------------------------------------------------------------- GloVe

@pytest.fixture(scope="module")
def glove():
    return load_glove()


def test_packaged_glove(glove):
    words, vectors = glove
    assert len(words) == 400_000 and vectors.shape == (400_000, 50) and vectors.dtype == np.float32
    row = {w: i for i, w in enumerate(words)}
    assert "the" in row

    def cosine(a, b):
        x, y = vectors[row[a]], vectors[row[b]]
        return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))

    assert cosine("king", "queen") > cosine("king", "banana") + 0.3  # words and rows are aligned


def test_packaged_glove_filter(glove):
    words, vectors = load_glove(vocab_filter={"the", "queen", "notawordatall"})
    assert sorted(words) == ["queen", "the"] and vectors.shape == (2, 50)
    all_words, all_vectors = glove
    assert np.array_equal(vectors[words.index("queen")], all_vectors[all_words.index("queen")])


GLOVE_TEXT = "4 3\nthe 0.1 0.2 0.3\nThe 9 9 9\nnew york -1 0.5 2e-1\n, 1 1 1\n"


def test_glove_text_file(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(GLOVE_TEXT, encoding="utf-8")
    words, vectors = load_glove(path)
    assert words == ["the", "The", "new york", ","] and vectors.dtype == np.float32
    assert np.allclose(vectors, [[0.1, 0.2, 0.3], [9, 9, 9], [-1, 0.5, 0.2], [1, 1, 1]])
    path.write_text(GLOVE_TEXT.split("\n", 1)[1], encoding="utf-8")  # the same without the header
    assert load_glove(path)[0] == words
    filtered, rows = load_glove(path, vocab_filter={"the", "new york"})
    assert filtered == ["the", "The", "new york"] and rows.shape == (3, 3)  # cased variants kept
    # the most frequent words stay first whatever the filter, in file order
    assert load_glove(path, vocab_filter={","}, keep_first=2)[0] == ["the", "The", ","]
    top, _ = load_glove(vocab_filter={"zyzzyva"}, keep_first=3)
    assert top[:3] == ["the", ",", "."]


@pytest.mark.parametrize("content", [b"", b"the 0.1 0.2\nfilm 0.3\n", b"the 0.1 0.2\nfilm 0.3 abc\n",
                                     b"the\n", b"caf\xe9 0.1 0.2\n"])
def test_malformed_glove_file(tmp_path, content):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError):
        load_glove(path)


def test_embedding_matrix(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(GLOVE_TEXT, encoding="utf-8")
    words, vectors = load_glove(path)
    vocab = Vocab.build([["The", "new york", "unseen", "rare"]])
    matrix, found = embedding_matrix(vocab, words, vectors, seed=3)
    assert matrix.shape == (len(vocab), 3) and matrix.dtype == np.float32
    assert found == 2
    assert not matrix[PAD_ID].any()
    assert np.allclose(matrix[vocab.stoi["the"]], [0.1, 0.2, 0.3])  # the lowercase entry, not "The"
    assert np.allclose(matrix[vocab.stoi["new york"]], [-1, 0.5, 0.2])
    oov = matrix[[UNK_ID, vocab.stoi["unseen"], vocab.stoi["rare"]]]
    assert (np.abs(oov) <= OOV_RANGE).all() and np.unique(oov).size == oov.size
    assert np.array_equal(embedding_matrix(vocab, words, vectors, seed=3)[0], matrix)
    assert not np.array_equal(embedding_matrix(vocab, words, vectors, seed=4)[0][UNK_ID], matrix[UNK_ID])


def test_embedding_matrix_uses_a_cased_vector_when_no_lowercase_one_exists():
    vocab = Vocab.build([["paris"]])
    matrix, found = embedding_matrix(vocab, ["Paris", "PARIS"], np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert found == 1 and np.array_equal(matrix[vocab.stoi["paris"]], [1.0, 2.0])


def test_emoji_sequences_stay_one_token_and_invisible_tokens_are_dropped():
    family, flag, thumb = "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "👍🏽"  # joined by U+200D; a variation selector; a skin tone
    assert tokenize(f"a {family} here") == ["a", family, "here"]
    assert tokenize(f"ok {thumb} {flag} fine") == ["ok", thumb, flag, "fine"]
    assert tokenize("x \u200d y \u200b") == ["x", "y"]  # a stray joiner or zero-width space is no token
    assert tokenize("don't stop , now") == ["do", "n't", "stop", ",", "now"]  # spaCy's splits otherwise stay
    with pytest.raises(ValueError, match="empty"):
        check_text("\u200d \u200b")


def test_half_a_character_is_refused_with_where_it_is():
    with pytest.raises(ValueError, match=r"unpaired surrogate \(U\+D800\) at character 3"):
        check_text("a \ud800 b")


# every control character (C0, DEL, C1) by Unicode's own category, whatever the code's table says
CONTROLS = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cc"]


@pytest.mark.parametrize("char", [c for c in CONTROLS if c not in "\t\n\r"])
def test_a_control_character_is_refused_naming_it_and_where_it_is(char):
    with pytest.raises(ValueError) as error:
        check_text(f"fine words{char}here")
    message = str(error.value)
    assert f"control character U+{ord(char):04X}" in message and "at character 11" in message
    assert "\n" not in message and char not in message  # one line, the character named, never shown


def test_tabs_and_line_breaks_are_text_and_characters_are_named_as_unicode_names_them():
    assert check_text("one\ttwo\nthree\r\nfour") == ["one", "two", "three", "four"]
    assert len(CONTROLS) == 65  # C0 (32), DEL and C1 (32): the list above is the whole set
    with pytest.raises(ValueError, match=r"U\+0000 at character 1,"):  # a control character has no name
        check_characters("\x00")
    assert character_name("\u00ad") == f"U+00AD ({unicodedata.name(chr(0xAD))})"
