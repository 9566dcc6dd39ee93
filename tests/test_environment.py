"""The one reader of numeric settings from the environment."""
import pytest

from disan.data import environment

NAME = "DISAN_TEST_SETTING"


@pytest.mark.quick
def test_unset_or_blank_gives_the_default(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    assert environment.number(NAME, 7, "items") == 7
    monkeypatch.setenv(NAME, "  ")
    assert environment.number(NAME, 7, "items") == 7


def test_text_is_read_as_the_kind_of_number_asked_for(monkeypatch):
    monkeypatch.setenv(NAME, " 2.5 ")
    assert environment.number(NAME, 7, "megabytes") == 2.5
    monkeypatch.setenv(NAME, "12")
    value = environment.number(NAME, 7, "items", whole=True)
    assert value == 12 and isinstance(value, int)
    monkeypatch.setenv(NAME, "0")
    assert environment.number(NAME, 7, "items", whole=True) == 0


@pytest.mark.parametrize("text, whole, least", [("many", False, 0), ("2.5", True, 0), ("-1", False, 0),
                                                ("nan", False, 0), ("0", True, 1), ("0.5", False, 1)])
def test_bad_text_names_the_variable_and_the_unit(monkeypatch, text, whole, least):
    monkeypatch.setenv(NAME, text)
    with pytest.raises(ValueError, match=f"{NAME} must be a .*number of widgets from {least} up, not '{text}'"):
        environment.number(NAME, 7, "widgets", whole=whole, least=least)
