"""verbose_json's segments against faster-whisper's own (faster-whisper 1.2.1's
WhisperModel.generate_segments, loaded by tests/peers/faster_whisper_source.py with a scripted
decoder in place of ctranslate2): the same windows decoded, the same values.

faster-whisper's loop chooses where each window starts (its seek arithmetic) and asks the
scripted decoder for that window's ids; the script draws them (text, timestamps in any layout,
parts of characters) with a log-probability per id and the end-of-text's, and a no-speech
probability. Then each window goes through oasr_tok's `whisper_window` at the same offset,
and `transcription(..., "verbose_json")` of all of them must give faster-whisper's segments:
seek, start, end, text, tokens, temperature, avg_logprob, compression_ratio and no_speech_prob
equal (floats equal, not close), the same segments left out (instantaneous or without text).
One deliberate difference: faster-whisper numbers its segments from 1, the API (and
openai-whisper) from 0; ours are the API's.

avg_logprob: faster-whisper recovers the window's log-probability sum from ctranslate2's
score, ``score * len(ids) ** length_penalty``. With ``length_penalty=0`` that round trip is
exact and the sums agree to the bit (the default ``length_penalty=1`` divides and multiplies
back by the length, which may move the last bit: compared to 1e-12 relative there).

Needs `python fixtures/fetch_faster_whisper.py` (skipped naming it otherwise, and failing
under OASR_TOK_REQUIRE_PEERS=1, as CI's peers tier runs).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.outputs.openai_audio import compression_ratio, transcription, whisper_window

from faster_whisper_source import faster_whisper_modules
from paths import shared
from strategies import whisper_windows

MODEL_DIR = "whisper/faster-whisper-base"


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(TokenizerSpec("whisper", {"tokenizer": shared(f"{MODEL_DIR}/tokenizer.json")}))


@pytest.fixture(scope="module")
def faster():
    return faster_whisper_modules()


@pytest.fixture(scope="module")
def model(faster):
    """faster-whisper's WhisperModel, made by its own __init__ on the real tokenizer.json; each
    example gives its decoder a new script."""
    return faster["transcribe"].WhisperModel(shared(MODEL_DIR))


def _options(faster, length_penalty: float, temperature: float):
    transcribe = faster["transcribe"]
    return transcribe.TranscriptionOptions(
        beam_size=5, best_of=5, patience=1, length_penalty=length_penalty, repetition_penalty=1,
        no_repeat_ngram_size=0, log_prob_threshold=None, no_speech_threshold=None,
        compression_ratio_threshold=None, condition_on_previous_text=True, prompt_reset_on_temperature=0.5,
        temperatures=[temperature], initial_prompt=None, prefix=None, suppress_blank=True, suppress_tokens=[-1],
        without_timestamps=False, max_initial_timestamp=1.0, word_timestamps=False,
        prepend_punctuations="\"'“¿([{-", append_punctuations="\"'.。,，!！?？:：”)]}、", multilingual=False,
        max_new_tokens=None, clip_timestamps="0", hallucination_silence_threshold=None, hotwords=None,
    )  # fmt: skip


def _decode(faster, model, tok, data, content_frames: int, length_penalty: float, temperature: float):
    """faster-whisper's segments over `content_frames` of audio, and the windows it decoded."""
    calls = [0]

    def script(seek: int, size: int, prompt: list[int]):
        calls[0] += 1
        ids = data.draw(whisper_windows(tok))
        if not ids or ids[0] < tok.timestamp_begin:
            # a decoder with timestamps starts with one, and its timestamps never go back
            first = next((t for t in ids if t >= tok.timestamp_begin), tok.timestamp_begin + 50)
            ids.insert(0, data.draw(st.integers(tok.timestamp_begin, first)))
        if calls[0] > 5:  # a window that moves on, so the loop ends whatever was drawn before
            ids = [tok.timestamp_begin, *tok.encode(" and so"), tok.timestamp_begin + 50]
        logprobs = data.draw(st.lists(st.floats(-12.0, 0.0), min_size=len(ids) + 1, max_size=len(ids) + 1))
        return ids, logprobs, data.draw(st.floats(0.0, 1.0))

    model.model.script = script
    model.model.content_frames = content_frames
    model.model.windows = []
    features = np.arange(content_frames + 1, dtype=np.float64)[None, :]  # frame k holds k
    tokenizer = faster["tokenizer"].Tokenizer(model.hf_tokenizer, True, task="transcribe", language="en")
    options = _options(faster, length_penalty, temperature)
    segments = list(model.generate_segments(features, tokenizer, options, log_progress=False))
    return segments, model.model.windows, model.feature_extractor.time_per_frame


def _ours(tok, windows, time_per_frame: float):
    segments = []
    for w in windows:
        offset = w.seek * time_per_frame  # as generate_segments computes time_offset
        ids = [*w.prompt, *w.ids, tok.eot]  # the prompt (previous text, sot sequence) and the end
        logprobs = [0.0] * len(w.prompt) + w.logprobs
        segments += whisper_window(
            tok,
            ids,
            offset=offset,
            duration=w.size * time_per_frame,
            logprobs=logprobs,
            temperature=w.temperature,
            no_speech_prob=w.no_speech_prob,
        )
    transcript = {"text": "", "language": "en", "duration": 0.0, "words": None, "segments": segments}
    return transcription(transcript, "verbose_json")["segments"]


FIELDS = ("seek", "start", "end", "text", "tokens", "temperature", "avg_logprob", "compression_ratio", "no_speech_prob")


@given(
    data=st.data(),
    content_frames=st.sampled_from([800, 3000, 4321, 9000]),
    temperature=st.sampled_from([0.0, 0.4]),
)
def test_verbose_json_segments_are_faster_whispers(tok, faster, model, data, content_frames, temperature):
    theirs, windows, time_per_frame = _decode(faster, model, tok, data, content_frames, 0.0, temperature)
    ours = _ours(tok, windows, time_per_frame)
    assert [row["id"] for row in ours] == [s.id - 1 for s in theirs]  # the API counts from 0
    assert [tuple(row[f] for f in FIELDS) for row in ours] == [tuple(getattr(s, f) for f in FIELDS) for s in theirs]


@given(data=st.data())
def test_with_the_default_length_penalty(tok, faster, model, data):
    theirs, windows, time_per_frame = _decode(faster, model, tok, data, 9000, 1.0, 0.0)
    ours = _ours(tok, windows, time_per_frame)
    assert len(ours) == len(theirs)
    for row, segment in zip(ours, theirs):
        assert row["avg_logprob"] == pytest.approx(segment.avg_logprob, rel=1e-12, abs=1e-15)
        assert tuple(row[f] for f in FIELDS if f != "avg_logprob") == tuple(
            getattr(segment, f) for f in FIELDS if f != "avg_logprob"
        )


@pytest.mark.parametrize("text", ["", " Hello world.", " 今天天气很好，" * 9, "ab" * 200, " 😀 ok"])
def test_compression_ratio_is_faster_whispers_and_openai_whispers(faster, text):
    import whisper_utils_reference

    assert compression_ratio(text) == faster["transcribe"].get_compression_ratio(text)
    assert compression_ratio(text) == whisper_utils_reference.compression_ratio(text)
