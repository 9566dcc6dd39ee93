"""Shareable links (disan.app.links): reading and writing the URL's query parameters."""
from urllib.parse import parse_qs

import pytest

from disan.app import links
from disan.data.text import MAX_TOKENS

KINDS = {"trec": "classify", "sick-e": "pair", "sick": "relatedness"}


@pytest.mark.quick
def test_a_link_sets_the_model_and_its_input():
    assert links.read({"model": "trec", "text": "What is DiSAN ?"}, KINDS, "trec") == (
        {"checkpoint": "trec", "text": "What is DiSAN ?"}, [])
    values, messages = links.read({"model": "sick-e", "text": "A man", "hypothesis": "A person"}, KINDS, "trec")
    assert values == {"checkpoint": "sick-e", "premise": "A man", "hypothesis": "A person"} and not messages
    assert links.read({"text": "a sentence"}, KINDS, "trec") == ({"text": "a sentence"}, [])  # the default model


def test_bad_values_give_messages_and_leave_the_defaults():
    values, messages = links.read({"model": "../../etc", "text": "fine"}, KINDS, "trec")
    assert values == {"text": "fine"}
    assert "“\u2068../../etc\u2069”, which is not a working checkpoint" in messages[0] and "showing trec" in messages[0]
    values, messages = links.read({"model": "trec", "text": "word " * (MAX_TOKENS + 1)}, KINDS, "trec")
    assert values == {"checkpoint": "trec"} and f"the limit is {MAX_TOKENS}" in messages[0]
    values, messages = links.read({"text": "   "}, KINDS, "trec")
    assert values == {} and "empty" in messages[0]
    values, messages = links.read({"model": "trec", "hypothesis": "a second sentence"}, KINDS, "trec")
    assert values == {"checkpoint": "trec"} and "single sentences" in messages[0]
    # a parameter of another name (a premise is a pair's text) is named in a message, never used
    values, messages = links.read({"model": "sick-e", "premise": "A man", "hypothesis": "A person"}, KINDS, "trec")
    assert values == {"checkpoint": "sick-e", "hypothesis": "A person"}
    assert len(messages) == 1 and "“\u2068premise\u2069” is not read here" in messages[0]
    assert "premise is its text" in messages[0]


@pytest.mark.quick
def test_a_control_character_in_a_link_is_refused_by_name_and_place():
    for query in ("text=a%00b", "text=a%1Bb", "text=a%C2%85b"):  # NUL, ESCAPE, and the C1 NEXT LINE
        params = {k: v[0] for k, v in parse_qs(f"model=trec&{query}").items()}
        values, messages = links.read(params, KINDS, "trec")
        code = f"U+{ord(params['text'][1]):04X}"
        assert values == {"checkpoint": "trec"} and f"control character {code} at character 2" in messages[0]
    values, messages = links.read({"model": "sick-e", "text": "A man", "hypothesis": "A\x7fperson"}, KINDS, "trec")
    assert values == {"checkpoint": "sick-e", "premise": "A man"} and "hypothesis was not used" in messages[0]


def test_writing_a_link_reads_back_to_the_same_state():
    for name, state in (("trec", {"text": "What is it ?", "premise": "unused"}),
                        ("sick-e", {"premise": "A man", "hypothesis": "A person", "text": "unused"})):
        params = links.write(name, KINDS[name], state)
        values, messages = links.read(params, KINDS, "trec")
        assert not messages and values == {"checkpoint": name, **{k: v for k, v in state.items() if v != "unused"}}
    assert links.write(None, None, {"text": "x"}) == {}


def test_a_link_to_the_attention_page_opens_the_input_as_the_model_reads_it():
    def opened(name, text, pair=None, feature=None):
        url = links.attention_url(name, KINDS[name], text, pair, feature)
        assert url.startswith("./?")
        values, messages = links.read({k: v[0] for k, v in parse_qs(url[3:]).items()}, KINDS, "trec")
        assert not messages
        return values

    assert opened("trec", "What is it ?") == {"checkpoint": "trec", "text": "What is it ?"}
    # a pair model takes a corpus line's pair where it has one, else the line as the premise
    assert opened("sick-e", "A man | A person", ("A man", "A person")) == {
        "checkpoint": "sick-e", "premise": "A man", "hypothesis": "A person"}
    assert opened("sick-e", "A man") == {"checkpoint": "sick-e", "premise": "A man"}
    assert opened("trec", "What is it ?", feature=3) == {
        "checkpoint": "trec", "text": "What is it ?", "attention-mode": "one feature", "attention-k": 3}
