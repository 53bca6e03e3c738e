"""Timed items as the output writers take them, checked: a `Cue`, and the checks every writer
applies to what a caller gives (times finite and not negative, in order, ends after starts;
options positive), with typed errors that name the item."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import TimingError

__all__ = ["Cue", "field_of", "to_milliseconds", "positive_option", "seconds_of", "timed_items"]


@dataclass(frozen=True)
class Cue:
    """One subtitle: shown from `start` to `end` (seconds), `text` with its line breaks, and
    the words it was cut from (in the caller's form), when known."""

    start: float
    end: float
    text: str
    words: tuple[Any, ...] = field(default=(), compare=False, repr=False)


# -- checking what callers give ----------------------------------------------------------------


def seconds_of(value: Any, where: str) -> float:
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise TimingError(f"{where} = {value!r} is not a number of seconds")
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        raise TimingError(f"{where} = {value!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise TimingError(f"{where} = {value!r}: times must be finite and not negative")
    if not math.isfinite(seconds * 1000.0):  # the writers count milliseconds
        raise TimingError(f"{where} = {value!r}: too large a time for a subtitle file")
    return seconds


def positive_option(value: Any, name: str, *, number: bool = False) -> Any:
    """A positive int option (or a positive number with `number`); None stays None."""
    if value is None:
        return None
    ok = not isinstance(value, bool) and (isinstance(value, (int, float)) if number else isinstance(value, int))
    if not ok or not value > 0 or (number and not math.isfinite(value)):
        kind = "a positive number" if number else "a positive integer"
        raise TimingError(f"option {name} must be {kind} (or None), got {value!r}")
    return value


def field_of(item: Any, name: str, where: str) -> Any:
    if isinstance(item, Mapping):
        if name not in item:
            raise TimingError(f"{where} has no {name!r}")
        return item[name]
    try:
        return getattr(item, name)
    except AttributeError:
        raise TimingError(f"{where} ({type(item).__name__}) has no {name!r}") from None


def timed_items(items: Any, what: str, *, ordered: bool = True) -> list[tuple[float, float, str]]:
    """(start, end, text) of each item (attributes or keys start, end, text), checked: finite,
    not negative, end >= start, and (unless `ordered` is False) starts in order."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TimingError(f"expected a sequence of {what}s, got {type(items).__name__}")
    out: list[tuple[float, float, str]] = []
    for k, item in enumerate(items):
        where = f"{what} {k}"
        text = field_of(item, "text", where)
        if not isinstance(text, str):
            raise TimingError(f"{where}: text must be a str, got {type(text).__name__}")
        where = f"{what} {k} ({text[:40]!r})"
        start = seconds_of(field_of(item, "start", where), f"{where} start")
        end = seconds_of(field_of(item, "end", where), f"{where} end")
        if end < start:
            raise TimingError(f"{where} ends ({end}) before it starts ({start})")
        if ordered and out and start < out[-1][0]:
            raise TimingError(f"{where} starts ({start}) before {what} {k - 1} ({out[-1][0]}): out of order")
        out.append((start, end, text))
    return out


def to_milliseconds(seconds: float) -> int:
    # openai-whisper's rounding (utils.format_timestamp): Python's round of seconds * 1000.0.
    return round(seconds * 1000.0)
