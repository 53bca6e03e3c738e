"""What an OpenAI-compatible speech server sends: the transcription API's objects and its
server-sent events, made from a transcript, its words and segments, and a Stream's deltas
(rules: docs/openai.md).

* `transcription(transcript, response_format, ...)` is the body of a
  ``/v1/audio/transcriptions`` response in ``json``, ``text``, ``srt``, ``vtt`` or
  ``verbose_json``, as the API and the `openai` SDK's types (``Transcription``,
  ``TranscriptionVerbose``, ``TranscriptionSegment``, ``TranscriptionWord``) define it;
  `response_body` gives it as the text to send with its media type.
* `TranscriptionEvents` writes one request's stream: a ``transcript.text.delta`` event per
  delta (with ``logprobs`` when the request asked for them) and exactly one
  ``transcript.text.done``, however many chunks and streams the text came from.
* `whisper_window(tok, ids, ...)` cuts one Whisper window into segments that carry what a
  Whisper decoder reports for them (seek, tokens, temperature, avg_logprob,
  compression_ratio, no_speech_prob), computed as faster-whisper computes them.

Nothing here writes a placeholder: a value that was not given and cannot be computed
(``avg_logprob`` without log-probabilities, ``no_speech_prob`` without the model's) is left
out of the object, and the SDK reads a left-out field as None.

Tokenizers, streams and transcripts are parameters, used by what they do (duck-typed): this
module imports nothing above oasr_tok.outputs.
"""

from __future__ import annotations

import json
import math
import numbers
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _json_string
from typing import Any, Protocol

from ..errors import StreamStateError, TimingError, TranscriptionFormatError, short_repr
from .segments import Segment, segment_words
from .subtitles import to_srt, to_vtt
from .timing import seconds_of, timed_items

__all__ = [
    "FRAMES_PER_SECOND",
    "MEDIA_TYPES",
    "RESPONSE_FORMATS",
    "SSE_DONE",
    "TIMESTAMP_GRANULARITIES",
    "TimedTranscript",
    "TranscriptionEvents",
    "WhisperSegment",
    "compression_ratio",
    "response_body",
    "token_logprobs",
    "transcription",
    "whisper_window",
]

#: The response formats this module writes (the API's ``diarized_json`` needs speakers: not here).
RESPONSE_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
TIMESTAMP_GRANULARITIES = ("word", "segment")
#: The Content-Type to send each response format with.
MEDIA_TYPES = {
    "json": "application/json",
    "verbose_json": "application/json",
    "text": "text/plain; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
}
#: Whisper's mel frames per second (openai-whisper: SAMPLE_RATE // HOP_LENGTH): a segment's
#: ``seek`` is its window's start in these frames.
FRAMES_PER_SECOND = 16000 // 160


class TimedTranscript(Protocol):
    """What `transcription` reads from a transcript (oasr_tok.outputs.stitching's
    StitchedTranscript has exactly these): the text, the language it names (or None), the
    audio's duration in seconds, its timed words (`Words`, a list of `Word`, or None) and its
    segments (a list of `Segment`, or None), times in seconds from the start of the audio.
    A format reads only what it needs (``json`` and ``text`` read the text alone)."""

    @property
    def text(self) -> str: ...
    @property
    def language(self) -> str | None: ...
    @property
    def duration(self) -> float: ...
    @property
    def words(self) -> Sequence[Any] | None: ...
    @property
    def segments(self) -> Sequence[Any] | None: ...


def compression_ratio(text: str) -> float:
    """The zlib compression ratio of `text`'s UTF-8 bytes, as openai-whisper's
    ``compression_ratio`` and faster-whisper's ``get_compression_ratio`` compute it (a
    decoder takes a window above 2.4 for a repetition loop).

    Example:
        >>> round(compression_ratio("hello hello hello hello hello hello"), 3)
        2.059
    """
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data))


# -- Whisper windows ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class WhisperSegment(Segment):
    """A `Segment` of one Whisper window with what the decoder reports for the window, as
    openai-whisper's and faster-whisper's transcribe put it on every segment of the window:
    `seek` (the window's start in mel frames), `tokens` (the segment's ids, timestamps
    included), `compression_ratio` (of the window's text), `temperature` and `no_speech_prob`
    (the decoder's, None when not given) and, inherited, `avg_logprob` (None without
    log-probabilities)."""

    seek: int
    tokens: tuple[int, ...]
    compression_ratio: float
    temperature: float | None = None
    no_speech_prob: float | None = None


def whisper_window(
    tok: Any,
    ids: Sequence[int],
    *,
    offset: float = 0.0,
    duration: float = 30.0,
    logprobs: Sequence[float] | None = None,
    temperature: float | None = None,
    no_speech_prob: float | None = None,
    seek: int | None = None,
) -> list[WhisperSegment]:
    """One Whisper window's segments (``tok.segments``: openai-whisper's cut at its timestamp
    tokens) with the values faster-whisper's ``generate_segments`` gives them.

    Args:
        tok: a whisper-kind tokenizer (it is asked for ``segments``, ``decode`` and ``eot``).
        ids: the window's ids as the decoder gave them (a start-of-transcript sequence before
            them and an end-of-text after them are allowed: they are not the window's).
        offset: the window's start in the audio, seconds.
        duration: the window's length in seconds (30 but for the last window).
        logprobs: one log-probability per id (the end-of-text's included when it is there):
            each segment then has the window's ``avg_logprob``, their sum over the count of
            the window's tokens plus one, as both decoders compute it.
        temperature: the temperature the window was decoded at (None: not reported).
        no_speech_prob: the decoder's no-speech probability of the window (None: not reported).
        seek: the window's start in mel frames; by default ``round(offset * FRAMES_PER_SECOND)``.

    Returns:
        list[WhisperSegment]: the window's segments in order, each with its ``tokens`` (the
        ids it was cut from, timestamps included) and the window's ``compression_ratio`` (of
        the decode of every sampled id, stripped, as faster-whisper computes it).

    Raises TranscriptionFormatError for logprobs of the wrong length or a bad option, and
    the tokenizer's own errors (InvalidIdError, TimingError) for bad ids or times.
    """
    ids = list(ids)
    if logprobs is not None:
        logprobs = _log_probabilities(logprobs, len(ids), "logprobs")
    temperature = _optional_number(temperature, "temperature", 0.0, math.inf)
    no_speech_prob = _optional_number(no_speech_prob, "no_speech_prob", 0.0, 1.0)
    if seek is None:
        seek = round(seconds_of(offset, "option offset") * FRAMES_PER_SECOND)
    seek = _count(seek, "option seek")
    segments = tok.segments(ids, offset=offset, duration=duration, scores=logprobs)
    lo = segments[0].first_token  # the window's first sampled id (its empty segment's too)
    hi = next((k for k in range(lo, len(ids)) if ids[k] == tok.eot), len(ids))
    ratio = compression_ratio(tok.decode(ids[lo:hi]).strip())
    return [
        WhisperSegment(
            s.start,
            s.end,
            s.text,
            s.first_token,
            s.last_token,
            s.avg_logprob,
            seek=seek,
            tokens=tuple(ids[s.first_token : s.last_token + 1]),
            compression_ratio=ratio,
            temperature=temperature,
            no_speech_prob=no_speech_prob,
        )
        for s in segments
    ]


# -- the response objects ----------------------------------------------------------------------


def transcription(
    transcript: TimedTranscript,
    response_format: str = "json",
    *,
    timestamp_granularities: Sequence[str] | None = None,
    logprobs: Sequence[Any] | None = None,
    language: str | None = None,
    temperature: float | None = None,
) -> dict[str, Any] | str:
    """The response to a transcription request, in `response_format`.

    Args:
        transcript: the text, language, duration, words and segments (a `TimedTranscript`).
        response_format: ``json`` (``{"text"}``, and ``"logprobs"`` when given), ``text``
            (the text itself), ``srt`` and ``vtt`` (one cue per segment, as openai-whisper's
            writers write them) or ``verbose_json`` (language, duration, text, and
            ``segments`` and/or ``words`` as `timestamp_granularities` asks).
        timestamp_granularities: for ``verbose_json``: ``["segment"]`` by default;
            ``["word"]`` gives words and no segments, ``["word", "segment"]`` both, as the API
            answers. ``word`` with another format is refused, as the API refuses it.
        logprobs: for ``json`` with ``include=["logprobs"]``: one entry per token, a
            ``(token, logprob)`` pair or a mapping with ``token``, ``logprob`` and optionally
            ``bytes`` (`token_logprobs` makes them from a stream).
        language: the language to report when the transcript names none (the request's).
        temperature: the temperature to report on segments that do not carry one.

    Returns:
        dict | str: the JSON object (``json``, ``verbose_json``) or the text (``text``,
        ``srt``, ``vtt``). In ``verbose_json``, a segment value that was neither given nor
        computable (``avg_logprob`` without log-probabilities, ``seek``, ``tokens``,
        ``temperature``, ``no_speech_prob`` of a plain `Segment`) is left out.

    Example:
        >>> from types import SimpleNamespace
        >>> from oasr_tok.outputs.segments import Segment
        >>> t = SimpleNamespace(text=" Hi there.", language="en", duration=1.5, words=None,
        ...                     segments=[Segment(0.0, 1.2, " Hi there.", 0, 2)])
        >>> transcription(t, "json")
        {'text': ' Hi there.'}
        >>> print(transcription(t, "srt"), end="")
        1
        00:00:00,000 --> 00:00:01,200
        Hi there.
        <BLANKLINE>
    """
    fmt = _response_format(response_format)
    granularities = _granularities(timestamp_granularities)
    if "word" in granularities and fmt != "verbose_json":
        raise TranscriptionFormatError(
            f'timestamp_granularities ["word"] needs response_format "verbose_json", not {fmt!r} '
            "(the API refuses the request)"
        )
    if logprobs is not None and fmt != "json":
        raise TranscriptionFormatError(f'logprobs are part of response_format "json" only, not {fmt!r}')
    text = _text(transcript)
    if fmt == "text":
        return text
    if fmt == "json":
        out: dict[str, Any] = {"text": text}
        if logprobs is not None:
            out["logprobs"] = [
                {"token": token, "logprob": logprob, "bytes": list(data)}
                for token, logprob, data in _entries(logprobs, "logprobs")
            ]
        return out
    if fmt in ("srt", "vtt"):
        kept = _kept_segments(transcript, text)
        result = {"segments": [{"start": start, "end": end, "text": t} for _, start, end, t in kept]}
        return to_srt(result) if fmt == "srt" else to_vtt(result)
    out = {}
    named = _attribute(transcript, "language")
    named = language if named is None else named
    if named is not None:
        if not isinstance(named, str):
            raise TranscriptionFormatError(f"language must be a str, got {short_repr(named)}")
        out["language"] = named
    out["duration"] = seconds_of(_attribute(transcript, "duration"), "the transcript's duration")
    out["text"] = text
    if "segment" in granularities:
        out["segments"] = _segment_rows(transcript, text, _optional_number(temperature, "temperature", 0.0, math.inf))
    if "word" in granularities:
        words = _attribute(transcript, "words")
        if words is None:
            raise TranscriptionFormatError(
                'timestamp_granularities asks for "word" but the transcript has no word timings '
                "(give it tok.word_timings(...))"
            )
        out["words"] = [{"word": w, "start": start, "end": end} for start, end, w in timed_items(words, "word")]
    return out


def response_body(
    transcript: TimedTranscript,
    response_format: str = "json",
    *,
    timestamp_granularities: Sequence[str] | None = None,
    logprobs: Sequence[Any] | None = None,
    language: str | None = None,
    temperature: float | None = None,
) -> tuple[str, str]:
    """`transcription(...)` as the text of an HTTP response body and its Content-Type:
    JSON (UTF-8, not ASCII-escaped) for ``json`` and ``verbose_json``, the text itself for
    ``text``, ``srt`` and ``vtt``.

    Returns:
        tuple[str, str]: (body, media type), e.g. ``('{"text": " Hi."}', "application/json")``.
    """
    result = transcription(
        transcript,
        response_format,
        timestamp_granularities=timestamp_granularities,
        logprobs=logprobs,
        language=language,
        temperature=temperature,
    )
    body = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, allow_nan=False)
    return body, MEDIA_TYPES[response_format]


def _response_format(response_format: Any) -> str:
    if response_format not in RESPONSE_FORMATS:
        raise TranscriptionFormatError(
            f"response_format must be one of {', '.join(RESPONSE_FORMATS)}, got {short_repr(response_format)}"
        )
    return str(response_format)


def _granularities(granularities: Any) -> frozenset[str]:
    if granularities is None:
        return frozenset(("segment",))
    if isinstance(granularities, (str, bytes)) or not isinstance(granularities, Iterable):
        raise TranscriptionFormatError(
            f'timestamp_granularities must be a list of "word" and "segment", got {short_repr(granularities)}'
        )
    out = frozenset(granularities)
    bad = sorted(str(g) for g in out - frozenset(TIMESTAMP_GRANULARITIES))
    if bad:
        raise TranscriptionFormatError(f'timestamp_granularities may hold "word" and "segment", not {bad}')
    return out or frozenset(("segment",))  # an empty list is the default, as the API reads it


def _attribute(transcript: Any, name: str) -> Any:
    if isinstance(transcript, Mapping):
        if name in transcript:
            return transcript[name]
    elif hasattr(transcript, name):
        return getattr(transcript, name)
    raise TranscriptionFormatError(f"the transcript ({type(transcript).__name__}) has no {name!r}")


def _text(transcript: Any) -> str:
    text = _attribute(transcript, "text")
    if not isinstance(text, str):
        raise TranscriptionFormatError(f"the transcript's text must be a str, got {type(text).__name__}")
    return text


def _field(item: Any, name: str) -> Any:
    """An optional field of a segment: a mapping's key or an object's attribute, else None."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _kept_segments(transcript: Any, text: str) -> list[tuple[Any, float, float, str]]:
    """The transcript's segments, checked (TimingError naming one whose times are bad or out of
    order), as (segment, start, end, text). Without segments, sentence-like ones are made from its words
    (segment_words); with neither, the whole text is one segment over the whole audio. A
    segment that is instantaneous or has no text is left out, as faster-whisper leaves it out
    (openai-whisper keeps it with its text cleared)."""
    segments = _attribute(transcript, "segments")
    if segments is None:
        words = _attribute(transcript, "words")
        if words is not None:
            segments = segment_words(words)
        else:
            duration = seconds_of(_attribute(transcript, "duration"), "the transcript's duration")
            segments = [Segment(0.0, duration, text, 0, 0)]
    if isinstance(segments, (str, bytes, Mapping)) or not isinstance(segments, Iterable):
        raise TranscriptionFormatError(f"the transcript's segments must be a list, got {type(segments).__name__}")
    items = list(segments)
    kept: list[tuple[Any, float, float, str]] = []
    previous = (-1, -math.inf)
    for k, (segment, (start, end, seg_text)) in enumerate(zip(items, timed_items(items, "segment", ordered=False))):
        if start == end or not seg_text.strip():
            continue
        # In order among those kept: a left-out instantaneous segment at the end of a Whisper
        # window may start a float's last bit after the next window's offset (seek * 0.01
        # against offset + position * 0.02), as openai-whisper and faster-whisper compute them.
        if start < previous[1]:
            raise TimingError(
                f"segment {k} ({seg_text[:40]!r}) starts ({start}) before segment {previous[0]} ({previous[1]}): out of order"
            )
        previous = (k, start)
        kept.append((segment, start, end, seg_text))
    return kept


def _segment_rows(transcript: Any, text: str, temperature: float | None) -> list[dict[str, Any]]:
    """The kept segments as the API's segment objects, with ids from 0 and, of the values a
    decoder reports, those the segment carries (a `WhisperSegment` carries them all)."""
    rows: list[dict[str, Any]] = []
    for segment, start, end, seg_text in _kept_segments(transcript, text):
        where = f"segment {len(rows)} ({seg_text[:40]!r})"
        row: dict[str, Any] = {"id": len(rows)}
        seek = _field(segment, "seek")
        if seek is not None:
            row["seek"] = _count(seek, f"{where} seek")
        row["start"], row["end"], row["text"] = start, end, seg_text
        tokens = _field(segment, "tokens")
        if tokens is not None:
            row["tokens"] = _token_ids(tokens, where)
        value = _optional_number(_field(segment, "temperature"), f"{where} temperature", 0.0, math.inf)
        value = temperature if value is None else value
        if value is not None:
            row["temperature"] = value
        value = _optional_number(_field(segment, "avg_logprob"), f"{where} avg_logprob", -math.inf, 0.0)
        if value is not None:
            row["avg_logprob"] = value
        value = _optional_number(_field(segment, "compression_ratio"), f"{where} compression_ratio", 0.0, math.inf)
        # Its own text's ratio when the segment does not carry its window's: a value of the
        # segment itself, never a stand-in.
        row["compression_ratio"] = compression_ratio(seg_text.strip()) if value is None else value
        value = _optional_number(_field(segment, "no_speech_prob"), f"{where} no_speech_prob", 0.0, 1.0)
        if value is not None:
            row["no_speech_prob"] = value
        rows.append(row)
    return rows


def _optional_number(value: Any, where: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and low <= number <= high):  # NaN and non-numbers fail here
        bounds = f"in {low} ... {high}" if math.isfinite(high) else f">= {low}"
        if not math.isfinite(low):
            bounds = f"<= {high}"
        raise TranscriptionFormatError(f"{where} = {short_repr(value)} is not a finite number {bounds}")
    return number


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise TranscriptionFormatError(f"{where} = {short_repr(value)} is not an integer >= 0")
    return int(value)


def _token_ids(tokens: Any, where: str) -> list[int]:
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
        raise TranscriptionFormatError(f"{where} tokens must be a list of ids, got {short_repr(tokens)}")
    return [_count(t, f"{where} tokens[{j}]") for j, t in enumerate(tokens)]


# -- log-probabilities -------------------------------------------------------------------------


def _log_probabilities(values: Any, count: int, where: str) -> list[float]:
    """`values` as floats, one per token, each finite and <= 0."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TranscriptionFormatError(f"{where} must be numbers, one per token, got {short_repr(values)}")
    out = list(values)
    if len(out) != count:
        raise TranscriptionFormatError(f"{where} has {len(out)} values for {count} tokens: give one per token")
    for k, value in enumerate(out):
        if value.__class__ is float and -math.inf < value <= 0.0:  # the usual case, NaN fails it
            continue
        checked = _optional_number(value, f"{where}[{k}]", -math.inf, 0.0)
        if checked is None:
            raise TranscriptionFormatError(f"{where}[{k}] is None: a log-probability is a finite number <= 0")
        out[k] = checked
    return out


def _entries(entries: Any, where: str) -> list[tuple[str, float, bytes]]:
    """Each entry as (token, logprob, bytes): a (token, logprob[, bytes]) sequence or a
    mapping / object with token, logprob and optionally bytes (the token's UTF-8 by default)."""
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Iterable):
        raise TranscriptionFormatError(f"{where} must be a list of (token, logprob) entries, got {short_repr(entries)}")
    out = []
    for k, entry in enumerate(entries):
        at = f"{where}[{k}]"
        if isinstance(entry, Mapping) or hasattr(entry, "logprob"):
            token, logprob, data = _field(entry, "token"), _field(entry, "logprob"), _field(entry, "bytes")
        elif isinstance(entry, Sequence) and not isinstance(entry, (str, bytes)) and len(entry) in (2, 3):
            token, logprob, data = entry[0], entry[1], entry[2] if len(entry) == 3 else None
        else:
            raise TranscriptionFormatError(f"{at} = {short_repr(entry)} is not a (token, logprob) entry")
        if not isinstance(token, str):
            raise TranscriptionFormatError(f"{at}: token must be a str, got {short_repr(token)}")
        number = _optional_number(logprob, f"{at} logprob", -math.inf, 0.0)
        if number is None:
            raise TranscriptionFormatError(f"{at} has no logprob")
        if data is None:
            raw = token.encode("utf-8")
        else:
            try:
                raw = bytes(data)
            except (TypeError, ValueError):
                raise TranscriptionFormatError(
                    f"{at}: bytes must be byte values 0 ... 255, got {short_repr(data)}"
                ) from None
        out.append((token, number, raw))
    return out


def _stepped(stream: Any, ids: Sequence[int], final: bool) -> list[str]:
    """Each id's own text: the stream fed one id at a time, so a token's text is what it made
    the stream print (a character split across tokens is the text of the token that
    completed it). With `final`, the flush's text is the last item, beyond the ids. The ids
    are checked against the stream's tokenizer first, so that a bad id is refused before the
    stream has taken any of them (each feed is atomic, a run of them is not)."""
    tokenizer = getattr(stream, "tokenizer", None)
    check = getattr(tokenizer, "check_ids", None)
    if check is not None:
        check(ids)
    pieces = [stream.feed([token_id]) for token_id in ids]
    if final:
        pieces.append(stream.feed([], final=True))
    return pieces


def token_logprobs(stream: Any, ids: Sequence[int], logprobs: Sequence[float]) -> list[dict[str, Any]]:
    """The ``logprobs`` of a ``json`` response: one ``{"token", "logprob", "bytes"}`` per id.

    Args:
        stream: a fresh stream of the transcript's tokenizer (``tok.new_stream(...)``, with
            the envelope it decodes with); it is fed `ids` one at a time and flushed.
        ids: the transcript's ids.
        logprobs: one log-probability per id (finite, <= 0).

    Returns:
        list[dict]: per id, the text it made the stream print (a character split across
        tokens belongs to the token that completed it; what the final flush prints joins the
        last token), its log-probability and the UTF-8 bytes of that text; the tokens join
        to the stream's text.
    """
    ids = list(ids)
    checked = _log_probabilities(logprobs, len(ids), "logprobs")
    pieces = _stepped(stream, ids, final=True)
    tail = pieces.pop()
    if pieces:
        pieces[-1] += tail
    return [{"token": p, "logprob": lp, "bytes": list(p.encode("utf-8"))} for p, lp in zip(pieces, checked)]


# -- server-sent events ------------------------------------------------------------------------

_DELTA = 'data: {"type":"transcript.text.delta","delta":'
_DONE = 'data: {"type":"transcript.text.done","text":'
_END = "}\n\n"
#: What some servers (vLLM) send after the last event; the SDK's stream stops at it.
SSE_DONE = "data: [DONE]\n\n"


def _entry_json(token: str, logprob: float, data: bytes) -> str:
    return f'{{"token":{_json_string(token)},"logprob":{logprob!r},"bytes":[{",".join(map(str, data))}]}}'


#: token -> the JSON of its entry around the logprob: a vocabulary's tokens recur, and writing
#: a token's bytes as a JSON list is most of an entry's cost. Bounded: emptied when full.
_TOKEN_JSON: dict[str, tuple[str, str]] = {}
_TOKEN_JSON_LIMIT = 1 << 16


def _token_json(token: str) -> tuple[str, str]:
    parts = _TOKEN_JSON.get(token)
    if parts is None:
        if len(_TOKEN_JSON) >= _TOKEN_JSON_LIMIT:
            _TOKEN_JSON.clear()
        data = ",".join(map(str, token.encode("utf-8")))
        parts = _TOKEN_JSON[token] = (f'{{"token":{_json_string(token)},"logprob":', f',"bytes":[{data}]}}')
    return parts


def _entries_json(entries: Any, where: str) -> list[str]:
    """Each (token, logprob[, bytes]) entry as its JSON object (checked as `_entries` checks)."""
    if isinstance(entries, (list, tuple)):
        out = []
        for entry in entries:
            # the usual entry, a (str, float) pair with a finite logprob <= 0, without a call
            if entry.__class__ is tuple and len(entry) == 2:
                token, logprob = entry
                if token.__class__ is str and logprob.__class__ is float and -math.inf < logprob <= 0.0:
                    head, tail = _token_json(token)
                    out.append(head + repr(logprob) + tail)
                    continue
            break
        else:
            return out
    return [_entry_json(*entry) for entry in _entries(entries, where)]


class TranscriptionEvents:
    """One request's server-sent events: a ``transcript.text.delta`` per delta and exactly
    one ``transcript.text.done``, each as the lines to write (``data: {...}`` and a blank
    line), as the API sends them and the `openai` SDK's stream reads them.

    Make one per request and give it every delta of the request, from however many chunks
    and streams: its state, not the caller, makes the done event the only one. `delta` costs
    one JSON string escape and a concatenation; the done event's text is the deltas joined.

    Args:
        logprobs: the request asked for ``include=["logprobs"]``: every delta then comes with
            its tokens' log-probabilities, and the done event carries them all.
        done_sentinel: follow the done event with ``data: [DONE]`` (as vLLM does; the SDK
            stops at it, and reads a stream without it just as well).

    Example:
        >>> events = TranscriptionEvents()
        >>> print(events.delta(" Hello"), end="")
        data: {"type":"transcript.text.delta","delta":" Hello"}
        <BLANKLINE>
        >>> print(events.done(), end="")
        data: {"type":"transcript.text.done","text":" Hello"}
        <BLANKLINE>
    """

    __slots__ = ("_logprobs", "_sentinel", "_parts", "_entries", "_pending", "_closed", "_tokens", "_uncounted")

    def __init__(self, *, logprobs: bool = False, done_sentinel: bool = False) -> None:
        self._logprobs = bool(logprobs)
        self._sentinel = bool(done_sentinel)
        self._parts: list[str] = []
        self._entries: list[str] = []  # every token's logprob entry, as JSON, for the done event
        self._pending: list[str] = []  # entries of tokens that printed nothing yet: the next delta's
        self._closed = False
        self._tokens = 0  # tokens counted (fed, or given a logprob), for usage.output_tokens
        self._uncounted = False  # a delta came without its tokens: output_tokens must be given

    @property
    def text(self) -> str:
        """Everything the delta events have sent so far."""
        return "".join(self._parts)

    @property
    def closed(self) -> bool:
        """The done event was written: nothing more may be."""
        return self._closed

    @property
    def logprobs(self) -> bool:
        return self._logprobs

    def delta(self, text: str, logprobs: Sequence[Any] | None = None) -> str:
        """The event for one delta of the transcript: its SSE lines, or "" when there is
        nothing to send (an empty delta; with logprobs, its tokens' entries ride with the
        next delta that has text, and are all in the done event).

        Args:
            text: the new text (a Stream's delta, or the settled part of a stitched transcript).
            logprobs: with a writer made with ``logprobs=True`` (and only then), the tokens
                behind this delta: ``(token, logprob)`` pairs or mappings with ``token``,
                ``logprob`` and optionally ``bytes``.

        Returns:
            str: ``data: {"type":"transcript.text.delta","delta":...}`` and a blank line.
        """
        if self._closed:
            raise _after_done()
        if logprobs is None and not self._logprobs:  # the hot path: one escape, one concatenation
            if text.__class__ is not str:
                raise TranscriptionFormatError(f"a delta must be a str, got {type(text).__name__}")
            if not text:
                return ""
            self._parts.append(text)
            self._uncounted = True
            return _DELTA + _json_string(text) + _END
        if not isinstance(text, str):
            raise TranscriptionFormatError(f"a delta must be a str, got {type(text).__name__}")
        if not self._logprobs:
            raise TranscriptionFormatError("logprobs given, but this request's events were made without logprobs=True")
        if logprobs is None:
            raise TranscriptionFormatError(
                "this request asked for logprobs: give each delta's (token, logprob) entries"
            )
        entries = _entries_json(logprobs, "logprobs")
        return self._commit(text, entries, len(entries))

    def feed(
        self, stream: Any, ids: Sequence[int], logprobs: Sequence[float] | None = None, *, final: bool = False
    ) -> str:
        """Feed `ids` to `stream` (``stream.feed(ids, final)``) and return the event for the
        text it printed.

        Args:
            stream: the stream of the chunk being generated (a chunked request feeds each
                chunk's stream in turn to the same writer).
            ids: the new ids.
            logprobs: one log-probability per id, when the request asked for them (a flush
                with no ids needs none): the stream is then fed one id at a time and each
                token's text is what it printed (a character split across tokens belongs to
                the token that completed it; a flush's text belongs to no token).
            final: flush and close `stream` (not the request: that is `done`).

        Returns:
            str: the delta event, or "" when the stream printed nothing.

        A refused call (logprobs of the wrong length, a bad id, a closed stream) leaves the
        writer and the stream as they were.
        """
        if self._closed:
            raise _after_done()
        if self._logprobs:
            ids = list(ids)
            if logprobs is None:
                if ids:
                    raise TranscriptionFormatError("this request asked for logprobs: give one per id")
                logprobs = ()  # a flush feeds no id: nothing to give
            checked = _log_probabilities(logprobs, len(ids), "logprobs")
            pieces = _stepped(stream, ids, final)
            flushed = pieces.pop() if final else ""
            entries = []
            for piece, logprob in zip(pieces, checked):
                head, tail = _token_json(piece)
                entries.append(head + repr(logprob) + tail)
            return self._commit("".join(pieces) + flushed, entries, len(ids))
        if logprobs is not None:
            raise TranscriptionFormatError("logprobs given, but this request's events were made without logprobs=True")
        count = len(ids)
        text = stream.feed(ids, final=final)
        self._tokens += count
        if not text:
            return ""
        self._parts.append(text)
        return _DELTA + _json_string(text) + _END

    def _commit(self, text: str, entries: list[str], count: int) -> str:
        self._tokens += count
        self._entries += entries
        if not text:
            self._pending += entries
            return ""
        riding = self._pending + entries
        self._pending = []
        self._parts.append(text)
        return f'{_DELTA}{_json_string(text)},"logprobs":[{",".join(riding)}]{_END}'

    def done(
        self, text: str | None = None, *, input_tokens: int | None = None, output_tokens: int | None = None
    ) -> str:
        """The request's one ``transcript.text.done`` event (after a last delta event when
        `text` goes on past what was sent); the writer is closed after it.

        Args:
            text: the final text, when the caller holds it (a stitched transcript's): it must
                begin with everything sent, and the rest is sent as a last delta first. By
                default the deltas joined.
            input_tokens: the request's input tokens: the event then has ``usage`` (type
                ``tokens``), with `output_tokens` (by default the tokens fed or given a
                log-probability through this writer).
            output_tokens: the output tokens to report.

        Returns:
            str: ``data: {"type":"transcript.text.done","text":...}`` and a blank line (with
            ``logprobs``: every token's, when the request asked), then ``data: [DONE]`` when
            the writer was made with ``done_sentinel=True``.
        """
        if self._closed:
            raise _after_done()
        sent = self.text
        rest = ""
        if text is not None:
            if not isinstance(text, str):
                raise TranscriptionFormatError(f"the final text must be a str, got {type(text).__name__}")
            if not text.startswith(sent):
                raise TranscriptionFormatError(
                    "the final text does not begin with what the delta events sent: a sent delta cannot be taken back "
                    f"(sent {short_repr(sent[-40:])} at the end, the text has {short_repr(text[len(sent) - 40 : len(sent)])})"
                )
            rest = text[len(sent) :]
        usage = self._usage(input_tokens, output_tokens, bool(rest))
        head = ""
        if rest:
            if self._logprobs:
                head = f'{_DELTA}{_json_string(rest)},"logprobs":[{",".join(self._pending)}]{_END}'
                self._pending = []
            else:
                head = _DELTA + _json_string(rest) + _END
            self._parts.append(rest)
        body = _DONE + _json_string(sent + rest)
        if self._logprobs:
            body += ',"logprobs":[' + ",".join(self._entries) + "]"
        if usage is not None:
            body += ',"usage":' + json.dumps(usage, separators=(",", ":"))
        self._closed = True
        return head + body + _END + (SSE_DONE if self._sentinel else "")

    def _usage(self, input_tokens: Any, output_tokens: Any, uncounted_rest: bool) -> dict[str, Any] | None:
        if input_tokens is None:
            if output_tokens is not None:
                raise TranscriptionFormatError("output_tokens without input_tokens: usage needs both")
            return None
        given = _count(input_tokens, "input_tokens")
        if output_tokens is None:
            if self._uncounted or uncounted_rest:
                raise TranscriptionFormatError(
                    "give output_tokens: some of the text came through delta() without its tokens"
                )
            output = self._tokens
        else:
            output = _count(output_tokens, "output_tokens")
        return {"type": "tokens", "input_tokens": given, "output_tokens": output, "total_tokens": given + output}


def _after_done() -> StreamStateError:
    return StreamStateError(
        "this request's transcript.text.done event was already written: a request has exactly one, "
        "and nothing follows it (make a TranscriptionEvents per request)"
    )
