"""Segments: timed stretches of a transcript, longer than words (rules: docs/subtitles.md).

* `whisper_segments` cuts one Whisper window's ids at its timestamp tokens exactly as
  openai-whisper's `transcribe` does (the whisper kind's `segments` calls it);
* `segment_words` groups the timed words of any kind into sentence-like segments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TimingError

__all__ = ["TIME_PRECISION", "Segment", "segment_words", "whisper_segments"]

#: Seconds per Whisper timestamp step, computed as openai-whisper computes it (2 * 160 / 16000).
TIME_PRECISION = 2 * 160 / 16000


@dataclass(frozen=True)
class Segment:
    """A timed stretch of transcript: `start`/`end` in seconds, its `text`, and the indices of
    its first and last ids (or words, for `segment_words`) in what it was cut from, and, when
    the caller gave per-token scores to a Whisper window, the window's `avg_logprob` as
    openai-whisper reports it on each of its segments."""

    start: float
    end: float
    text: str
    first_token: int
    last_token: int
    avg_logprob: float | None = None


def _window(ids: list[int], eot: int, sot: int, timestamp_begin: int) -> tuple[int, int]:
    """[lo, hi) of the sampled tokens: after the start-of-transcript sequence (sot and the
    language/task/notimestamps ids after it), up to the first eot, as openai-whisper's decoder
    hands them to transcribe."""
    lo = 0
    if sot in ids:
        lo = len(ids) - ids[::-1].index(sot)
        while lo < len(ids) and eot < ids[lo] < timestamp_begin:
            lo += 1
    hi = len(ids)
    for k in range(lo, len(ids)):
        if ids[k] == eot:
            hi = k
            break
    return lo, hi


def whisper_segments(
    ids: list[int],
    *,
    eot: int,
    sot: int,
    timestamp_begin: int,
    decode: Callable[[list[int]], str],
    offset: float = 0.0,
    duration: float = 30.0,
    scores: Sequence[float] | None = None,
) -> list[Segment]:
    """One window's segments, as openai-whisper's transcribe splits its tokens:

    * two consecutive timestamp ids close a segment (from the first timestamp of the slice to
      its last); the tokens after the last pair, if the window does not end in a single
      timestamp, are left out (transcribe re-decodes them in the next window);
    * a window ending in a single timestamp keeps its last slice up to the end;
    * with no consecutive timestamps at all, the window is one segment from `offset`, `duration`
      long, or up to its last timestamp when it has one other than <|0.00|>.

    Times are offset + position * 0.02 (openai-whisper's arithmetic); `text` is the decode of the
    segment's ids below eot. With `scores` (one log-probability per id, already checked), every
    segment carries the window's avg_logprob as openai-whisper's decoder computes it: the sum
    of the sampled tokens' log-probabilities, eot's included, over their count plus one."""
    lo, hi = _window(ids, eot, sot, timestamp_begin)
    avg_logprob = None
    if scores is not None:
        # whisper sums every sampled token's log-probability up to and including eot, and
        # divides by len(tokens before eot) + 1 (decoding.py, DecodingTask.run)
        sampled = hi + 1 if hi < len(ids) else hi
        avg_logprob = math.fsum(scores[lo:sampled]) / (hi - lo + 1)
    tokens = ids[lo:hi]
    is_timestamp = [t >= timestamp_begin for t in tokens]
    single_timestamp_ending = is_timestamp[-2:] == [False, True]
    consecutive = [k + 1 for k in range(len(tokens) - 1) if is_timestamp[k] and is_timestamp[k + 1]]
    out: list[Segment] = []

    def segment(start: float, end: float, a: int, b: int) -> Segment:
        text = decode([t for t in tokens[a:b] if t < eot])
        return Segment(start, end, text, lo + a, lo + b - 1, avg_logprob)

    if consecutive:
        slices = list(consecutive)
        if single_timestamp_ending:
            slices.append(len(tokens))
        last_slice = 0
        for current_slice in slices:
            start_pos = tokens[last_slice] - timestamp_begin
            end_pos = tokens[current_slice - 1] - timestamp_begin
            out.append(
                segment(
                    offset + start_pos * TIME_PRECISION, offset + end_pos * TIME_PRECISION, last_slice, current_slice
                )
            )
            last_slice = current_slice
    else:
        length = duration
        timestamps = [t for t, stamp in zip(tokens, is_timestamp) if stamp]
        if timestamps and timestamps[-1] != timestamp_begin:
            length = (timestamps[-1] - timestamp_begin) * TIME_PRECISION
        # An empty window still gives its one (empty) segment, whose last_token is first_token - 1.
        out.append(segment(offset, offset + length, 0, len(tokens)))
    return out


# -- any kind: words into sentence-like segments ----------------------------------------------

_SENTENCE_END = frozenset(".?!。？！")
_CLOSERS = "\"'”’»)]}」』）》】"


def _no_space(ch: str) -> bool:
    import unicodedata

    return unicodedata.east_asian_width(ch) in ("W", "F")


def segment_words(
    words: Iterable[Any],
    max_pause: float = 1.0,
    max_duration: float = 30.0,
    max_words: int | None = None,
) -> list[Segment]:
    """Sentence-like segments from timed words (`Word`s of any kind, or anything with text,
    start and end): a segment ends after a word ending in sentence punctuation (`.?!` and
    `。？！`, closing quotes and brackets after it allowed), before a pause longer than
    `max_pause` seconds, and before a word that would take it past `max_duration` seconds or
    `max_words` words. The text joins the words with a space, except between two CJK
    characters. first_token/last_token are indices into `words`. TimingError for words out of
    order or with bad times, and for options that are not positive."""
    for name, value in (("max_pause", max_pause), ("max_duration", max_duration)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
            raise TimingError(f"option {name} must be a positive number, got {value!r}")
    if max_words is not None and (isinstance(max_words, bool) or not isinstance(max_words, int) or max_words <= 0):
        raise TimingError(f"option max_words must be a positive integer (or None), got {max_words!r}")
    from .timing import timed_items

    rows = timed_items(list(words), "word")
    out: list[Segment] = []
    first = 0
    for k, (start, end, text) in enumerate(rows):
        if k > first:
            previous_end = rows[k - 1][1]
            too_long = end - rows[first][0] > max_duration or (max_words is not None and k - first >= max_words)
            if start - previous_end > max_pause or too_long:
                out.append(_joined(rows, first, k))
                first = k
        stripped = text.rstrip(_CLOSERS)
        if stripped and stripped[-1] in _SENTENCE_END:
            out.append(_joined(rows, first, k + 1))
            first = k + 1
    if first < len(rows):
        out.append(_joined(rows, first, len(rows)))
    return out


def _joined(rows: Sequence[tuple[float, float, str]], a: int, b: int) -> Segment:
    text = ""
    for k in range(a, b):
        word = rows[k][2]
        if k > a and not (text and word and _no_space(text[-1]) and _no_space(word[0])):
            text += " "
        text += word
    return Segment(rows[a][0], max(r[1] for r in rows[a:b]), text, a, b - 1)
