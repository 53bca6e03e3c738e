"""Timed words to published files: subtitle cues (SRT, WebVTT), TSV, plain text, JSON and
Kaldi CTM. Pure functions over `Word`s, segments or an openai-whisper result; only the
standard library. The rules are in docs/subtitles.md.

Two ways to cut cues:

* `whisper_cues(result, ...)` builds them exactly as openai-whisper's
  `SubtitlesWriter.iterate_result` does, from a result in its shape
  (``{"segments": [{"start", "end", "text", "words": [{"word", "start", "end"}]}]}``);
  `to_srt`, `to_vtt`, `to_tsv`, `to_txt` then write what its `WriteSRT`, `WriteVTT`,
  `WriteTSV`, `WriteTXT` write, byte for byte.
* `cues(words, ...)` is the default for readers: at most two lines of at most 42 columns
  (36 where a line holds characters of scripts written without spaces, which count two
  columns each), breaks after sentence punctuation first, then commas, then pauses, cues of
  0.7 to 7 seconds, never a break inside a word.
"""

from __future__ import annotations

import json
import math
import numbers
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import TimingError

__all__ = [
    "Cue",
    "as_whisper_result",
    "cues",
    "to_ctm",
    "to_json",
    "to_srt",
    "to_tsv",
    "to_txt",
    "to_vtt",
    "whisper_cues",
]


@dataclass(frozen=True)
class Cue:
    """One subtitle: shown from `start` to `end` (seconds), `text` with its line breaks, and
    the words it was cut from (in the caller's form), when known."""

    start: float
    end: float
    text: str
    words: tuple[Any, ...] = field(default=(), compare=False, repr=False)


# -- checking what callers give ----------------------------------------------------------------


def _seconds(value: Any, where: str) -> float:
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


def _option(value: Any, name: str, *, number: bool = False) -> Any:
    """A positive int option (or a positive number with `number`); None stays None."""
    if value is None:
        return None
    ok = not isinstance(value, bool) and (isinstance(value, (int, float)) if number else isinstance(value, int))
    if not ok or not value > 0 or (number and not math.isfinite(value)):
        kind = "a positive number" if number else "a positive integer"
        raise TimingError(f"option {name} must be {kind} (or None), got {value!r}")
    return value


def _field(item: Any, name: str, where: str) -> Any:
    if isinstance(item, Mapping):
        if name not in item:
            raise TimingError(f"{where} has no {name!r}")
        return item[name]
    try:
        return getattr(item, name)
    except AttributeError:
        raise TimingError(f"{where} ({type(item).__name__}) has no {name!r}") from None


def _timed_items(items: Any, what: str) -> list[tuple[float, float, str]]:
    """(start, end, text) of each item (attributes or keys start, end, text), checked: finite,
    not negative, end >= start, starts in order."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TimingError(f"expected a sequence of {what}s, got {type(items).__name__}")
    out: list[tuple[float, float, str]] = []
    for k, item in enumerate(items):
        where = f"{what} {k}"
        text = _field(item, "text", where)
        if not isinstance(text, str):
            raise TimingError(f"{where}: text must be a str, got {type(text).__name__}")
        where = f"{what} {k} ({text[:40]!r})"
        start = _seconds(_field(item, "start", where), f"{where} start")
        end = _seconds(_field(item, "end", where), f"{where} end")
        if end < start:
            raise TimingError(f"{where} ends ({end}) before it starts ({start})")
        if out and start < out[-1][0]:
            raise TimingError(f"{where} starts ({start}) before {what} {k - 1} ({out[-1][0]}): out of order")
        out.append((start, end, text))
    return out


# -- openai-whisper's cues ---------------------------------------------------------------------


def _ms(seconds: float) -> int:
    # openai-whisper's rounding (utils.format_timestamp): Python's round of seconds * 1000.0.
    return round(seconds * 1000.0)


def _whisper_segments(result: Any) -> list[dict[str, Any]]:
    if not isinstance(result, Mapping) or "segments" not in result:
        raise TimingError('expected a result in openai-whisper\'s shape: {"segments": [...]}')
    segments = result["segments"]
    if isinstance(segments, (str, bytes)) or not isinstance(segments, Sequence):
        raise TimingError(f"result['segments'] must be a list, got {type(segments).__name__}")
    checked: list[dict[str, Any]] = []
    with_words = len(segments) > 0 and isinstance(segments[0], Mapping) and "words" in segments[0]
    previous = -math.inf
    for k, segment in enumerate(segments):
        where = f"segment {k}"
        if not isinstance(segment, Mapping):
            raise TimingError(f"{where} is {type(segment).__name__}, not a dict")
        text = _field(segment, "text", where)
        if not isinstance(text, str):
            raise TimingError(f"{where}: text must be a str")
        start = _seconds(_field(segment, "start", where), f"{where} start")
        end = _seconds(_field(segment, "end", where), f"{where} end")
        if end < start:
            raise TimingError(f"{where} ends ({end}) before it starts ({start})")
        entry: dict[str, Any] = {"start": start, "end": end, "text": text}
        if with_words:
            words = _field(segment, "words", where)
            entry["words"] = []
            for j, word in enumerate(words):
                w_where = f"{where} word {j}"
                if not isinstance(word, Mapping):
                    raise TimingError(f"{w_where} is {type(word).__name__}, not a dict")
                w_text = _field(word, "word", w_where)
                if not isinstance(w_text, str):
                    raise TimingError(f"{w_where}: word must be a str")
                w_where = f"{w_where} ({w_text[:40]!r})"
                w_start = _seconds(_field(word, "start", w_where), f"{w_where} start")
                w_end = _seconds(_field(word, "end", w_where), f"{w_where} end")
                if w_end < w_start:
                    raise TimingError(f"{w_where} ends ({w_end}) before it starts ({w_start})")
                if w_start < previous:
                    raise TimingError(f"{w_where} starts ({w_start}) before the word before it ({previous})")
                previous = w_start
                entry["words"].append({"word": w_text, "start": w_start, "end": w_end, "_source": word})
        checked.append(entry)
    return checked


def whisper_cues(
    result: Mapping[str, Any],
    max_line_width: int | None = None,
    max_line_count: int | None = None,
    max_words_per_line: int | None = None,
    highlight_words: bool = False,
) -> list[Cue]:
    """Cues exactly as openai-whisper's ``SubtitlesWriter.iterate_result`` makes them from
    `result` and the same options (its rules, quirks included: without both line options each
    segment stays one cue; a pause of more than 3 s starts a new cue; `highlight_words` yields
    one cue per word with that word underlined, plus the gaps between words). Options must be
    positive (openai-whisper reads 0 as "unset"; here it is a TimingError)."""
    max_line_width = _option(max_line_width, "max_line_width")
    max_line_count = _option(max_line_count, "max_line_count")
    max_words_per_line = _option(max_words_per_line, "max_words_per_line")
    segments = _whisper_segments(result)
    out: list[Cue] = []
    if segments and "words" in segments[0]:
        for subtitle in _whisper_subtitles(segments, max_line_width, max_line_count, max_words_per_line):
            words = tuple(timing["_source"] for timing in subtitle)
            start, end = subtitle[0]["start"], subtitle[-1]["end"]
            text = "".join(timing["word"] for timing in subtitle)
            if not highlight_words:
                out.append(Cue(start, end, text, words))
                continue
            last = start
            all_words = [timing["word"] for timing in subtitle]
            for i, timing in enumerate(subtitle):
                # openai-whisper fills the gap between two highlighted words with the plain text;
                # where words overlap that "gap" would end before it starts: left out.
                if _ms(last) != _ms(timing["start"]) and last <= timing["start"]:
                    out.append(Cue(last, timing["start"], text, words))
                underlined = "".join(
                    re.sub(r"^(\s*)(.*)$", r"\1<u>\2</u>", word) if j == i else word for j, word in enumerate(all_words)
                )
                out.append(Cue(timing["start"], timing["end"], underlined, (words[i],)))
                last = timing["end"]
    else:
        for segment in segments:
            out.append(Cue(segment["start"], segment["end"], segment["text"].strip().replace("-->", "->")))
    return out


def _whisper_subtitles(
    segments: list[dict[str, Any]],
    max_line_width: int | None,
    max_line_count: int | None,
    max_words_per_line: int | None,
) -> Iterable[list[dict[str, Any]]]:
    # openai-whisper's iterate_subtitles, step for step (see tests/whisper_utils_reference.py).
    preserve_segments = max_line_count is None or max_line_width is None
    line_width = max_line_width or 1000
    words_per_line = max_words_per_line or 1000
    line_len = 0
    line_count = 1
    subtitle: list[dict[str, Any]] = []
    first = next((w["start"] for s in segments for w in s["words"]), segments[0]["start"])
    last: float = first or 0.0
    for segment in segments:
        chunk_index = 0
        words_count = words_per_line
        while chunk_index < len(segment["words"]):
            remaining_words = len(segment["words"]) - chunk_index
            if words_per_line > remaining_words:
                words_count = remaining_words
            for i, original_timing in enumerate(segment["words"][chunk_index : chunk_index + words_count]):
                timing = dict(original_timing)
                long_pause = not preserve_segments and timing["start"] - last > 3.0
                has_room = line_len + len(timing["word"]) <= line_width
                seg_break = i == 0 and len(subtitle) > 0 and preserve_segments
                if line_len > 0 and has_room and not long_pause and not seg_break:
                    line_len += len(timing["word"])
                else:
                    timing["word"] = timing["word"].strip()
                    if (
                        len(subtitle) > 0
                        and max_line_count is not None
                        and (long_pause or line_count >= max_line_count)
                    ) or seg_break:
                        yield subtitle
                        subtitle = []
                        line_count = 1
                    elif line_len > 0:
                        line_count += 1
                        timing["word"] = "\n" + timing["word"]
                    line_len = len(timing["word"].strip())
                subtitle.append(timing)
                last = timing["start"]
            chunk_index += words_per_line
    if len(subtitle) > 0:
        yield subtitle


# -- the default cues, for readers -------------------------------------------------------------

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


def _joins_without_space(before: str, after: str) -> bool:
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
        if k and not _joins_without_space(words[k - 1].text, word.text):
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
    max_line_width = _option(max_line_width, "max_line_width")
    max_line_width_cjk = _option(max_line_width_cjk, "max_line_width_cjk")
    max_lines = _option(max_lines, "max_lines")
    min_duration = _option(min_duration, "min_duration", number=True)
    max_duration = _option(max_duration, "max_duration", number=True)
    pause = _option(pause, "pause", number=True)
    if None in (max_line_width, max_line_width_cjk, max_lines, min_duration, max_duration, pause):
        raise TimingError("cue options cannot be None")
    if min_duration > max_duration:
        raise TimingError(f"option min_duration ({min_duration}) is longer than max_duration ({max_duration})")
    sources = list(words)
    timed = _timed_items(sources, "word")
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


# -- writers -----------------------------------------------------------------------------------


def _timestamp(seconds: float, always_include_hours: bool, decimal_marker: str) -> str:
    # openai-whisper's format_timestamp.
    milliseconds = _ms(seconds)
    hours = milliseconds // 3_600_000
    milliseconds -= hours * 3_600_000
    minutes = milliseconds // 60_000
    milliseconds -= minutes * 60_000
    whole = milliseconds // 1_000
    milliseconds -= whole * 1_000
    hours_marker = f"{hours:02d}:" if always_include_hours or hours > 0 else ""
    return f"{hours_marker}{minutes:02d}:{whole:02d}{decimal_marker}{milliseconds:03d}"


def _cue_text(text: str) -> str:
    # Never an invalid file: no arrow a reader would take for timing ("--->" with one replace
    # still leaves one, so replace until none is left) and no blank line, which would end the cue.
    while "-->" in text:
        text = text.replace("-->", "->")
    if "\n" in text or "\r" in text:
        text = "\n".join(line for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if line.strip())
    return text


def _cue_items(items: Any) -> list[tuple[float, float, str]]:
    if isinstance(items, Mapping):  # an openai-whisper result: its default cues
        items = whisper_cues(items)
    return _timed_items(items, "cue")


def to_srt(cues: Any) -> str:
    """SubRip text, as openai-whisper's WriteSRT writes it: numbered cues, HH:MM:SS,mmm times.
    `cues`: Cues (from `whisper_cues` or `cues`), segments, or an openai-whisper result."""
    parts = []
    for i, (start, end, text) in enumerate(_cue_items(cues), start=1):
        parts.append(f"{i}\n{_timestamp(start, True, ',')} --> {_timestamp(end, True, ',')}\n{_cue_text(text)}\n\n")
    return "".join(parts)


def to_vtt(cues: Any) -> str:
    """WebVTT text, as openai-whisper's WriteVTT writes it: [HH:]MM:SS.mmm times."""
    parts = ["WEBVTT\n\n"]
    for start, end, text in _cue_items(cues):
        parts.append(f"{_timestamp(start, False, '.')} --> {_timestamp(end, False, '.')}\n{_cue_text(text)}\n\n")
    return "".join(parts)


def _rows(items: Any) -> list[tuple[float, float, str]]:
    if isinstance(items, Mapping):  # an openai-whisper result: its segments, as its writers read them
        return [(s["start"], s["end"], s["text"]) for s in _whisper_segments(items)]
    return _timed_items(items, "cue")


def to_tsv(cues: Any) -> str:
    """Tab-separated `start end text` rows in integer milliseconds, as openai-whisper's
    WriteTSV writes them. Given an openai-whisper result, its segments (as WriteTSV does);
    line breaks inside a text become spaces (a row is one line)."""
    lines = ["start\tend\ttext\n"]
    for start, end, text in _rows(cues):
        flat = (
            " ".join(text.strip().replace("\t", " ").splitlines())
            if "\n" in text or "\r" in text
            else text.strip().replace("\t", " ")
        )
        lines.append(f"{round(1000 * start)}\t{round(1000 * end)}\t{flat}\n")
    return "".join(lines)


def to_txt(cues: Any) -> str:
    """One line per cue (or per segment of an openai-whisper result), stripped, as
    openai-whisper's WriteTXT writes them."""
    return "".join(f"{text.strip()}\n" for _, _, text in _rows(cues))


#: The formats openai-whisper's get_writer writes one file of ("all" writes each).
WHISPER_FORMATS = ("txt", "vtt", "srt", "tsv", "json")


def whisper_output(
    result: Mapping[str, Any],
    output_format: str,
    max_line_width: int | None = None,
    max_line_count: int | None = None,
    max_words_per_line: int | None = None,
    highlight_words: bool = False,
) -> str:
    """What openai-whisper's writer for `output_format` writes for `result` with these
    options (its get_writer(...)(result, path, options)): SRT and WebVTT cut the cues with the
    options (whisper_cues); TXT, TSV and JSON take none of them, as openai-whisper's
    WriteTXT, WriteTSV and WriteJSON ignore them (an option given there is checked, not used)."""
    if output_format not in WHISPER_FORMATS:
        raise TimingError(f"output_format must be one of {', '.join(WHISPER_FORMATS)}, got {output_format!r}")
    cues = whisper_cues(result, max_line_width, max_line_count, max_words_per_line, highlight_words)
    if output_format == "srt":
        return to_srt(cues)
    if output_format == "vtt":
        return to_vtt(cues)
    return {"txt": to_txt, "tsv": to_tsv, "json": to_json}[output_format](result)


def _separator_before(words: Sequence[Any], k: int) -> str:
    if k == 0:
        return " "
    return "" if _joins_without_space(words[k - 1][2], words[k][2]) else " "


def as_whisper_result(cues: Sequence[Cue], language: str | None = None) -> dict[str, Any]:
    """Cues in openai-whisper's result shape (its verbose_json): ``{"text", "segments": [{"id",
    "start", "end", "text", "words": [{"word", "start", "end", "probability"}]}], "language"}``;
    a word keeps the space before it, as whisper's words do, and its confidence as whisper's
    "probability" when it has one."""
    segments: list[dict[str, Any]] = []
    for i, cue in enumerate(cues):
        if not isinstance(cue, Cue):
            raise TimingError(f"cue {i} is {type(cue).__name__}, not a subtitles.Cue")
    # The cues' own times, checked as every writer checks them (finite, not negative, in
    # order, no end before its start) and made plain floats (a NumPy float32 included).
    checked = _timed_items(cues, "cue")
    for i, cue in enumerate(cues):
        rows = _timed_items(cue.words, "word") if cue.words else []
        words = []
        for k, (start, end, text) in enumerate(rows):
            word: dict[str, Any] = {"word": _separator_before(rows, k) + text, "start": start, "end": end}
            confidence = word_confidence(cue.words[k])
            if confidence is not None:  # openai-whisper's name for a word's confidence
                word["probability"] = confidence
            words.append(word)
        lines = cue.text.split("\n")
        text = lines[0]
        for line in lines[1:]:
            text += ("" if _joins_without_space(text, line) else " ") + line
        start, end, _ = checked[i]
        segments.append({"id": i, "start": start, "end": end, "text": " " + text, "words": words})
    result: dict[str, Any] = {"text": "".join(s["text"] for s in segments), "segments": segments}
    if language is not None:
        result["language"] = language
    return result


def to_json(cues: Any) -> str:
    """JSON in openai-whisper's result (verbose_json) shape; an openai-whisper result is written
    as its WriteJSON writes it (json.dump of the whole result)."""
    if isinstance(cues, Mapping):
        _whisper_segments(cues)  # its times checked as every writer checks them
        return json.dumps(cues, allow_nan=False, default=_json_number)
    return json.dumps(as_whisper_result(list(cues)), ensure_ascii=False, allow_nan=False)


def _json_number(value: Any) -> Any:
    """A number json cannot write itself (a NumPy scalar) as a plain one; anything else refused."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise TimingError(f"{value!r} is not a finite number: JSON cannot hold it")
        return number
    raise TimingError(f"a {type(value).__name__} is not a JSON value (an openai-whisper result holds numbers and text)")


def word_confidence(item: Any) -> float | None:
    """A word's confidence as the caller's form holds it: `Word.confidence`, or a dict's
    "confidence" or (openai-whisper's word) "probability"; None when it has none."""
    if isinstance(item, Mapping):
        value = item.get("confidence", item.get("probability"))
    else:
        value = getattr(item, "confidence", None)
    return None if value is None else _unit_number(value, "confidence")


def _unit_number(value: Any, where: str) -> float:
    number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    if not 0.0 <= number <= 1.0:  # NaN and non-numbers fail here
        raise TimingError(f"{where} = {value!r} is not a number in 0 ... 1")
    return number


def to_ctm(words: Iterable[Any], utterance: str, channel: str = "1", confidences: Sequence[float] | None = None) -> str:
    """Kaldi CTM for sclite: one ``utterance channel start duration word [confidence]`` line per
    word, times in seconds with three decimals. Whitespace inside a word (French spacing keeps
    "Bonjour !" one word) becomes "_", since CTM fields are separated by whitespace. The
    confidence column is written from `confidences` or, when not given, from the words' own
    (word_timings(..., scores=...)) when every word has one."""
    if not isinstance(utterance, str) or not utterance or any(ch.isspace() for ch in utterance):
        raise TimingError(f"option utterance must be a non-empty str without whitespace, got {utterance!r}")
    if not isinstance(channel, str) or not channel or any(ch.isspace() for ch in channel):
        raise TimingError(f"option channel must be a non-empty str without whitespace, got {channel!r}")
    words = list(words) if isinstance(words, Iterable) and not isinstance(words, (str, bytes)) else words
    rows = _timed_items(words, "word")
    if confidences is None:
        own = [word_confidence(item) for item in words]
        confidences = None if None in own else own  # type: ignore[assignment]
    if confidences is not None and len(confidences) != len(rows):
        raise TimingError(f"option confidences has {len(confidences)} values for {len(rows)} words")
    lines = []
    for k, (start, end, text) in enumerate(rows):
        token = "_".join(text.split())
        if not token:
            raise TimingError(f"word {k} is empty or whitespace: CTM needs a word")
        line = f"{utterance} {channel} {start:.3f} {end - start:.3f} {token}"
        if confidences is not None:
            line += f" {_unit_number(confidences[k], f'option confidences[{k}]'):.3f}"
        lines.append(line + "\n")
    return "".join(lines)
