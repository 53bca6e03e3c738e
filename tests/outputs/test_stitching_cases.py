"""StitchedTranscript on the joins servers get wrong (each test names its vLLM issue or pull
request), on speech models' envelopes, on bad input, and where transformers' own functions fail.

Expected values: transformers' functions on the same chunks where they are right, else the
contract itself (the text the issue says a user should get)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from oasr_tok import (
    ChunkError,
    InvalidIdError,
    NonIntegerIdError,
    StitchedTranscript,
    TimingError,
    UnknownEnvelopeError,
    collapse_ctc,
)
from oasr_tok.outputs.stitching import pipeline_overlap, whisper_overlap

from stitch_reference import (
    ENGLISH,
    SAMPLE_RATE,
    pair,
    transformers_seq2seq,
    transformers_seq2seq_unpadded,
    transformers_whisper,
)


def stitch(tok, chunks, **options):
    """chunks: (ids, start, length[, stride]) in seconds, or dicts of add's arguments."""
    t = StitchedTranscript(tok, **options)
    deltas = []
    for c in chunks:
        if isinstance(c, dict):
            deltas.append(t.add(**c))
        else:
            ids, start, length, *rest = c
            deltas.append(t.add(ids, start=start, length=length, stride=rest[0] if rest else (0, 0)))
    deltas.append(t.finish())
    assert "".join(deltas) == t.text
    return t


def whisper_ids(tok, language: str, body: list[int], timestamps: list[tuple[float, list[int], float]] | None = None):
    """Whisper's output: sot, language, transcribe, then the body (or timestamped segments), eot."""
    ids = [tok.sot, tok.language_ids[language], tok.transcribe]
    if timestamps is None:
        return [*ids, tok.no_timestamps, *body, tok.eot]
    for start, tokens, end in timestamps:
        ids += [tok.timestamp_id(start), *tokens, tok.timestamp_id(end)]
    return [*ids, tok.eot]


# -- vLLM PR #39116: a space between Latin chunks ----------------------------------------------------


@pytest.mark.parametrize("name", ["qwen3", "mistral-7b"])
def test_a_space_between_latin_chunks_vllm_39116(name):
    """vLLM PR #39116: chunk outputs "Hello, this" and "is vllm" were joined "Hello, thisis vllm".
    Each chunk is generated on its own, so its first word has no space before it."""
    tok, theirs = pair(name)
    chunks = [(tok.encode("Hello, this"), 0.0, 30.0), (tok.encode("is vllm"), 30.0, 30.0)]
    assert stitch(tok, chunks).text == "Hello, this is vllm"
    if name == "qwen3":  # the reference glues them: the bug, reproduced on transformers' own join
        assert transformers_seq2seq(theirs, [c[0] for c in chunks]) == "Hello, thisis vllm"


def test_the_tokens_own_space_is_kept_and_never_doubled_vllm_39116():
    tok, _ = pair("qwen3")
    cases = [
        (["Hello, this", " is vllm"], "Hello, this is vllm"),  # the right chunk wrote the space
        (["Hello, this ", "is vllm"], "Hello, this is vllm"),  # the left one did
        (["Hello, this ", " is vllm"], "Hello, this is vllm"),  # both: one of them
        (["Hello, this\n", "is vllm"], "Hello, this\nis vllm"),  # the tokens' own whitespace
        (["Hello,", "", "this"], "Hello, this"),  # an empty chunk between
    ]
    for texts, expected in cases:
        chunks = [(tok.encode(s), 10.0 * k, 10.0) for k, s in enumerate(texts)]
        assert stitch(tok, chunks).text == expected, texts


def test_whisper_chunks_keep_their_own_spaces_vllm_39116():
    tok, theirs = pair("whisper")
    chunks = [
        {"ids": whisper_ids(tok, "en", tok.encode(" Hello, this")), "start": 0.0, "length": 30.0},
        {"ids": whisper_ids(tok, "en", tok.encode(" is vllm")), "start": 30.0, "length": 30.0},
    ]
    expected, _, _ = transformers_whisper(
        theirs, [{**c, "stride_s": (30.0, 0.0, 0.0)} for c in chunks], return_timestamps=False
    )
    assert stitch(tok, chunks).text == expected == " Hello, this is vllm"


# -- vLLM PR #34628, NeMo-Gym PR #1358: no space between CJK chunks -----------------------------------


@pytest.mark.parametrize(
    "texts,expected",
    [
        (["今天天气很好，", "我们去公园散步吧。"], "今天天气很好，我们去公园散步吧。"),
        (["東京は晴れです。", "カタカナとひらがな"], "東京は晴れです。カタカナとひらがな"),
        (["你好", "世界"], "你好世界"),
        (["สวัสดีครับ", "ยินดีต้อนรับ"], "สวัสดีครับยินดีต้อนรับ"),
        (["hello 世界", "mixed 中英文"], "hello 世界 mixed 中英文"),  # Latin after CJK: a space
        (["中英文", "text"], "中英文 text"),
    ],
)
def test_no_space_between_cjk_chunks_vllm_34628_nemo_gym_1358(texts, expected):
    """vLLM PR #34628's example joins chunk transcripts with " ".join, which NeMo-Gym PR #1358
    also did: wrong for Chinese and Japanese, written without spaces."""
    for name in ("qwen3", "whisper"):
        tok, _ = pair(name)
        if name == "whisper":
            chunks = [{"ids": whisper_ids(tok, "zh", tok.encode(s)), "start": 10.0 * k, "length": 10.0}
                      for k, s in enumerate(texts)]  # fmt: skip
        else:
            chunks = [(tok.encode(s), 10.0 * k, 10.0) for k, s in enumerate(texts)]
        assert stitch(tok, chunks).text == expected, name


def test_cjk_chunks_with_qwen3_asr_headers_vllm_42478():
    """vLLM PR #42478's review asks for exactly this: `language Chinese<asr_text>你好` then
    `language Chinese<asr_text>世界` give `你好世界`, no prefix, no space."""
    tok, _ = pair("qwen3")
    chunks = [(tok.encode(f"language Chinese<asr_text>{s}"), 5.0 * k, 5.0) for k, s in enumerate(["你好", "世界"])]
    t = stitch(tok, chunks, envelope="qwen3_asr")
    assert (t.text, t.language) == ("你好世界", "Chinese")


# -- vLLM #29350: no duplicated boundary word -------------------------------------------------------


def test_no_duplicated_boundary_word_vllm_29350():
    """vLLM #29350: Whisper heard "me" at the end of one chunk and again at the start of the next:
    "have kept me me honest". Chunks that share audio (strides) share its words, and the overlap
    is removed on the ids, as transformers removes it."""
    tok, theirs = pair("whisper")
    first = tok.encode(" All these conversations are what have kept me")
    second = tok.encode(" kept me honest, kept me inspired, and kept me going.")
    chunks = [
        {"ids": whisper_ids(tok, "en", first), "start": 0.0, "length": 30.0, "stride": (0.0, 2.0)},
        {"ids": whisper_ids(tok, "en", second), "start": 26.0, "length": 30.0, "stride": (2.0, 0.0)},
    ]
    expected, _, _ = transformers_whisper(
        theirs, [{**c, "stride_s": (30.0, *c["stride"])} for c in chunks], return_timestamps=False
    )
    t = stitch(tok, chunks)
    assert t.text == expected
    assert "me me" not in t.text and "kept me honest" in t.text


def test_no_duplicated_boundary_words_in_qwen3_asr_chunks_vllm_29350():
    tok, _ = pair("qwen3")
    first = "language English<asr_text>All these conversations are what have kept me honest"
    second = "language English<asr_text>kept me honest, kept me inspired, and kept me going."
    chunks = [(tok.encode(first), 0.0, 30.0, (0.0, 2.0)), (tok.encode(second), 26.0, 30.0, (2.0, 0.0))]
    t = stitch(tok, chunks, envelope="qwen3_asr")
    assert t.text == "All these conversations are what have kept me honest, kept me inspired, and kept me going."


# -- vLLM PR #45063: times from the chunk's real start ----------------------------------------------


def test_times_from_the_chunks_real_start_vllm_45063():
    """vLLM PR #45063: a 65 s clip split at quiet points starts its chunks at 0, 29 and 58 s, not
    at idx * 30. Every segment is its chunk's real start plus Whisper's time inside the chunk."""
    tok, _ = pair("whisper")
    starts = [0.0, 29.0, 58.0]
    lengths = [29.0, 29.0, 7.0]
    inner = [(0.0, " One.", 2.0), (1.5, " Two.", 4.0), (0.5, " Three.", 6.0)]
    t = StitchedTranscript(tok)
    for start, length, (a, text, b) in zip(starts, lengths, inner):
        t.add(whisper_ids(tok, "en", [], [(a, tok.encode(text), b)]), start=start, length=length)
    t.finish()
    assert [(s.start, s.end, s.text) for s in t.segments] == [
        (0.0, 2.0, " One."),
        (30.5, 33.0, " Two."),
        (58.5, 64.0, " Three."),
    ]
    assert t.duration == 65.0


def test_times_from_the_real_start_across_a_gap_and_in_samples_vllm_45063():
    """Chunks cut by voice activity leave gaps: the second chunk starts at 25 s, not where the
    first ended. Samples or seconds, the same times."""
    tok, _ = pair("whisper")
    for rate, unit in ((None, 1.0), (SAMPLE_RATE, SAMPLE_RATE)):
        t = StitchedTranscript(tok, sample_rate=rate)
        t.add(whisper_ids(tok, "en", [], [(0.0, tok.encode(" First."), 1.0)]), start=0, length=int(20 * unit))
        t.add(
            whisper_ids(tok, "en", [], [(0.5, tok.encode(" Second."), 1.5)]), start=int(25 * unit), length=int(5 * unit)
        )
        t.finish()
        assert [(s.start, s.end) for s in t.segments] == [(0.0, 1.0), (25.5, 26.5)]


def test_word_times_from_the_real_start_ctc_and_seq2seq_vllm_45063():
    tok, _ = pair("wav2vec2")
    letters = {tok.id_to_piece(i): i for i in range(tok.vocab_size)}
    blank, bar = tok.blank_id, tok.word_delimiter_id
    frames = [letters["H"], letters["I"], blank, bar, blank]  # "HI", 0.02 s a frame
    for count in (None, 5):  # the frame count: by default length / frame_length
        t = StitchedTranscript(tok, method="ctc", frame_length=0.02)
        for start in (0.0, 7.0):
            ids, s, e = collapse_ctc(frames, blank)
            t.add(ids, start=start, length=0.1, frames=(s, e), frame_count=count)
        t.finish()
        words = [(w.text, round(w.start, 9), round(w.end, 9)) for w in t.words]
        assert words == [("HI", 0.0, 0.04), ("HI", 7.0, 7.04)]
    qwen, _ = pair("qwen3")
    t = StitchedTranscript(qwen)
    t.add(qwen.encode("Hello there"), start=12.5, length=2.0, times=[0.1, 0.6])
    t.finish()
    assert [(w.text, w.start, w.end) for w in t.words] == [("Hello", 12.6, 13.1), ("there", 13.1, 13.1)]


# -- vLLM PR #55786, #35767: one language, never the header's text ----------------------------------


def test_qwen3_asr_headers_per_chunk_vllm_55786_35767():
    """vLLM PR #55786, #35767: Qwen3-ASR writes `language X<asr_text>` before each chunk's text,
    and it leaked into the transcript once per chunk. Each chunk's header is read (its language
    kept), none of it is text."""
    tok, _ = pair("qwen3")
    chunks = [
        (tok.encode("language English<asr_text>The first words I spoke"), 0.0, 30.0),
        (tok.encode("language English<asr_text>were a little piece of practical poetry."), 30.0, 30.0),
        (tok.encode("language None<asr_text>"), 60.0, 30.0),  # a silent chunk
        (tok.encode("language German<asr_text>Mary had a little lamb."), 90.0, 30.0),
    ]
    t = stitch(tok, chunks, envelope="qwen3_asr")
    assert t.text == "The first words I spoke were a little piece of practical poetry. Mary had a little lamb."
    assert "asr_text" not in t.text and "language" not in t.text
    assert t.languages == ["English", "English", None, "German"]
    assert t.language == "English"


def test_the_words_of_a_header_straddling_token_are_kept():
    """With a tokenizer where `<asr_text>` is not one token, `>Hello` is a single id: the header
    is taken apart whole by the envelope, the words keep `Hello`."""
    tok, _ = pair("qwen3")
    ids = tok.encode("language English<asr_text>Hello world")
    assert tok.token_pieces(ids)[-2] == ">Hello"
    t = stitch(tok, [(ids, 0.0, 5.0)], envelope="qwen3_asr")
    assert (t.text, t.language) == ("Hello world", "English")


def test_sensevoice_tags_per_chunk():
    tok, _ = pair("qwen3")
    chunks = [
        (tok.encode("<|en|><|NEUTRAL|><|Speech|><|woitn|>hello there"), 0.0, 10.0),
        (tok.encode("<|en|><|HAPPY|><|Speech|><|woitn|>general kenobi"), 10.0, 10.0),
    ]
    t = stitch(tok, chunks, envelope="sensevoice")
    assert (t.text, t.language) == ("hello there general kenobi", "en")


def test_whisper_language_tokens_per_chunk():
    tok, _ = pair("whisper")
    chunks = [
        {"ids": whisper_ids(tok, language, tok.encode(text)), "start": 10.0 * k, "length": 10.0}
        for k, (language, text) in enumerate([("fr", " Bonjour."), ("en", " Hello."), ("fr", " Salut.")])
    ]
    t = stitch(tok, chunks)
    assert t.languages == ["fr", "en", "fr"] and t.language == "fr"
    assert "<|" not in t.text


@pytest.mark.parametrize("plain", [False, True])
def test_qwen3_asr_chunks_are_the_pipeline_on_their_words(plain):
    """Chunks that overlap, each with its header: the words are transformers' pipeline on the
    chunks' words (the header taken off), stripped as Qwen3-ASR's text is."""
    tok, theirs = pair("qwen3")
    words = tok.encode(" " + ENGLISH)
    n = len(words)
    cuts = [(0, n // 4 + 8), (n // 4, n // 2 + 8), (n // 2, 3 * n // 4 + 8), (3 * n // 4, n)]
    header = [] if plain else tok.encode("language English<asr_text>")
    chunks = [(header + words[a:b], 10.0 * k, 12.0, (2.0 if k else 0.0, 2.0)) for k, (a, b) in enumerate(cuts)]
    t = stitch(tok, chunks, envelope="qwen3_asr")
    assert t.text == transformers_seq2seq(theirs, [words[a:b] for a, b in cuts]).strip()
    assert t.language == (None if plain else "English")


# -- what travels with the ids ------------------------------------------------------------------------


def test_logprobs_stay_with_their_ids():
    """Each id kept carries the log-probability its chunk gave it."""
    tok, _ = pair("qwen3")
    words = tok.encode(" " + ENGLISH)
    n = len(words)
    cuts = [(0, n // 3 + 6), (n // 3 - 6, 2 * n // 3 + 6), (2 * n // 3 - 6, n)]
    t = StitchedTranscript(tok)
    given = {}
    for k, (a, b) in enumerate(cuts):
        scores = [-(k * 1000 + j + 1) / 1e4 for j in range(b - a)]
        for j, score in enumerate(scores):
            given[score] = words[a + j]
        t.add(words[a:b], start=10.0 * k, length=12.0, stride=(2.0 if k else 0.0, 2.0), logprobs=scores)
    t.finish()
    assert len(t.logprobs) == len(t.ids)
    assert all(given[score] == token for score, token in zip(t.logprobs, t.ids))


def test_segments_of_timed_words_index_the_ids():
    tok, _ = pair("qwen3")
    ids = tok.encode("Hello there. General Kenobi.")
    t = StitchedTranscript(tok)
    t.add(ids, start=100.0, length=5.0, times=[0.2 * k for k in range(len(ids))])
    t.finish()
    segments = t.segments
    assert [s.text for s in segments] == ["Hello there.", "General Kenobi."]
    assert segments[0].start == 100.0 and segments[1].first_token == tok.encode("Hello there.").__len__()
    assert segments[-1].last_token == len(t.ids) - 1


def test_reading_before_finish_changes_nothing():
    tok, _ = pair("whisper")
    t = StitchedTranscript(tok)
    body = tok.encode(" one two three four five six")
    t.add(whisper_ids(tok, "en", body[:5]), start=0.0, length=10.0, stride=(0.0, 2.0))
    peek = (t.text, t.ids, t.segments, t.words)
    assert t.settled == "" and peek[0] == tok.decode(body[:5])  # Whisper's join waits for the next chunk
    t.add(whisper_ids(tok, "en", body[3:]), start=6.0, length=10.0, stride=(2.0, 0.0))
    t.finish()
    assert t.text == t.settled == " one two three four five six"


# -- bad input: a typed error naming the chunk, the transcript unchanged ---------------------------


def _state(t: StitchedTranscript):
    return (t.settled, t.text, t.ids, t.chunks, t.languages, t.token_times, t.logprobs, t.duration)


def _refused(t: StitchedTranscript, error, match: str, **chunk):
    before = _state(t)
    with pytest.raises(error, match=match):
        t.add(**chunk)
    assert _state(t) == before


def test_bad_chunks_are_refused_naming_the_chunk_and_change_nothing():
    tok, _ = pair("qwen3")
    ids = tok.encode("Hello there general kenobi")
    n = len(ids)
    first = {"ids": ids, "start": 10.0, "length": 5.0, "stride": (0.0, 1.0), "times": [0.5] * n, "logprobs": [-0.1] * n}
    good = {"ids": ids, "start": 13.5, "length": 5.0, "stride": (0.5, 0.0), "times": [0.0] * n, "logprobs": [-0.2] * n}
    t = StitchedTranscript(tok)
    t.add(**first)
    _refused(t, ChunkError, "chunk 1 starts at 9.0, before chunk 0", **{**good, "start": 9.0})
    _refused(t, ChunkError, r"chunk 1 overlaps chunk 0 by 1\.5, more than their strides", **{**good, "stride": (0, 0)})
    _refused(t, InvalidIdError, r"chunk 1: .*151669", **{**good, "ids": [*ids[:-1], 151669]})
    _refused(
        t,
        TimingError,
        r"chunk 1: times \(starts\)\[1\] = 0\.5 goes back",
        **{**good, "times": [1.0, 0.5] + [2.0] * (n - 2)},
    )
    _refused(t, TimingError, f"chunk 1: logprobs has 3 values for {n} ids", **{**good, "logprobs": [-1.0] * 3})
    _refused(t, TimingError, r"chunk 1: logprobs\[0\] = 0\.5", **{**good, "logprobs": [0.5] * n})
    _refused(
        t,
        TimingError,
        r"chunk 1: logprobs\[1\] = nan is not finite",
        **{**good, "logprobs": [-1, math.nan] + [-1] * (n - 2)},
    )
    _refused(t, TimingError, "chunk 1: times .*has 2 values", **{**good, "times": [0, 1]})
    _refused(t, TimingError, "chunk 1: times: id 0 ends", **{**good, "times": ([1.0] * n, [0.5] * n)})
    _refused(t, TimingError, "chunk 1: no times", **{**good, "times": None})
    _refused(t, TimingError, "chunk 1: no logprobs", **{**good, "logprobs": None})
    _refused(t, ChunkError, "chunk 1: its strides", **{**good, "stride": (3.0, 3.0)})
    _refused(t, ChunkError, "chunk 1: stride must be a pair", **{**good, "stride": 0.5})
    _refused(t, ChunkError, "chunk 1: start = nan", **{**good, "start": math.nan})
    _refused(t, ChunkError, "chunk 1: length must be positive", **{**good, "length": 0.0})
    _refused(t, NonIntegerIdError, "chunk 1: a Stream keeps no ids", **{**good, "ids": tok.new_stream()})
    _refused(t, NonIntegerIdError, "chunk 1: ", **{**good, "ids": ["hello"]})
    _refused(t, TimingError, "chunk 1: token_timestamps is not read", **{**good, "token_timestamps": [0.0] * n})
    # after every refusal, the good chunk stitches as if none had been tried
    fresh = StitchedTranscript(tok)
    fresh.add(**first)
    for s in (t, fresh):
        s.add(**good)
        s.finish()
    assert _state(t) == _state(fresh)
    with pytest.raises(ChunkError, match="chunk 2: the transcript was finished"):
        t.add(ids, start=30.0, length=1.0)


def test_bad_whisper_and_ctc_chunks():
    tok, _ = pair("whisper")
    t = StitchedTranscript(tok, sample_rate=SAMPLE_RATE)
    body = whisper_ids(tok, "en", tok.encode(" Hello"))
    t.add(body, start=0, length=SAMPLE_RATE, token_timestamps=[0.0] * len(body))
    _refused(t, ChunkError, "chunk 1: start = 1.5 is not a sample count", ids=body, start=1.5, length=SAMPLE_RATE)
    _refused(t, InvalidIdError, "chunk 1: .*51865", ids=[*body, 51865], start=SAMPLE_RATE, length=SAMPLE_RATE,
             token_timestamps=[0.0] * (len(body) + 1))  # fmt: skip
    _refused(t, TimingError, r"chunk 1: token_timestamps\[1\] = 0\.5 goes back", ids=body, start=SAMPLE_RATE,
             length=SAMPLE_RATE, token_timestamps=[1.0, 0.5] + [2.0] * (len(body) - 2))  # fmt: skip
    _refused(t, TimingError, "chunk 1: token_timestamps has", ids=body, start=SAMPLE_RATE, length=SAMPLE_RATE,
             token_timestamps=[0.0])  # fmt: skip
    w2v, _ = pair("wav2vec2")
    c = StitchedTranscript(w2v, method="ctc", frame_length=0.02)
    _refused(c, TimingError, "chunk 0: frames of id 1 .* go back", ids=[5, 6], start=0.0, length=1.0,
             frames=([0, 0], [2, 3]))  # fmt: skip
    _refused(c, TimingError, "chunk 0: method 'ctc' needs frames", ids=[5, 6], start=0.0, length=1.0)
    _refused(c, TimingError, "chunk 0: frames ends has 1 values", ids=[5, 6], start=0.0, length=1.0,
             frames=([0, 1], [1]))  # fmt: skip


def test_bad_options():
    tok, _ = pair("qwen3")
    with pytest.raises(ChunkError, match="method must be one of"):
        StitchedTranscript(tok, method="rnnt")
    with pytest.raises(ChunkError, match="needs a Whisper tokenizer"):
        StitchedTranscript(tok, method="whisper")
    with pytest.raises(ChunkError, match="needs frame_length"):
        StitchedTranscript(tok, method="ctc")
    with pytest.raises(ChunkError, match="sample_rate must be a positive int"):
        StitchedTranscript(tok, sample_rate=16000.0)
    with pytest.raises(UnknownEnvelopeError, match="qwen3_asr"):
        StitchedTranscript(tok, envelope="qwen4")


# -- the matching rules against transformers' own, and where transformers fails ---------------------


def test_the_matching_rules_are_transformers_on_random_pairs():
    from transformers.models.whisper.tokenization_whisper import _find_longest_common_sequence as whisper_lcs
    from transformers.pipelines.automatic_speech_recognition import _find_longest_common_sequence as pipeline_lcs

    rng = np.random.default_rng(54)
    shim = type("Tok", (), {"all_special_ids": []})()
    for _ in range(300):
        left = [int(x) for x in rng.integers(0, 6, rng.integers(0, 25))]
        right = [int(x) for x in rng.integers(0, 6, rng.integers(0, 25))]
        mid_left, mid_right, _ = whisper_overlap(left, right)
        assert left[:mid_left] + right[mid_right:] == whisper_lcs([left, right])
        times_l = [(float(k), float(k + 1)) for k in range(len(left))]
        times_r = [(float(k + rng.integers(0, 10)), 0.0) for k in range(len(right))]
        mid_left, mid_right, _ = whisper_overlap(left, right, times_l, times_r)
        assert (left[:mid_left] + right[mid_right:], times_l[:mid_left] + times_r[mid_right:]) == whisper_lcs(
            [left, right], [times_l, times_r]
        )
        if len(left) >= len(right):  # where transformers' numpy comparison works
            index = pipeline_overlap(left, right)
            assert left + right[index:] == [int(x) for x in pipeline_lcs([np.array([left]), np.array([right])], shim)]


@pytest.mark.xfail(
    strict=True,
    raises=ValueError,
    reason="deviation (docs/stitching.md § Deviations): transformers' seq2seq join compares sequence[-i:] with "
    "new_sequence[:i] in numpy, which refuses unequal lengths (numpy 2): a first chunk shorter than the second "
    "raises ValueError; we compare the ids right-aligned",
)
def test_a_short_first_chunk_raises_in_transformers():
    tok, theirs = pair("qwen3")
    chunks = [tok.encode(" All these conversations"), tok.encode(" conversations are what have kept me honest")]
    assert stitch(tok, [(c, 2.0 * k, 3.0, (0.5 * k, 0.5)) for k, c in enumerate(chunks)]).text == (
        transformers_seq2seq_unpadded(theirs, chunks)
    )


@pytest.mark.xfail(
    strict=True,
    reason="deviation (docs/stitching.md § Deviations): transformers broadcasts a one-id transcript against "
    "every id of the new chunk (numpy), counting it once per equal id; we compare it with one id",
)
def test_a_one_id_transcript_is_broadcast_in_transformers():
    shim = type("Tok", (), {"all_special_ids": []})()
    chunks = [[7], [7, 7, 9]]
    ours = [7, *chunks[1][pipeline_overlap(chunks[0], chunks[1]) :]]
    from transformers.pipelines.automatic_speech_recognition import _find_longest_common_sequence as pipeline_lcs

    assert ours == [7, 7, 7, 9]
    assert ours == [int(x) for x in pipeline_lcs([np.array([c]) for c in chunks], shim)]


def test_a_copy_is_independent():
    tok, _ = pair("qwen3")
    t = StitchedTranscript(tok)
    t.add(tok.encode("Hello there"), start=0.0, length=1.0)
    other = copy.deepcopy(t)
    assert other.add(tok.encode("general kenobi"), start=1.0, length=1.0) == " general kenobi"
    assert t.finish() == "" and t.text == "Hello there"


# -- Whisper's language changes and prompts, against _decode_asr -------------------------------------


def test_a_language_change_without_timestamps_closes_the_text_as_transformers_does():
    """_decode_asr without timestamps: a chunk in another language ends the text so far (its join
    with the next chunk is not searched); with timestamps it does not."""
    tok, theirs = pair("whisper")
    body = tok.encode(" one two three four five six seven eight nine ten eleven twelve")
    parts = [("en", body[:8]), ("fr", body[5:14]), ("fr", body[11:])]
    for timestamps in (False, True):
        chunks = []
        for k, (language, ids) in enumerate(parts):
            if timestamps:
                ids = [tok.timestamp_id(0.0), *ids, tok.timestamp_id(2.0)]
            chunks.append(
                {
                    "ids": whisper_ids(tok, language, ids),
                    "start": 2.0 * k,
                    "length": 3.0,
                    "stride": (0.5 if k else 0.0, 0.5 if k < 2 else 0.0),
                }
            )
        expected, _, _ = transformers_whisper(
            theirs, [{**c, "stride_s": (c["length"], *c["stride"])} for c in chunks], return_timestamps=timestamps
        )
        t = stitch(tok, chunks, timestamps=timestamps)
        assert t.text == expected, timestamps
        assert t.languages == ["en", "fr", "fr"] and t.language == "fr"


def test_a_whisper_prompt_is_stripped_as_transformers_strips_it():
    """A chunk generated after a prompt (<|startofprev|> previous text) starts with it: the ids up
    to <|startoftranscript|> are not the chunk's words (transformers' _strip_prompt)."""
    tok, theirs = pair("whisper")
    first = tok.encode(" The first words I spoke")
    second = tok.encode(" I spoke in the original phonograph")
    prompt = [tok.sot_prev, *tok.encode(" The first words")]
    chunks = [
        {"ids": whisper_ids(tok, "en", first), "start": 0.0, "length": 5.0, "stride": (0.0, 1.0)},
        {"ids": prompt + whisper_ids(tok, "en", second), "start": 3.0, "length": 5.0, "stride": (1.0, 0.0)},
        {"ids": [tok.sot_prev, *tok.encode(" no transcript follows")], "start": 8.0, "length": 1.0},
    ]
    expected, _, _ = transformers_whisper(
        theirs, [{**c, "stride_s": (c["length"], *c.get("stride", (0.0, 0.0)))} for c in chunks], False
    )
    t = stitch(tok, chunks)
    assert t.text == expected == " The first words I spoke in the original phonograph"
