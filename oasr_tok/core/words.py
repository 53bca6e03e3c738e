"""Timed words cut out of a rendered transcript (rules: docs/decoding.md § Word timings).

The grouping is compiled (oasr_tok/_engine/words.pyx): it runs on every request that asks for word
timestamps, so it is one linear pass with no per-character Python calls. Its result, `Words`,
and the `Word` record are compiled too (oasr_tok/_engine/wordtypes.pyx): a columnar sequence that
makes a `Word` only when one is asked for. tests/words_reference.py is the same rules in
plain Python, kept as the oracle."""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union, cast

from .._engine.piece_table import PieceTable, TableMethods
from .._engine.words import group_words as _group_words
from .._engine.wordtypes import REDUCTIONS, Word, Words, attach_confidences, carry_first_tokens
from ..errors import TimingError, short_repr
from .contract import TokenizerContract

if TYPE_CHECKING:
    import numpy

__all__ = ["REDUCTIONS", "TimedOutput", "Word", "Words", "checked_scores", "group_words", "scored", "token_scores"]

Times = Union[Sequence[float], Sequence[int], "numpy.ndarray"]


Scores = Union[Sequence[float], "numpy.ndarray"]


def token_scores(scores: Scores, count: int) -> array:
    """The caller's per-token log-probabilities as array("d"), one per token: a list, tuple,
    NumPy array or other numeric sequence. TimingError when it is not numbers or its length
    is not `count` (the values themselves are checked where they are reduced)."""
    if isinstance(scores, (str, bytes)):
        raise TimingError(f"scores must be numbers, one per token, got {type(scores).__name__}")
    try:
        out = array("d", scores)
    except (TypeError, ValueError, OverflowError):
        raise TimingError(f"scores must be numbers, one per token, got {short_repr(scores)}") from None
    if len(out) != count:
        raise TimingError(f"scores has {len(out)} values for {count} tokens: give one log-probability per token")
    return out


def checked_scores(scores: Scores, count: int) -> array:
    """token_scores with every value checked too: finite and <= 0 (TimingError naming it)."""
    out = token_scores(scores, count)
    for k, value in enumerate(out):
        if not math.isfinite(value) or value > 0.0:
            raise TimingError(f"scores[{k}] = {value!r}: a score is a log-probability, finite and <= 0")
    return out


def group_words(
    pieces: Sequence[str],
    starts: Times,
    ends: Times | None = None,
    scores: Scores | None = None,
    *,
    reduction: str = "mean",
) -> Words:
    """Cut words out of ``"".join(pieces)``, timed by the tokens that rendered them.

    `pieces` holds one string per token (``tok.token_pieces(ids)``); `starts` one start time
    per token and `ends`, if given, one end time per token, in whatever unit the caller uses
    (seconds as floats, frames as ints; lists, tuples, NumPy arrays or other numeric buffers). Word.start/end are the
    caller's own values. Returns a `Words` sequence (equal to the list of its `Word`s). Raises TimingError (a ValueError) naming the position when a time is
    missing, not a finite number, out of order, or an end precedes its start.

    `scores`, if given, holds one log-probability per token (as a decoder reports the token it
    chose: finite, <= 0); each word then carries a confidence, the tokens' probabilities
    reduced by `reduction` (one of REDUCTIONS; "mean" is openai-whisper's word probability).
    A NaN, infinite or positive score or a wrong length is a TimingError naming it."""
    return scored(_group_words, pieces, starts, ends, scores, reduction)


def scored(
    grouping: Callable[[Sequence[str], Times, Times | None], Words],
    pieces: Sequence[str],
    starts: Times,
    ends: Times | None,
    scores: Scores | None,
    reduction: str,
) -> Words:
    """`grouping(pieces, starts, ends)`, its words given confidences when there are scores:
    every word timing rule (the general one, a CTC kind's delimiters) scores words the same way."""
    if reduction not in REDUCTIONS:
        raise TimingError(f"option reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    checked = None if scores is None else token_scores(scores, len(pieces))
    words = grouping(pieces, starts, ends)
    return words if checked is None else attach_confidences(words, checked, reduction)


class TimedOutput(TokenizerContract):
    """Timed words: the part of `oasr_tok.Tokenizer` that cuts the transcript into words."""

    def word_timings(
        self,
        ids: Sequence[int],
        starts: Times,
        ends: Times | None = None,
        scores: Scores | None = None,
        *,
        reduction: str = "mean",
    ) -> Words:
        """Timed words cut out of the transcript, with a confidence each when `scores` (one
        log-probability per id) are given; see docs/decoding.md § Word timings.

        Args:
            ids: the token ids of the transcript.
            starts: each id's start time (any unit; a list or an array).
            ends: each id's end time; by default the next id's start (the last id's own start).
            scores: each id's log-probability: a word's confidence is reduced from its ids'.
            reduction: "mean", "min" or "product" of the ids' probabilities.

        Returns:
            Words: a sequence of Word (text, start, end, first_token, last_token, confidence),
            each text exactly a substring of decode(ids), with columnar views (starts, ends...).

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> ids = tok.encode("the café opens")
            >>> [(w.text, w.start, w.end) for w in tok.word_timings(ids, [40 * i for i in range(len(ids))])]
            [('the', 0, 40), ('café', 40, 80), ('opens', 80, 160)]
        """
        engine = getattr(self, "_table", None)
        if type(engine) is not PieceTable:
            return group_words(self.token_pieces(ids), starts, ends, scores, reduction=reduction)
        # a byte-level engine: the ids that carried bytes of a word's first character are the word's
        ids = self.check_ids(ids)
        pieces, carriers = engine.pieces_and_carriers(ids)
        if cast(Any, type(self)).token_pieces is not TableMethods.token_pieces:
            pieces = self.token_pieces(ids)  # the kind states its own attribution
        if carriers.find(1) < 0:
            return group_words(pieces, starts, ends, scores, reduction=reduction)

        def grouping(pieces: Sequence[str], starts: Times, ends: Times | None) -> Words:
            return carry_first_tokens(_group_words(pieces, starts, ends), list(pieces), carriers)

        return scored(grouping, pieces, starts, ends, scores, reduction)
