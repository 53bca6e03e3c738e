"""Timed words to published files: subtitle cues (SRT, WebVTT), TSV, plain text, JSON and
Kaldi CTM. Pure functions over `Word`s, segments or an openai-whisper result; only the
standard library. The rules are in docs/subtitles.md.

Two ways to cut cues (each in its own module, re-exported here):

* `whisper_cues(result, ...)` (whisper_cues.py) builds them exactly as openai-whisper's
  `SubtitlesWriter.iterate_result` does, from a result in its shape
  (``{"segments": [{"start", "end", "text", "words": [{"word", "start", "end"}]}]}``);
  `to_srt`, `to_vtt`, `to_tsv`, `to_txt` then write what its `WriteSRT`, `WriteVTT`,
  `WriteTSV`, `WriteTXT` write, byte for byte.
* `cues(words, ...)` (cues.py) is the default for readers: at most two lines of at most 42 columns
  (36 where a line holds characters of scripts written without spaces, which count two
  columns each), breaks after sentence punctuation first, then commas, then pauses, cues of
  0.7 to 7 seconds, never a break inside a word.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import TimingError
from .cues import cues, joins_without_space
from .timing import Cue, timed_items, to_milliseconds
from .whisper_cues import whisper_cues, whisper_segments

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


# -- writers -----------------------------------------------------------------------------------


def _timestamp(seconds: float, always_include_hours: bool, decimal_marker: str) -> str:
    # openai-whisper's format_timestamp.
    milliseconds = to_milliseconds(seconds)
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
    return timed_items(items, "cue")


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
        return [(s["start"], s["end"], s["text"]) for s in whisper_segments(items)]
    return timed_items(items, "cue")


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
    return "" if joins_without_space(words[k - 1][2], words[k][2]) else " "


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
    checked = timed_items(cues, "cue")
    for i, cue in enumerate(cues):
        rows = timed_items(cue.words, "word") if cue.words else []
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
            text += ("" if joins_without_space(text, line) else " ") + line
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
        whisper_segments(cues)  # its times checked as every writer checks them
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
    rows = timed_items(words, "word")
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
