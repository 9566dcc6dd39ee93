"""Shareable links (disan.app.links): reading and writing the URL's query parameters."""
import re
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


@pytest.mark.quick
def test_the_pages_settings_are_read_by_name_and_others_refused():
    assert links.setting_of("attention-query-premise") == "attention-query-{role}"
    assert links.setting_of("senses-occurrence-2") == "senses-occurrence-{i}"
    assert links.setting_of("faith-n") == "faith-n"
    for name in ("attention-query-other", "faith-shuffled", "_attention-mode", "attention-mode-x"):
        assert links.setting_of(name) is None, name
    values, messages = links.read({"model": "trec", "attention-mode": "max", "faith-n": "50", "cf-tab": "Occlusion",
                                   "faith-shuffled": "/etc"}, KINDS, "trec")
    assert values == {"checkpoint": "trec",
                      links.LINKED: {"attention-mode": "max", "faith-n": "50", "cf-tab": "Occlusion"}}
    assert len(messages) == 1 and "“\u2068faith-shuffled\u2069” is not read here" in messages[0]


def test_a_link_carries_the_models_digest_and_says_when_the_model_changed(make_checkpoint):
    path = make_checkpoint()
    digest = links.version(path)
    assert len(digest) == links.DIGEST_CHARACTERS and links.version(path) == digest
    params = links.write("trec", "classify", {"text": "a"}, digest=digest)
    assert params["digest"] == digest
    assert links.read(params, KINDS, "trec")[0][links.DIGEST] == digest
    assert links.changed("trec", digest, digest) == []
    config = path / "config.json"
    config.write_text(config.read_text().replace("{", '{"note": "retrained", ', 1))  # another version of the model
    assert links.version(path) != digest
    message = links.changed("trec", digest, links.version(path))[0]
    assert "another version of trec" in message and digest in message
    values, messages = links.read({"model": "trec", "digest": "../x"}, KINDS, "trec")
    assert links.DIGEST not in values and "not a model's digest" in messages[0]


@pytest.mark.quick
@pytest.mark.parametrize("key,text,current,bounds,expected", [
    ("attention-mode", "max", "mean", {"options": ["mean", "max", "one feature"]}, "max"),
    ("attention-query-sentence", "3", 5, {"options": range(11)}, 3),
    ("atlas-feature", "7", 2, {"options": [2, 7, 0]}, 7),
    ("cf-keys", "4,1", [0], {"options": range(6)}, [4, 1]),
    ("cf-queries", "", [2], {"options": range(6)}, []),
    ("faith-n", "250", 100, {"low": 1, "high": 2000}, 250),
    ("attention-window-sentence", "10-69", (30, 89), {"low": 0, "high": 119}, (10, 69)),
    ("senses-text", "a glass of water\nthe glass ceiling", "", {}, "a glass of water\nthe glass ceiling"),
])
def test_a_links_setting_within_the_widgets_bounds_is_taken_as_it_is(key, text, current, bounds, expected):
    assert links.bounded(key, text, current, **bounds) == (expected, None)
    assert links.encoded(expected) == text  # what the URL holds reads back to the same value


@pytest.mark.quick
@pytest.mark.parametrize("key,text,current,bounds,expected,said", [
    ("faith-n", "5000", 100, {"low": 1, "high": 2000}, 2000, "5000 is outside what this page allows (1 to 2000)"),
    ("faith-n", "0", 100, {"low": 1, "high": 2000}, 1, "showing 1"),
    ("attention-window-sentence", "90-500", (30, 89), {"low": 0, "high": 119}, (90, 119), "showing 90-119"),
    ("attention-window-sentence", "69-10", (30, 89), {"low": 0, "high": 119}, (10, 69), None),  # ends in any order
])
def test_a_links_number_or_window_beyond_the_bounds_is_brought_inside_them_with_a_message(
        key, text, current, bounds, expected, said):
    value, message = links.bounded(key, text, current, **bounds)
    assert value == expected
    assert (message is None) if said is None else (said in message)


@pytest.mark.quick
@pytest.mark.parametrize("key,text,current,bounds,said", [
    ("attention-mode", "all", "mean", {"options": ["mean", "max"]},
     "“\u2068all\u2069” is not among this page's choices (“\u2068mean\u2069”, “\u2068max\u2069”)"),
    ("attention-query-sentence", "99", 5, {"options": range(11)}, "choices (0 to 10); showing “\u20685\u2069”"),
    ("cf-keys", "1,x,9", [0], {"options": range(6)}, "“\u2068x\u2069”, “\u20689\u2069” are not among"),
    ("faith-n", "many", 100, {"low": 1, "high": 2000}, "is not a whole number"),
    ("faith-n", "1e9", 100, {"low": 1, "high": 2000}, "is not a whole number"),
    ("attention-window-sentence", "10", (30, 89), {"low": 0, "high": 119}, "is not two token numbers"),
    ("cf-replacement", "a\x00b", "", {}, "control character U+0000 at character 2"),
])
def test_a_links_setting_that_cannot_be_used_is_refused_with_what_the_page_shows_instead(
        key, text, current, bounds, said):
    with pytest.raises(ValueError, match=re.escape(said)):
        links.bounded(key, text, current, **bounds)
