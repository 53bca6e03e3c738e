"""Word confidence from per-token log-probabilities: word_timings(..., scores=), the Words
column, and every place a word's confidence goes (CTM's confidence column, openai-whisper's
word "probability" in JSON, the CLI), plus a Whisper window's avg_logprob on its segments.

Expected values come from the definitions: openai-whisper's word probability is the mean of
its tokens' probabilities (whisper/timing.py, add_word_timestamps: ``np.mean(text_token_probs[i:j])``),
its window's avg_logprob the sum of the sampled tokens' log-probabilities, eot's included,
over their count + 1 (whisper/decoding.py, DecodingTask.run); CTM's sixth field is the
confidence (sclite's CTM format)."""

from __future__ import annotations

import json
import math
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasr_tok import TimingError, TokenizerSpec, build_tokenizer
from oasr_tok.core.words import REDUCTIONS, Word, Words, group_words
from oasr_tok.outputs import subtitles

from paths import OWN, shared

REFERENCE = {
    "mean": lambda s: math.fsum(math.exp(x) for x in s) / len(s),
    "min": lambda s: math.exp(min(s)),
    "product": lambda s: math.exp(math.fsum(s)),
    "geometric_mean": lambda s: math.exp(math.fsum(s) / len(s)),
}


@pytest.fixture(scope="module")
def qwen():
    return build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": shared("huggingface/qwen3/tokenizer.json")}))


TEXT = "Hello world, 今天天气很好。 Les élèves 🎉 d'aujourd'hui"


@given(
    scores=st.lists(st.floats(-30.0, 0.0), min_size=64, max_size=64),
    reduction=st.sampled_from(REDUCTIONS),
)
def test_each_word_reduces_its_own_tokens_scores(qwen, scores, reduction):
    ids = qwen.encode(TEXT)
    assert len(ids) <= 64
    scores = scores[: len(ids)]
    words = qwen.word_timings(ids, list(range(len(ids))), None, scores, reduction=reduction)
    assert len(words) > 5
    for word in words:
        expected = REFERENCE[reduction](scores[word.first_token : word.last_token + 1])
        assert word.confidence == pytest.approx(expected, rel=1e-12, abs=1e-300)
        assert 0.0 <= word.confidence <= 1.0
    assert words.confidences == [w.confidence for w in words]


def test_the_default_is_whispers_word_probability(qwen):
    ids = qwen.encode(" hello world")
    scores = [math.log(0.9)] * len(ids)
    scores[-1] = math.log(0.5)
    words = qwen.word_timings(ids, list(range(len(ids))), scores=scores)
    world = words[-1]
    probs = [math.exp(s) for s in scores[world.first_token : world.last_token + 1]]
    assert world.confidence == pytest.approx(sum(probs) / len(probs))


def test_numpy_scores_and_times_are_taken(qwen):
    numpy = pytest.importorskip("numpy")
    ids = qwen.encode(TEXT)
    scores = numpy.linspace(-2.0, 0.0, len(ids), dtype=numpy.float32)
    got = qwen.word_timings(ids, numpy.arange(len(ids)), scores=scores)
    listed = qwen.word_timings(ids, list(range(len(ids))), scores=[float(x) for x in scores])
    assert got.confidences == listed.confidences


def test_without_scores_there_is_no_confidence(qwen):
    ids = qwen.encode(TEXT)
    words = qwen.word_timings(ids, list(range(len(ids))))
    assert set(words.confidences) == {None}
    assert "confidence" not in words[0].to_dict()


@pytest.mark.parametrize(
    "scores, message",
    [
        ([float("nan")], "scores[0]"),
        ([float("inf")], "scores[0]"),
        ([-float("inf")], "scores[0]"),
        ([0.5], "scores[0]"),
        (["x"], "numbers"),
        ("abc", "numbers"),
        ([], "0 values for 1 tokens"),
        ([-1.0, -1.0], "2 values for 1 tokens"),
    ],
)
def test_bad_scores_are_a_timing_error_naming_them(qwen, scores, message):
    ids = qwen.encode("hi")[:1]
    with pytest.raises(TimingError, match=message.replace("[", r"\[").replace("]", r"\]")):
        qwen.word_timings(ids, [0.0], scores=scores)


def test_an_unknown_reduction_is_named(qwen):
    with pytest.raises(TimingError, match="reduction"):
        qwen.word_timings(qwen.encode("hi"), [0.0], scores=[-1.0], reduction="median")


def test_confidence_survives_slices_pickles_and_records(qwen):
    ids = qwen.encode(TEXT)
    scores = [-0.01 * k for k in range(len(ids))]
    words = qwen.word_timings(ids, list(range(len(ids))), scores=scores)
    assert words[1:4].confidences == words.confidences[1:4]
    assert words[::-2].confidences == words.confidences[::-2]
    assert pickle.loads(pickle.dumps(words)) == words
    rebuilt = Words(list(words))
    assert rebuilt == words and rebuilt.confidences == words.confidences
    # a reversed slice of Words built from records (its stop is -1 in slice.indices(): this
    # raised IndexError before)
    assert rebuilt[::-1] == list(words)[::-1] and rebuilt[-2::-3] == list(words)[-2::-3]
    assert Words([words[0], Word("x", 9, 9, 99, 99)]).confidences == [words[0].confidence, None]
    # a Word with a different confidence is a different Word
    w = words[0]
    assert w != Word(w.text, w.start, w.end, w.first_token, w.last_token, 0.123)


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), "high", True])
def test_a_word_record_refuses_a_confidence_outside_0_1(bad):
    with pytest.raises(TimingError, match="confidence"):
        Word("x", 0, 1, 0, 0, bad)


def test_ctm_writes_the_words_own_confidence_column(qwen):
    ids = qwen.encode(" hello world again")
    scores = [math.log(p) for p in (0.91, 0.42, 0.77)][: len(ids)]
    assert len(ids) == 3
    words = qwen.word_timings(ids, [0.0, 0.5, 1.0], [0.4, 0.9, 1.6], scores=scores)
    lines = subtitles.to_ctm(words, "utt1").splitlines()
    assert lines == [
        "utt1 1 0.000 0.400 hello 0.910",
        "utt1 1 0.500 0.400 world 0.420",
        "utt1 1 1.000 0.600 again 0.770",
    ]
    # explicit confidences still win, and words without one write five fields
    assert subtitles.to_ctm(words, "u", confidences=[1, 0, 0.5]).splitlines()[1].endswith(" world 0.000")
    plain = qwen.word_timings(ids, [0.0, 0.5, 1.0], [0.4, 0.9, 1.6])
    assert all(len(line.split()) == 5 for line in subtitles.to_ctm(plain, "u").splitlines())


def test_json_carries_whispers_word_probability(qwen):
    ids = qwen.encode(" hello world.")
    scores = [math.log(0.5)] * len(ids)
    words = qwen.word_timings(ids, [0.1 * k for k in range(len(ids))], scores=scores)
    result = json.loads(subtitles.to_json(subtitles.cues(words)))
    got = [w["probability"] for s in result["segments"] for w in s["words"]]
    assert got == pytest.approx([0.5] * len(words))
    # an openai-whisper result's own "probability" keys are taken as confidences by CTM
    ctm = subtitles.to_ctm(
        [
            {"text": w["word"].strip(), "start": w["start"], "end": w["end"], "probability": w["probability"]}
            for s in result["segments"]
            for w in s["words"]
        ],
        "u",
    )
    assert all(line.endswith(" 0.500") for line in ctm.splitlines())


def test_group_words_takes_scores_too():
    words = group_words(["a", " b", "c"], [0, 1, 2], None, [-1.0, -2.0, -3.0], reduction="min")
    assert words.texts == ["a", "bc"]
    assert words.confidences == pytest.approx([math.exp(-1.0), math.exp(-3.0)])


def test_wav2vec2_words_take_scores():
    folder = sorted(p for p in (OWN / "wav2vec2").iterdir() if (p / "vocab.json").exists())[0]
    tok = build_tokenizer(TokenizerSpec("wav2vec2", {"vocab": str(folder / "vocab.json")}))
    ids = [tok.piece_to_id(c) for c in "HI|YOU"]
    words = tok.word_timings(ids, list(range(len(ids))), scores=[-0.1, -0.2, 0.0, -0.3, -0.4, -0.5])
    assert words.texts == ["HI", "YOU"]
    assert words.confidences == pytest.approx([REFERENCE["mean"]([-0.1, -0.2]), REFERENCE["mean"]([-0.3, -0.4, -0.5])])


@pytest.fixture(scope="module")
def whisper():
    return build_tokenizer(
        TokenizerSpec("whisper", {"tokenizer": shared("whisper/faster-whisper-base/tokenizer.json")})
    )


def test_whisper_segments_carry_the_windows_avg_logprob(whisper):
    ts = whisper.timestamp_begin
    sot_sequence = [whisper.sot, whisper.sot + 1, whisper.sot + 2 + 100]  # sot, <|en|>, task
    sot_sequence = [i for i in sot_sequence if whisper.eot < i < ts][:1] + [whisper.sot]
    body = [ts, *whisper.encode(" Hello world."), ts + 50, ts + 50, *whisper.encode(" Again."), ts + 90]
    ids = [whisper.sot, *body, whisper.eot]
    scores = [0.0] + [-0.1 * (k + 1) for k in range(len(body))] + [-0.05]
    segments = whisper.segments(ids, scores=scores)
    expected = (math.fsum(scores[1 : len(ids)])) / (len(body) + 1)  # eot's score counted, divided by len + 1
    assert len(segments) == 2
    assert [s.avg_logprob for s in segments] == pytest.approx([expected, expected])
    assert whisper.segments(ids)[0].avg_logprob is None
    with pytest.raises(TimingError, match="scores"):
        whisper.segments(ids, scores=scores[:-1])
    with pytest.raises(TimingError, match=r"scores\[3\]"):
        whisper.segments(ids, scores=scores[:3] + [1.0] + scores[4:])
