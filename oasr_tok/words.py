"""Timed words cut out of a rendered transcript."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

__all__ = ["Word", "group_words"]


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a transcript: its exact text (a substring of the decode), its time span,
    and the indices of the first and last tokens whose pieces overlap it."""

    text: str
    start: float
    end: float
    first_token: int
    last_token: int


def group_words(pieces: Sequence[str], starts: Sequence[float], ends: Sequence[float] | None = None) -> list[Word]:
    """Cut words out of "".join(pieces), timed by the tokens that rendered them."""
    from ._words import group_words as _group

    return _group(pieces, starts, ends)
