"""Timed words cut out of a rendered transcript (rules: docs/decoding.md § Word timings).

The grouping is compiled (oasr_tok/_words.pyx): it runs on every request that asks for word
timestamps, so it is one linear pass with no per-character Python calls. Its result, `Words`,
and the `Word` record are compiled too (oasr_tok/_wordtypes.pyx): a columnar sequence that
makes a `Word` only when one is asked for. tests/words_reference.py is the same rules in
plain Python, kept as the oracle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

from ._words import group_words as _group_words
from ._wordtypes import Word, Words
from .contract import TokenizerContract

if TYPE_CHECKING:
    import numpy

__all__ = ["TimedOutput", "Word", "Words", "group_words"]

Times = Union[Sequence[float], Sequence[int], "numpy.ndarray"]


def group_words(pieces: Sequence[str], starts: Times, ends: Times | None = None) -> Words:
    """Cut words out of ``"".join(pieces)``, timed by the tokens that rendered them.

    `pieces` holds one string per token (``tok.token_pieces(ids)``); `starts` one start time
    per token and `ends`, if given, one end time per token, in whatever unit the caller uses
    (seconds as floats, frames as ints; lists, tuples, NumPy arrays or other numeric buffers). Word.start/end are the
    caller's own values. Returns a `Words` sequence (equal to the list of its `Word`s). Raises TimingError (a ValueError) naming the position when a time is
    missing, not a finite number, out of order, or an end precedes its start."""
    return _group_words(pieces, starts, ends)


class TimedOutput(TokenizerContract):
    """Timed words: the part of `oasr_tok.Tokenizer` that cuts the transcript into words."""

    def word_timings(self, ids: Sequence[int], starts: Times, ends: Times | None = None) -> Words:
        """Timed words cut out of the transcript; see docs/decoding.md § Word timings."""
        return group_words(self.token_pieces(ids), starts, ends)
