"""The OpenAI transcription objects and events (oasr_tok.outputs.openai_audio), read by the
`openai` SDK itself: every object and event is validated by the SDK's own pydantic models in
strict mode with no field they do not declare (`strictly`), and the bodies and event streams
go through the SDK's own client (`client.audio.transcriptions.create`, over an httpx
MockTransport) and its SSE decoder. Values come from the references: openai-whisper's
`compression_ratio` and Tokenizer (tests/whisper_utils_reference.py,
tests/whisper_transcribe_reference.py), its decoder's avg_logprob rule, its subtitle writers;
faster-whisper's own segments are compared in tests/peers/test_faster_whisper_verbose_json.py.

The gaps users filed against other servers are tests here, each naming its issue."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import httpx2
import pydantic
import pytest
import srt
import webvtt
from hypothesis import example, given
from hypothesis import strategies as st
from openai import OpenAI
from openai._models import construct_type
from openai._streaming import SSEDecoder
from openai.types.audio import (
    Transcription,
    TranscriptionSegment,
    TranscriptionTextDeltaEvent,
    TranscriptionTextDoneEvent,
    TranscriptionVerbose,
    TranscriptionWord,
)

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.errors import InvalidIdError, StreamStateError, TimingError, TranscriptionFormatError
from oasr_tok.outputs import subtitles
from oasr_tok.outputs.openai_audio import (
    MEDIA_TYPES,
    SSE_DONE,
    TranscriptionEvents,
    WhisperSegment,
    compression_ratio,
    response_body,
    token_logprobs,
    transcription,
    whisper_window,
)
from oasr_tok.outputs.segments import Segment

import whisper_utils_reference as whisper_utils
from cases import all_cases
from paths import shared
from strategies import splits, timed_rows, transcript_texts, whisper_windows
from whisper_transcribe_reference import Tokenizer as ReferenceTokenizer
from whisper_transcribe_reference import get_encoding

# -- how the SDK reads what we write -----------------------------------------------------------


def strictly(model: type[pydantic.BaseModel], data: Any) -> pydantic.BaseModel:
    """`data` as the SDK's `model` reads it in pydantic's strict mode (no coercion, every
    required field present), refusing any field the SDK does not declare, at any depth."""
    parsed = model.model_validate(data, strict=True)
    _declared_only(parsed, model.__name__)
    return parsed


def _declared_only(value: Any, path: str) -> None:
    if isinstance(value, pydantic.BaseModel):
        assert not value.model_extra, f"{path} has fields the SDK does not declare: {sorted(value.model_extra)}"
        for name in type(value).model_fields:
            _declared_only(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list):
        for k, item in enumerate(value):
            _declared_only(item, f"{path}[{k}]")


def sdk_client(body: str, media_type: str, strict: bool = True) -> OpenAI:
    """The openai SDK's client, answered by a server that sends `body`."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": media_type}, content=body.encode("utf-8"))

    return OpenAI(
        api_key="test",
        base_url="http://speech.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
        _strict_response_validation=strict,
    )


def sdk_create(body: str, media_type: str, strict: bool = True, **params: Any) -> Any:
    client = sdk_client(body, media_type, strict)
    return client.audio.transcriptions.create(file=("audio.wav", b"RIFF"), model="whisper-1", **params)


def sse_events(lines: str, cuts: list[int] = ()) -> list[dict[str, Any]]:
    """The events the SDK's own SSE decoder reads from `lines` arriving in pieces cut at
    `cuts` (byte offsets)."""
    data = lines.encode("utf-8")
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    chunks = [data[a:b] for a, b in zip(bounds, bounds[1:])]
    return [event.json() for event in SSEDecoder().iter_bytes(iter(chunks)) if not event.data.startswith("[DONE]")]


# -- transcripts ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Transcript:
    """The shape `transcription` reads (oasr_tok.outputs.stitching.StitchedTranscript's)."""

    text: str
    language: str | None
    duration: float
    words: Any = None
    segments: Any = None


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(
        TokenizerSpec("whisper", {"tokenizer": shared("whisper/faster-whisper-base/tokenizer.json")})
    )


@pytest.fixture(scope="module")
def reference():
    return ReferenceTokenizer(get_encoding(shared("whisper-tiktoken/multilingual.tiktoken")))


def two_windows(tok) -> list[tuple[float, list[int]]]:
    """A two-window Whisper decode: (offset, the window's ids with its start-of-transcript
    sequence and end-of-text)."""
    ts, sot = tok.timestamp_id, tok.sot_sequence(language="en", task="transcribe")
    first = [ts(0.0), *tok.encode(" Hello world."), ts(1.5), ts(1.5), *tok.encode(" 今天天气很好，"), ts(4.0), ts(4.0)]
    first += [*tok.encode(" and so"), ts(6.2)]  # an unfinished segment: openai-whisper decodes it again
    second = [ts(0.0), *tok.encode(' "quoted" \\ back'), ts(2.0), ts(2.5), *tok.encode(" 😀 ok"), ts(3.0)]
    return [(0.0, sot + first + [tok.eot]), (24.0, sot + second + [tok.eot])]


def logprobs_for(ids: list[int]) -> list[float]:
    return [-((7 * k) % 11) / 13 for k in range(len(ids))]


def whisper_decode(tok, with_logprobs: bool = True) -> Transcript:
    segments: list[WhisperSegment] = []
    for offset, ids in two_windows(tok):
        segments += whisper_window(
            tok,
            ids,
            offset=offset,
            logprobs=logprobs_for(ids) if with_logprobs else None,
            temperature=0.2,
            no_speech_prob=0.03125,
        )
    text = "".join(s.text for s in segments)
    ids = [t for s in segments for t in s.tokens if t < tok.eot]
    words = tok.word_timings(ids, [0.1 * k for k in range(len(ids))])
    return Transcript(text, "en", 27.5, words, segments)


# -- json and text -------------------------------------------------------------------------------


def test_json_is_the_sdks_transcription(tok):
    t = whisper_decode(tok)
    out = transcription(t, "json")
    assert strictly(Transcription, out).text == t.text
    body, media_type = response_body(t, "json")
    assert media_type == MEDIA_TYPES["json"] == "application/json"
    assert sdk_create(body, media_type, response_format="json").text == t.text
    assert sdk_create(body, media_type).text == t.text  # the SDK's default format


def test_text_is_the_transcript_text_as_the_sdk_reads_it(tok):
    t = whisper_decode(tok)
    body, media_type = response_body(t, "text")
    assert body == t.text
    assert sdk_create(body, media_type, response_format="text") == t.text


def _kinds():
    # One tokenizer of each kind and variant (the specials-as-text copies decode the same way).
    return [c for c in all_cases() if not c.name.startswith("with_specials/")]


@pytest.mark.parametrize("case", _kinds(), ids=lambda c: c.name)
def test_json_logprobs_are_each_tokens_own_text(case):
    """include=["logprobs"]: one {token, logprob, bytes} per id, token the text that id made
    the stream print; the tokens join to the transcript (every kind, its realistic streams)."""
    tok, interesting, realistic = case.inputs()
    for ids in [*realistic[:4], interesting[:24]]:
        lps = logprobs_for(ids)
        entries = token_logprobs(tok.new_stream(), ids, lps)
        text = tok.decode(ids)
        parsed = strictly(Transcription, {"text": text, "logprobs": entries})
        assert "".join(e.token for e in parsed.logprobs) == text
        assert [e.logprob for e in parsed.logprobs] == lps
        assert all(bytes(e["bytes"]) == e["token"].encode("utf-8") for e in entries)
        out = transcription(Transcript(text, None, 0.0), "json", logprobs=[(e["token"], e["logprob"]) for e in entries])
        assert out == {"text": text, "logprobs": entries}


# -- srt and vtt: our whisper writers ------------------------------------------------------------


def _kept(rows):
    # faster-whisper keeps a segment that has a length and text (its generate_segments)
    return [{"start": s, "end": e, "text": t} for s, e, t in rows if s != e and t.strip()]


@given(rows=timed_rows())
@example(rows=[(0.0, 1.0, " a --> b"), (1.0, 1.0, " gone"), (1.5, 2.0, "  "), (3.0, 4.5, " 今天\n\n天气")])
def test_srt_and_vtt_are_our_whisper_writers_on_the_same_segments(rows):
    t = Transcript("".join(r[2] for r in rows), "en", 60.0, None, [Segment(s, e, x, 0, 0) for s, e, x in rows])
    result = {"segments": _kept(rows)}
    for fmt, parse in (("srt", lambda text: list(srt.parse(text))), ("vtt", lambda text: webvtt.from_string(text))):
        body, media_type = response_body(t, fmt)
        assert body == subtitles.whisper_output(result, fmt)
        assert sdk_create(body, media_type, response_format=fmt) == body
        cues = list(parse(body))
        assert len(cues) == len(result["segments"])


def test_srt_and_vtt_are_openai_whispers_own_writers(tok):
    """On a Whisper decode (no arrow or blank line for our writers to repair), byte for byte
    what openai-whisper's WriteSRT and WriteVTT write for the same segments."""
    import io

    t = whisper_decode(tok)
    result = {"segments": [{"start": s.start, "end": s.end, "text": s.text} for s in t.segments if s.text.strip()]}
    for fmt, writer in (("srt", whisper_utils.WriteSRT), ("vtt", whisper_utils.WriteVTT)):
        written = io.StringIO()
        writer(".").write_result(
            result, written, {"max_line_width": None, "max_line_count": None, "highlight_words": False}
        )
        assert transcription(t, fmt) == written.getvalue()


# -- verbose_json --------------------------------------------------------------------------------


def test_verbose_json_of_a_whisper_decode_is_the_sdks_strictly(tok, reference):
    """Every field the SDK declares, of the right type, and nothing else; the values are
    openai-whisper's: avg_logprob its decoder's (the window's sampled log-probabilities, the
    end-of-text's included, over its token count plus one), compression_ratio its own
    function of its own decode of the window, stripped."""
    t = whisper_decode(tok)
    out = transcription(t, "verbose_json", timestamp_granularities=["segment", "word"])
    parsed = strictly(TranscriptionVerbose, out)
    body, media_type = response_body(t, "verbose_json", timestamp_granularities=["segment", "word"])
    client = sdk_create(body, media_type, response_format="verbose_json", timestamp_granularities=["segment", "word"])
    assert client == parsed
    assert (parsed.language, parsed.duration, parsed.text) == ("en", 27.5, t.text)
    kept = [s for s in t.segments if s.start != s.end and s.text.strip()]
    assert [s.id for s in parsed.segments] == list(range(len(kept)))
    by_window = {}
    for offset, ids in two_windows(tok):
        lo = len(tok.sot_sequence(language="en", task="transcribe"))
        hi = ids.index(tok.eot)
        lps = logprobs_for(ids)
        window_text = reference.decode([i for i in ids[lo:hi] if i < tok.eot]).strip()
        by_window[round(offset * 100)] = (
            math.fsum(lps[lo : hi + 1]) / (hi - lo + 1),
            whisper_utils.compression_ratio(window_text),
        )
    for row, segment in zip(parsed.segments, kept):
        assert (row.start, row.end, row.text, row.seek) == (segment.start, segment.end, segment.text, segment.seek)
        assert row.tokens == list(segment.tokens)
        assert (row.avg_logprob, row.compression_ratio) == by_window[row.seek]
        assert (row.temperature, row.no_speech_prob) == (0.2, 0.03125)
    assert [(w.word, w.start, w.end) for w in parsed.words] == [(w.text, w.start, w.end) for w in t.words]


@pytest.mark.parametrize(
    ("asked", "segments", "words"),
    [(None, True, False), ([], True, False), (["segment"], True, False), (["word"], False, True),
     (["word", "segment"], True, True), (["segment", "word"], True, True)],
)  # fmt: skip
def test_granularities_as_the_api_answers(tok, asked, segments, words):
    """OpenAI's answers to each combination, as speaches recorded them against the real API
    (fedirz/faster-whisper-server tests/openai_timestamp_granularities_test.py): segments
    unless only words were asked for; words only when asked for."""
    out = transcription(whisper_decode(tok), "verbose_json", timestamp_granularities=asked)
    assert ("segments" in out, "words" in out) == (segments, words)
    strictly(TranscriptionVerbose, out)


@pytest.mark.parametrize("fmt", ["json", "text", "srt", "vtt"])
def test_word_granularity_needs_verbose_json_as_the_api_says(tok, fmt):
    """The API answers 400 to words with another format (the same record): so do we, and a
    "segment" granularity there is accepted and changes nothing, as there."""
    t = whisper_decode(tok)
    with pytest.raises(TranscriptionFormatError, match="verbose_json"):
        transcription(t, fmt, timestamp_granularities=["word"])
    assert transcription(t, fmt, timestamp_granularities=["segment"]) == transcription(t, fmt)


def test_words_are_filled_when_asked_speaches_639_379_localai_9306(tok):
    """speaches #639 and #379, LocalAI #9306: `words` came back null although asked for. Here
    they are the transcript's timed words, each the SDK's TranscriptionWord; and a transcript
    without words is refused, never answered with a null list."""
    t = whisper_decode(tok)
    out = transcription(t, "verbose_json", timestamp_granularities=["word"])
    assert len(out["words"]) == len(t.words) > 0
    for row, word in zip(out["words"], t.words):
        assert strictly(TranscriptionWord, row) == TranscriptionWord(word=word.text, start=word.start, end=word.end)
    with pytest.raises(TranscriptionFormatError, match="no word timings"):
        transcription(dataclasses.replace(t, words=None), "verbose_json", timestamp_granularities=["word"])


def test_no_placeholder_without_logprobs_vllm_pr_24209(tok, reference):
    """vLLM PR #24209 filled avg_logprob and compression_ratio with -1.0. Without
    log-probabilities avg_logprob is left out (the SDK reads None, and its to_dict() has no
    such key); compression_ratio, a function of the text alone, is the real one; a plain
    Segment carries no seek, tokens, temperature or no_speech_prob, so those are left out too
    and exactly those: the strict parse misses nothing else."""
    ids = two_windows(tok)[0][1]
    plain = tok.segments(ids)
    t = Transcript(tok.decode(ids), "en", 30.0, None, plain)
    out = transcription(t, "verbose_json")
    text = json.dumps(out)
    assert "-1.0" not in text and "avg_logprob" not in text
    kept = [s for s in plain if s.start != s.end and s.text.strip()]
    for row, segment in zip(out["segments"], kept, strict=True):
        assert row["compression_ratio"] == whisper_utils.compression_ratio(segment.text.strip())
    with pytest.raises(pydantic.ValidationError) as failure:
        strictly(TranscriptionVerbose, out)
    missing = {(e["loc"][-1], e["type"]) for e in failure.value.errors()}
    assert missing == {(name, "missing") for name in ("avg_logprob", "seek", "tokens", "temperature", "no_speech_prob")}
    read = sdk_create(
        response_body(t, "verbose_json")[0], "application/json", strict=False, response_format="verbose_json"
    )
    assert read.segments[0].avg_logprob is None
    assert set(read.segments[0].to_dict()) == {"id", "start", "end", "text", "compression_ratio"}
    # given a temperature (the request's) and the decoder's scores, only the decoder's own
    # reports are missing
    scored = tok.segments(ids, scores=logprobs_for(ids))
    out = transcription(dataclasses.replace(t, segments=scored), "verbose_json", temperature=0.0)
    with pytest.raises(pydantic.ValidationError) as failure:
        strictly(TranscriptionVerbose, out)
    assert {e["loc"][-1] for e in failure.value.errors()} == {"seek", "tokens", "no_speech_prob"}
    assert all(row["avg_logprob"] == kept_row.avg_logprob for row, kept_row in zip(out["segments"], scored))


def test_segments_from_words_or_the_whole_text(tok):
    """Without segments, sentence-like ones cut from the words (segment_words); with neither,
    the text is one segment over the whole audio."""
    from oasr_tok.outputs.segments import segment_words

    t = whisper_decode(tok)
    out = transcription(dataclasses.replace(t, segments=None), "verbose_json")
    made = [s for s in segment_words(t.words) if s.start != s.end and s.text.strip()]
    assert [(r["start"], r["end"], r["text"]) for r in out["segments"]] == [(s.start, s.end, s.text) for s in made]
    bare = transcription(Transcript(" Just text.", None, 3.5), "verbose_json", language="fr")
    assert bare["language"] == "fr"
    assert [(r["start"], r["end"], r["text"]) for r in bare["segments"]] == [(0.0, 3.5, " Just text.")]
    assert (
        transcription(Transcript(" Just text.", None, 3.5), "srt") == "1\n00:00:00,000 --> 00:00:03,500\nJust text.\n\n"
    )


_decoder_values = st.fixed_dictionaries(
    {
        "seek": st.integers(0, 10**6),
        "tokens": st.lists(st.integers(0, 51864), max_size=6),
        "temperature": st.sampled_from([0.0, 0.2, 1.0]),
        "avg_logprob": st.floats(-30.0, 0.0),
        "compression_ratio": st.floats(0.0, 9.0),
        "no_speech_prob": st.floats(0.0, 1.0),
    }
)


@given(rows=timed_rows(), words=timed_rows(), values=st.data(), language=st.one_of(st.none(), transcript_texts))
def test_any_transcript_is_the_sdks_verbose_json(rows, words, values, language):
    """Random transcripts (every script, quotes, controls, arrows, instantaneous segments):
    with every decoder value on its segments, the SDK's strict parse holds; the JSON body
    reads back equal, and the SDK's client reads it."""
    segments = [{"start": s, "end": e, "text": x, **values.draw(_decoder_values)} for s, e, x in rows]
    t = Transcript(
        "".join(r[2] for r in rows), language, 99.0, [{"text": x, "start": s, "end": e} for s, e, x in words], segments
    )
    out = transcription(t, "verbose_json", timestamp_granularities=["word", "segment"], language="en")
    parsed = strictly(TranscriptionVerbose, out)
    assert parsed.language == (language if language is not None else "en")
    body, media_type = response_body(t, "verbose_json", timestamp_granularities=["word", "segment"], language="en")
    assert json.loads(body) == out
    assert sdk_create(body, media_type, response_format="verbose_json", timestamp_granularities=["word"]) == parsed
    kept = [(s, r) for s, r in zip(segments, rows) if r[0] != r[1] and r[2].strip()]
    assert [row["text"] for row in out["segments"]] == [r[2] for _, r in kept]
    assert [row["avg_logprob"] for row in out["segments"]] == [s["avg_logprob"] for s, _ in kept]


def test_times_that_go_wrong_are_refused(tok):
    t = whisper_decode(tok)
    backwards = [*t.segments[:1], Segment(5.0, 4.0, " late", 0, 0)]
    for fmt in ("verbose_json", "srt", "vtt"):
        with pytest.raises(TimingError, match=r"segment 1 \(' late'\) ends \(4.0\) before it starts \(5.0\)"):
            transcription(dataclasses.replace(t, segments=backwards), fmt)
    with pytest.raises(TimingError, match="word 0"):
        transcription(
            dataclasses.replace(t, words=[{"text": "a", "start": 2.0, "end": 1.0}]),
            "verbose_json",
            timestamp_granularities=["word"],
        )
    with pytest.raises(TimingError, match="duration"):
        transcription(dataclasses.replace(t, duration=math.nan), "verbose_json")


def test_bad_requests_are_refused(tok):
    t = whisper_decode(tok)
    with pytest.raises(TranscriptionFormatError, match="response_format"):
        transcription(t, "diarized_json")
    with pytest.raises(TranscriptionFormatError, match="'char'"):
        transcription(t, "verbose_json", timestamp_granularities=["char"])
    with pytest.raises(TranscriptionFormatError, match="json"):
        transcription(t, "verbose_json", logprobs=[(" a", -0.1)])
    with pytest.raises(TranscriptionFormatError, match=r"logprobs\[0\] logprob"):
        transcription(t, "json", logprobs=[(" a", 0.5)])
    with pytest.raises(TranscriptionFormatError, match=r"segment 0 .* no_speech_prob"):
        transcription(
            dataclasses.replace(t, segments=[{"start": 0, "end": 1, "text": "a", "no_speech_prob": 2}]), "verbose_json"
        )
    with pytest.raises(TranscriptionFormatError, match="no 'duration'"):
        transcription(
            type("Bare", (), {"text": "a", "segments": None, "words": None, "language": None})(), "verbose_json"
        )


def test_whisper_window_checks_what_it_is_given(tok):
    ids = two_windows(tok)[0][1]
    with pytest.raises(TranscriptionFormatError, match=f"logprobs has {len(ids) - 1} values for {len(ids)} tokens"):
        whisper_window(tok, ids, logprobs=logprobs_for(ids)[1:])
    with pytest.raises(TranscriptionFormatError, match="no_speech_prob"):
        whisper_window(tok, ids, no_speech_prob=1.5)
    assert {s.seek for s in whisper_window(tok, ids, offset=17.36)} == {1736}
    assert all(s.avg_logprob is None and s.temperature is None for s in whisper_window(tok, ids))


@given(data=st.data(), offset=st.sampled_from([0.0, 30.0, 17.36]))
def test_a_windows_segments_are_its_own_cut(tok, data, offset):
    """whisper_window's segments are tok.segments' (openai-whisper's cut, tested against it in
    test_whisper_segments.py), with each one's ids and the window's values."""
    sampled = data.draw(whisper_windows(tok))
    ids = tok.sot_sequence(language="en", task="transcribe") + sampled + [tok.eot]
    got = whisper_window(tok, ids, offset=offset, logprobs=logprobs_for(ids))
    plain = tok.segments(ids, offset=offset, scores=logprobs_for(ids))
    assert [Segment(s.start, s.end, s.text, s.first_token, s.last_token, s.avg_logprob) for s in got] == plain
    assert [s.tokens for s in got] == [tuple(ids[s.first_token : s.last_token + 1]) for s in plain]
    assert {s.compression_ratio for s in got} == {compression_ratio(tok.decode(sampled).strip())}


# -- the events ----------------------------------------------------------------------------------


def _chunked(tok, data, logprobs: bool):
    """A request over several chunks, each generated by its own stream: the events of one
    writer, the texts each chunk's stream printed, and the ids fed."""
    chunks = [
        data.draw(whisper_windows(tok, texts=[" Hello world.", " 今天天气很好，", " 😀 ok", ' "q" \\ ok\n']))
        for _ in range(data.draw(st.integers(1, 4)))
    ]
    events = TranscriptionEvents(logprobs=logprobs, done_sentinel=data.draw(st.booleans()))
    lines, fed, texts = [], 0, []
    for ids in chunks:
        stream = tok.new_stream()
        parts = data.draw(splits(ids))
        for k, part in enumerate(parts):
            lps = logprobs_for(part) if logprobs else None
            lines.append(events.feed(stream, part, lps, final=k == len(parts) - 1))
        if not parts:
            lines.append(events.feed(stream, [], [] if logprobs else None, final=True))
        texts.append(stream.text)
        fed += len(ids)
    lines.append(events.done(input_tokens=7))
    return events, "".join(lines), texts, fed


@given(data=st.data(), logprobs=st.booleans())
def test_one_done_across_every_chunk_vllm_pr_49119(tok, data, logprobs):
    """vLLM PR #49119: a done event per internal audio chunk. One writer per request, fed by
    each chunk's own stream in turn: exactly one done, last; the deltas join to its text,
    which is every chunk's text in order; its logprobs are every token's, and the deltas'
    carry the same entries in the same order (a token that printed nothing rides with the
    next delta); usage counts every id fed. Read by the SDK's own SSE decoder from the bytes
    cut anywhere."""
    events, lines, texts, fed = _chunked(tok, data, logprobs)
    assert lines.endswith(SSE_DONE) == events._sentinel
    cuts = data.draw(st.lists(st.integers(0, len(lines.encode()))))
    read = sse_events(lines, cuts)
    kinds = [e["type"] for e in read]
    assert kinds.count("transcript.text.done") == 1 and kinds[-1] == "transcript.text.done"
    deltas = [strictly(TranscriptionTextDeltaEvent, e) for e in read[:-1]]
    done = strictly(TranscriptionTextDoneEvent, read[-1])
    assert "".join(d.delta for d in deltas) == done.text == "".join(texts) == events.text
    assert all(d.delta for d in deltas)  # an empty delta is not sent
    assert done.usage.output_tokens == fed and done.usage.total_tokens == fed + 7
    if logprobs:
        assert len(done.logprobs) == fed
        riding = [entry.model_dump() for d in deltas for entry in d.logprobs]
        assert riding == [entry.model_dump() for entry in done.logprobs[: len(riding)]]
        assert all(e.token == "" for e in done.logprobs[len(riding) :])
        assert all(bytes(e.bytes) == e.token.encode() for e in done.logprobs)
    else:
        assert all(d.logprobs is None for d in deltas) and done.logprobs is None
    with pytest.raises(StreamStateError, match="already written"):
        events.done()


def test_the_stream_is_the_sdks_transcription_events_vllm_49116(tok):
    """vLLM #49116: transcription streaming in the chat-completions shape
    (``{"object": "transcription.chunk", "choices": [{"delta": ...}]}``), which the SDKs cannot
    read. Ours is read by the SDK's client, strictly validated, as TranscriptionTextDeltaEvent
    events and one TranscriptionTextDoneEvent."""
    for logprobs in (False, True):
        events = TranscriptionEvents(logprobs=logprobs, done_sentinel=True)
        lines = ""
        for _, ids in two_windows(tok):
            stream = tok.new_stream()
            for k in range(0, len(ids), 3):
                part = ids[k : k + 3]
                lines += events.feed(stream, part, logprobs_for(part) if logprobs else None)
            lines += events.feed(stream, [], final=True)  # a flush needs no logprobs
        lines += events.done()
        assert "choices" not in lines and "transcription.chunk" not in lines
        got = list(sdk_create(lines, "text/event-stream", stream=True))
        assert [type(e) for e in got] == [TranscriptionTextDeltaEvent] * (len(got) - 1) + [TranscriptionTextDoneEvent]
        assert (
            "".join(e.delta for e in got[:-1])
            == got[-1].text
            == "".join(tok.decode(ids) for _, ids in two_windows(tok))
        )
        assert (got[-1].logprobs is not None) == logprobs


@given(deltas=st.lists(transcript_texts, max_size=6), cuts=st.lists(st.integers(0, 400)))
@example(deltas=["a\nb", "\r\n", "\u2028", '"\\', "data: x\n\n"], cuts=[3, 4, 5])
def test_any_text_survives_the_sse_framing(deltas, cuts):
    """Line breaks, quotes, backslashes, U+2028, a text that looks like an SSE line: every
    delta reaches the SDK's decoder whole, however the bytes are cut."""
    events = TranscriptionEvents()
    lines = "".join(events.delta(d) for d in deltas) + events.done()
    read = sse_events(lines, cuts)
    assert [e["delta"] for e in read[:-1]] == [d for d in deltas if d]
    assert read[-1] == {"type": "transcript.text.done", "text": "".join(deltas)}
    for e in read[:-1]:
        strictly(TranscriptionTextDeltaEvent, e)
    assert all(line.startswith("data: ") for line in lines.split("\n\n")[:-1])


def test_a_final_text_that_goes_on_is_sent_before_done():
    """done(text): a server that streamed the settled part of a stitched transcript hands the
    final text; what was not sent yet goes out as a last delta, then the done event."""
    events = TranscriptionEvents()
    lines = events.delta(" Hello") + events.done(" Hello world.", input_tokens=10, output_tokens=4)
    read = sse_events(lines)
    assert [e.get("delta") for e in read] == [" Hello", " world.", None]
    done = strictly(TranscriptionTextDoneEvent, read[-1])
    assert done.text == " Hello world."
    assert done.usage.model_dump(exclude_none=True) == {
        "type": "tokens",
        "input_tokens": 10,
        "output_tokens": 4,
        "total_tokens": 14,
    }


def _state(events: TranscriptionEvents) -> tuple:
    return events.text, events.closed, list(events._entries), list(events._pending), events._tokens


def test_refused_calls_change_nothing(tok):
    ids = two_windows(tok)[0][1]
    events = TranscriptionEvents(logprobs=True)
    stream = tok.new_stream()
    events.feed(stream, ids[:5], logprobs_for(ids[:5]))
    before, stream_before = _state(events), stream.fork()
    refusals = [
        (
            TranscriptionFormatError,
            "logprobs has 2 values for 3 tokens",
            lambda: events.feed(stream, ids[5:8], [-0.1, -0.2]),
        ),
        (TranscriptionFormatError, r"logprobs\[1\]", lambda: events.feed(stream, ids[5:7], [-0.1, math.nan])),
        (TranscriptionFormatError, "give one per id", lambda: events.feed(stream, ids[5:7])),
        (InvalidIdError, "10000000", lambda: events.feed(stream, [ids[5], 10_000_000], [-0.1, -0.1])),
        (TranscriptionFormatError, "entries", lambda: events.delta(" x")),
        (TranscriptionFormatError, "takes back|cannot be taken back", lambda: events.done(" something else")),
        (TranscriptionFormatError, "output_tokens without input_tokens", lambda: events.done(output_tokens=3)),
    ]
    for error, message, call in refusals:
        with pytest.raises(error, match=message):
            call()
        assert _state(events) == before and stream == stream_before
    plain = TranscriptionEvents()
    with pytest.raises(TranscriptionFormatError, match="without logprobs=True"):
        plain.delta(" x", [(" x", -0.1)])
    with pytest.raises(TranscriptionFormatError, match="must be a str"):
        plain.delta(b" x")  # type: ignore[arg-type]
    plain.delta(" x")
    with pytest.raises(TranscriptionFormatError, match="give output_tokens"):
        plain.done(input_tokens=3)
    assert not plain.closed
    plain.done()
    for call in (lambda: plain.delta(" late"), lambda: plain.feed(tok.new_stream(), ids), plain.done):
        with pytest.raises(StreamStateError, match="already written"):
            call()
        assert plain.text == " x" and plain.closed


def test_a_closed_stream_is_refused_with_nothing_fed(tok):
    ids = two_windows(tok)[0][1]
    stream = tok.new_stream()
    stream.feed(ids, final=True)
    for logprobs in (False, True):
        events = TranscriptionEvents(logprobs=logprobs)
        with pytest.raises(StreamStateError):
            events.feed(stream, ids[:2], logprobs_for(ids[:2]) if logprobs else None)
        assert _state(events) == ("", False, [], [], 0)


def test_the_sdk_reads_a_left_out_field_as_none():
    """How an absent value is serialised: the key is left out. The SDK's client (which
    builds its models without validation unless told to) gives None for it, and to_dict()
    (exclude_unset) shows the object as sent."""
    data = {"id": 0, "start": 0.0, "end": 1.0, "text": " a", "compression_ratio": 0.5}
    segment = construct_type(type_=TranscriptionSegment, value=data)
    assert segment.avg_logprob is None and segment.no_speech_prob is None
    assert segment.to_dict() == data


def test_the_examples_in_the_docstrings_run():
    import doctest

    from oasr_tok.outputs import openai_audio

    failed, attempted = doctest.testmod(openai_audio, optionflags=doctest.ELLIPSIS)
    assert attempted >= 8 and failed == 0


@given(
    text=transcript_texts.filter(bool),
    entries=st.lists(st.tuples(transcript_texts, st.floats(-50.0, 0.0)), max_size=4),
)
@example(text="x", entries=[("", -0.0), ("\u00e9\n", -1e-300)])
def test_logprob_entries_in_any_form_write_the_same_event(text, entries):
    """A (token, logprob) pair, a mapping, an entry with its bytes spelled out, a NumPy float:
    the same event, which the SDK reads back to the same values."""
    import numpy

    forms = [
        entries,
        [{"token": t, "logprob": lp} for t, lp in entries],
        [(t, numpy.float64(lp), list(t.encode("utf-8"))) for t, lp in entries],
    ]
    lines = {TranscriptionEvents(logprobs=True).delta(text, form) for form in forms}
    assert len(lines) == 1
    read = strictly(TranscriptionTextDeltaEvent, sse_events(lines.pop())[0])
    assert [(e.token, e.logprob, bytes(e.bytes)) for e in read.logprobs] == [(t, lp, t.encode()) for t, lp in entries]


def test_the_token_cache_empties_when_full(monkeypatch):
    """The rendered tokens are cached up to a bound: past it the cache starts again, and the
    events are the same."""
    from oasr_tok.outputs import openai_audio

    monkeypatch.setattr(openai_audio, "_TOKEN_JSON", {})
    monkeypatch.setattr(openai_audio, "_TOKEN_JSON_LIMIT", 3)
    entries = [(f" w{k}", -0.5) for k in range(10)]
    first = TranscriptionEvents(logprobs=True).delta("x", entries)
    assert len(openai_audio._TOKEN_JSON) <= 3
    assert TranscriptionEvents(logprobs=True).delta("x", entries) == first
    assert TranscriptionEvents(logprobs=True).delta("x", [{"token": t, "logprob": lp} for t, lp in entries]) == first
