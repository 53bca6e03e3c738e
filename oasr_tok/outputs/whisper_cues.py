"""openai-whisper's cues: `whisper_cues(result, ...)` cuts a result in openai-whisper's shape
(``{"segments": [{"start", "end", "text", "words": [{"word", "start", "end"}]}]}``) into cues
exactly as its `SubtitlesWriter.iterate_result` does (its options, its line breaks, its
highlighted words); the writers in subtitles.py then write what its `WriteSRT`, `WriteVTT`,
`WriteTSV` and `WriteTXT` write, byte for byte."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import TimingError
from .timing import Cue, field_of, positive_option, seconds_of, to_milliseconds

__all__ = ["whisper_cues", "whisper_segments"]


def whisper_segments(result: Any) -> list[dict[str, Any]]:
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
        text = field_of(segment, "text", where)
        if not isinstance(text, str):
            raise TimingError(f"{where}: text must be a str")
        start = seconds_of(field_of(segment, "start", where), f"{where} start")
        end = seconds_of(field_of(segment, "end", where), f"{where} end")
        if end < start:
            raise TimingError(f"{where} ends ({end}) before it starts ({start})")
        entry: dict[str, Any] = {"start": start, "end": end, "text": text}
        if with_words:
            words = field_of(segment, "words", where)
            entry["words"] = []
            for j, word in enumerate(words):
                w_where = f"{where} word {j}"
                if not isinstance(word, Mapping):
                    raise TimingError(f"{w_where} is {type(word).__name__}, not a dict")
                w_text = field_of(word, "word", w_where)
                if not isinstance(w_text, str):
                    raise TimingError(f"{w_where}: word must be a str")
                w_where = f"{w_where} ({w_text[:40]!r})"
                w_start = seconds_of(field_of(word, "start", w_where), f"{w_where} start")
                w_end = seconds_of(field_of(word, "end", w_where), f"{w_where} end")
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
    max_line_width = positive_option(max_line_width, "max_line_width")
    max_line_count = positive_option(max_line_count, "max_line_count")
    max_words_per_line = positive_option(max_words_per_line, "max_words_per_line")
    segments = whisper_segments(result)
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
                if to_milliseconds(last) != to_milliseconds(timing["start"]) and last <= timing["start"]:
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
