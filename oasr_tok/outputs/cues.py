"""The project's own cue layout, `cues(words, ...)`, the default for readers: at most two lines
of at most 42 columns (36 where a line holds characters of scripts written without spaces,
which count two columns each), breaks after sentence punctuation first, then commas, then
pauses, cues of 0.7 to 7 seconds, never a break inside a word (docs/subtitles.md)."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TimingError
from .timing import Cue, positive_option, timed_items

__all__ = ["cues", "joins_without_space"]


_SENTENCE_END = frozenset(".?!。？！…‼⁇⁈⁉")
_CLAUSE_END = frozenset(",;:，、；：")
_CLOSERS = "\"'”’»)]}」』）》】"


def _no_space_char(ch: str) -> bool:
    """A character of a script written without spaces, or a wide (CJK) one."""
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return True
    cp = ord(ch)
    return 0x0E00 <= cp <= 0x0EFF or 0x1000 <= cp <= 0x109F or 0x1780 <= cp <= 0x17FF


def _char_width(ch: str) -> int:
    if unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if _no_space_char(ch) else 1


def _width(text: str) -> int:
    return sum(_char_width(ch) for ch in text)


def joins_without_space(before: str, after: str) -> bool:
    # Between two characters of scripts written without spaces (or their punctuation) there
    # is no space: 我们 not 我 们, 好，我 not 好， 我.
    return bool(before) and bool(after) and _no_space_char(before[-1]) and _no_space_char(after[0])


def _ending(text: str) -> str:
    """The last character that is not a closing quote or bracket."""
    stripped = text.rstrip(_CLOSERS)
    return stripped[-1] if stripped else ""


@dataclass
class _Word:
    start: float
    end: float
    text: str
    source: Any


def _join(words: Sequence[_Word]) -> str:
    out = ""
    for k, word in enumerate(words):
        if k and not joins_without_space(words[k - 1].text, word.text):
            out += " "
        out += word.text
    return out


def _line_limit(text: str, width: int, cjk_width: int) -> int:
    return cjk_width if any(_no_space_char(ch) for ch in text) else width


def _lines(words: Sequence[_Word], width: int, cjk_width: int) -> list[list[_Word]]:
    """Words filled into as few lines as fit (a word wider than a line gets a line of its own)."""
    lines: list[list[_Word]] = []
    for word in words:
        if lines:
            candidate = lines[-1] + [word]
            text = _join(candidate)
            if _width(text) <= _line_limit(text, width, cjk_width):
                lines[-1] = candidate
                continue
        lines.append([word])
    return lines


def _break_score(words: Sequence[_Word], k: int, pause: float) -> int:
    """How good a break after words[k] is: 3 after a sentence, 2 after a clause, 1 at a pause."""
    ending = _ending(words[k].text)
    if ending in _SENTENCE_END:
        return 3
    if ending in _CLAUSE_END:
        return 2
    if k + 1 < len(words) and words[k + 1].start - words[k].end >= pause:
        return 1
    return 0


def _balanced(line_words: list[_Word], width: int, cjk_width: int, pause: float) -> list[list[_Word]]:
    """Two lines: the split that fits, preferring punctuation, then the most even widths."""
    best: tuple[tuple[int, int], int] | None = None
    for k in range(1, len(line_words)):
        top, bottom = _join(line_words[:k]), _join(line_words[k:])
        if _width(top) > _line_limit(top, width, cjk_width) or _width(bottom) > _line_limit(bottom, width, cjk_width):
            continue
        score = (min(_break_score(line_words, k - 1, pause), 2), -abs(_width(top) - _width(bottom)))
        if best is None or score > best[0]:
            best = (score, k)
    if best is None:
        return _lines(line_words, width, cjk_width)
    k = best[1]
    return [line_words[:k], line_words[k:]]


def cues(
    words: Iterable[Any],
    max_line_width: int = 42,
    max_line_width_cjk: int = 36,
    max_lines: int = 2,
    min_duration: float = 0.7,
    max_duration: float = 7.0,
    pause: float = 0.5,
) -> list[Cue]:
    """Reader-friendly cues from timed words (`Word`s, or anything with text, start and end in
    seconds): see docs/subtitles.md for the rules. Every word lands in exactly one cue, in
    order; cues are ordered and never overlap; no line is wider than its limit and no cue
    longer than `max_duration` unless a single word is. TimingError for words out of order,
    times that are negative or not finite, and options that are not positive."""
    max_line_width = positive_option(max_line_width, "max_line_width")
    max_line_width_cjk = positive_option(max_line_width_cjk, "max_line_width_cjk")
    max_lines = positive_option(max_lines, "max_lines")
    min_duration = positive_option(min_duration, "min_duration", number=True)
    max_duration = positive_option(max_duration, "max_duration", number=True)
    pause = positive_option(pause, "pause", number=True)
    if None in (max_line_width, max_line_width_cjk, max_lines, min_duration, max_duration, pause):
        raise TimingError("cue options cannot be None")
    if min_duration > max_duration:
        raise TimingError(f"option min_duration ({min_duration}) is longer than max_duration ({max_duration})")
    sources = list(words)
    timed = timed_items(sources, "word")
    items = [_Word(start, end, text, source) for (start, end, text), source in zip(timed, sources)]
    for k, item in enumerate(items):
        if not item.text.strip():
            raise TimingError(f"word {k} is empty or whitespace: a subtitle word must print something")

    def fits(group: list[_Word]) -> bool:
        if len(group) == 1:
            return True
        if max(w.end for w in group) - group[0].start > max_duration:
            return False
        return len(_lines(group, max_line_width, max_line_width_cjk)) <= max_lines

    groups: list[list[_Word]] = []

    def emit(group: list[_Word]) -> None:
        # What a cut leaves may not fit on its own (it fitted beside a CJK word, whose lines
        # are wider): such a group is filled into cues greedily, never shown over the limits.
        part: list[_Word] = []
        for w in group:
            if part and not fits(part + [w]):
                groups.append(part)
                part = []
            part.append(w)
        if part:
            groups.append(part)

    current: list[_Word] = []
    for word in items:
        if current and _break_score(current, len(current) - 1, pause) == 3 and word.start - current[-1].end >= pause:
            emit(current)  # a sentence that ends before a pause ends its cue
            current = []
        while current and not fits(current + [word]):
            # Break where it reads best: the latest sentence end, else clause end, else pause,
            # else just before this word.
            candidate = current + [word]
            scores = [_break_score(candidate, k, pause) for k in range(len(current))]
            best = max(scores)
            cut = len(current) if best == 0 else max(k for k, s in enumerate(scores) if s == best) + 1
            emit(current[:cut])
            current = current[cut:]
        current.append(word)
    if current:
        emit(current)

    out: list[Cue] = []
    for k, group in enumerate(groups):
        start, end = group[0].start, max(w.end for w in group)
        if out and start < out[-1].end:  # words that share a token: the later cue starts later
            start = out[-1].end
        end = max(end, start)
        following = groups[k + 1][0].start if k + 1 < len(groups) else math.inf
        if end - start < min_duration:  # shown long enough to read, up to the next cue
            end = max(end, min(start + min_duration, following))
        lines = _lines(group, max_line_width, max_line_width_cjk)
        if len(lines) == 2:
            lines = _balanced(group, max_line_width, max_line_width_cjk, pause)
        text = "\n".join(_join(line) for line in lines)
        out.append(Cue(start, end, text, tuple(w.source for w in group)))
    return out
