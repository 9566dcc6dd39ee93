"""Numbers the project reads from environment variables (cache bounds, sample sizes, upload limits): one
reader, so that every setting accepts the same text and says the same thing when it cannot."""
from __future__ import annotations

import os


def number(name: str, default: float, unit: str, *, whole: bool = False, least: float = 0) -> float:
    """The value of ``$name`` as a number of ``unit`` (an int where ``whole``), else ``default`` where it is
    unset or blank; ValueError naming the variable for text that is not such a number, or one below
    ``least``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    kind = "whole number" if whole else "number"
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        value = None
    if value is None or value != value or value < least:  # value != value: NaN, which every bound would let by
        raise ValueError(f"{name} must be a {kind} of {unit} from {least:g} up, not {text!r}")
    return value
