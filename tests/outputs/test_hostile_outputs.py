"""Outputs on hostile input: every subtitle writer on any float time, to_json on NumPy and NaN times,
qwen3-asr's language header.

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

import oasr_tok
from oasr_tok import (
    TimingError,
)
from oasr_tok.outputs import subtitles

FLOATS = st.floats(allow_nan=True, allow_infinity=True)


def _bytelevel(tmp_path, added=()):
    runtime = Tokenizer(models.BPE())
    runtime.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    runtime.decoder = decoders.ByteLevel()
    from tokenizers.trainers import BpeTrainer

    trainer = BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    runtime.train_from_iterator(["language English<asr_text>one two 你好 🎉 Chinese german hi foo"] * 4, trainer)
    if added:
        runtime.add_tokens([AddedToken(t) for t in added])
    path = tmp_path / "tokenizer.json"
    runtime.save(str(path))
    return oasr_tok.load(str(tmp_path))


@given(start=FLOATS, end=FLOATS)
@example(start=2.0, end=1.0)
@example(start=-1.0, end=1.0)
@example(start=math.nan, end=1.0)
@example(start=0.0, end=math.inf)
@example(start=0.0, end=1.8e305)
def test_every_writer_refuses_or_writes_any_float_time(start, end):
    """Hostile input, third round (issue 35), defects 2e and 3: no silent wrong answers, typed
    errors (any float time in every writer)."""
    cue = subtitles.Cue(start, end, "a")
    ok = all(math.isfinite(t) and t >= 0 and math.isfinite(t * 1000.0) for t in (start, end)) and end >= start
    for write in (subtitles.to_srt, subtitles.to_vtt, subtitles.to_tsv, subtitles.to_json):
        if ok:
            text = write([cue])
            if write is subtitles.to_json:
                assert json.loads(text)["segments"][0]["end"] == end
        else:
            with pytest.raises(TimingError):
                write([cue])


def test_to_json_takes_numpy_times_and_refuses_nan_in_a_whisper_result():
    """Hostile input, third round (issue 35), defect 2e: no silent wrong answers (to_json's
    times)."""
    text = subtitles.to_json([subtitles.Cue(np.float32(0.5), np.float64(1.25), "a")])
    assert json.loads(text)["segments"][0]["start"] == 0.5
    result = {"text": " a", "segments": [{"start": np.float32(0.5), "end": 1.0, "text": " a"}]}
    assert json.loads(subtitles.to_json(result))["segments"][0]["start"] == 0.5
    for bad in (math.nan, -1.0, math.inf):
        with pytest.raises(TimingError):
            subtitles.to_json({"segments": [{"start": bad, "end": 1.0, "text": "a"}]})


def test_g5_qwen3_asr_language_is_the_first_line_that_starts_with_language(tmp_path):
    """Hostile input, fourth round (issue 44), finding G5.

    qwen-asr's parse_asr_output takes the first line that starts with "language " (a bare
    "language" line, stripped, does not): `language \\n\\nlanguage English <asr_text>...` is
    English, for decode_envelope and for a stream's envelope alike."""
    tok = _bytelevel(tmp_path)
    raw = "language \n\nlanguage English<asr_text>one two"
    ids = tok.encode(raw)
    assert tok.decode(ids) == raw
    transcript = tok.decode_envelope(ids, "qwen3_asr")
    assert (transcript.language, transcript.text) == ("English", "one two")
    stream = tok.new_stream(envelope="qwen3_asr")
    text = "".join(stream.feed([i]) for i in ids) + stream.feed([], final=True)
    assert (stream.envelope.get("language"), text) == ("English", "one two")
    # (a header that does not start with "language" is not held as one: docs/envelopes.md)
    for header, language in (
        ("language Chinese\nx", "Chinese"),
        ("language \n language german", "German"),
        ("language", None),
    ):
        assert tok.decode_envelope(tok.encode(f"{header}<asr_text>hi"), "qwen3_asr").language == language
