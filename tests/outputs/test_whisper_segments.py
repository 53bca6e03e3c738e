"""Whisper's timestamp tokens to segments and marked-up text, against openai-whisper's own
rules (tests/whisper_transcribe_reference.py: its tiktoken encoding, Tokenizer.decode /
decode_with_timestamps, and transcribe's segment splitting) on the real multilingual files:
faster-whisper-base's tokenizer.json for us, openai-whisper's multilingual.tiktoken for it."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oasr_tok import TimingError, TokenizerSpec, build_tokenizer
from oasr_tok.core.words import Word
from oasr_tok.outputs.segments import Segment, segment_words

from paths import shared
from strategies import whisper_windows
from whisper_transcribe_reference import Tokenizer as ReferenceTokenizer
from whisper_transcribe_reference import get_encoding, split_segments


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(
        TokenizerSpec("whisper", {"tokenizer": shared("whisper/faster-whisper-base/tokenizer.json")})
    )


@pytest.fixture(scope="module")
def reference():
    return ReferenceTokenizer(get_encoding(shared("whisper-tiktoken/multilingual.tiktoken")))


def test_the_layouts_agree(tok, reference):
    assert (tok.eot, tok.timestamp_begin) == (reference.eot, reference.timestamp_begin)


@given(data=st.data(), offset=st.sampled_from([0.0, 30.0, 17.36, 1234.5]), duration=st.sampled_from([30.0, 12.34]))
def test_segments_split_as_openai_whisper_transcribe(tok, reference, data, offset, duration):
    tokens = data.draw(whisper_windows(tok))
    expected = split_segments(reference, tokens, offset, duration)
    got = tok.segments(tokens, offset=offset, duration=duration)
    assert [(s.start, s.end, s.text) for s in got] == [(s["start"], s["end"], s["text"]) for s in expected]
    # first/last token locate each segment's own tokens
    assert [tokens[s.first_token : s.last_token + 1] for s in got] == [s["tokens"] for s in expected]


@given(data=st.data())
def test_the_sot_sequence_and_eot_are_not_part_of_the_window(tok, reference, data):
    tokens = data.draw(whisper_windows(tok))
    prefix = tok.sot_sequence(language="en", task="transcribe")
    got = tok.segments(prefix + tokens + [tok.eot] + tok.encode(" after"))
    expected = split_segments(reference, tokens, 0.0, 30.0)
    assert [(s.start, s.end, s.text) for s in got] == [(s["start"], s["end"], s["text"]) for s in expected]
    assert all(s.first_token >= len(prefix) for s in got)


def test_worked_layouts(tok):
    ts = lambda seconds: tok.timestamp_id(seconds)
    hello, world = tok.encode(" Hello"), tok.encode(" world")
    # Pairs close segments; the unfinished tail after the last pair is left to the next window.
    got = tok.segments([ts(0), *hello, ts(1.0), ts(1.0), *world, ts(2.0), ts(2.0), *hello], offset=30.0)
    assert [(s.start, s.end, s.text) for s in got] == [(30.0, 31.0, " Hello"), (31.0, 32.0, " world")]
    # A single timestamp at the end keeps the last slice.
    got = tok.segments([ts(0), *hello, ts(1.0), ts(1.0), *world, ts(2.0)])
    assert [(s.start, s.end, s.text) for s in got] == [(0.0, 1.0, " Hello"), (1.0, 2.0, " world")]
    # No timestamps: one segment over the window.
    assert tok.segments(hello, offset=5.0) == [Segment(5.0, 35.0, " Hello", 0, len(hello) - 1)]


def _as_this_file_spells_it(text: str) -> str:
    """openai-whisper names id 50362 <|nospeech|> (its name since large-v3); faster-whisper-base's
    tokenizer.json, which `tok` reads, still spells that token <|nocaptions|>, and the kind renders
    what the file says. Only the spelling differs: the id and its place in the layout agree."""
    return text.replace("<|nospeech|>", "<|nocaptions|>")


_WINDOW_IDS = st.lists(
    st.one_of(
        st.integers(0, 50256),
        st.integers(50257, 51864),
        st.sampled_from([50258, 50257, 50363, 50364, 51864]),
    ),
    max_size=30,
)


@given(ids=_WINDOW_IDS)
@example(ids=[50362])  # <|nocaptions|>: found by this test, spelled as the file spells it
def test_decode_with_timestamps_is_openai_whispers(tok, reference, ids):
    assert (tok.sot, tok.eot, tok.no_timestamps, tok.timestamp_begin, tok.vocab_size) == (
        50258,
        50257,
        50363,
        50364,
        51865,
    )
    assert tok.decode_with_timestamps(ids) == _as_this_file_spells_it(reference.decode_with_timestamps(ids))
    assert tok.decode_with_timestamps(ids + tok.encode(" x")).endswith(" x")


def test_bad_input(tok):
    with pytest.raises(ValueError):
        tok.segments([tok.vocab_size])
    with pytest.raises(TimingError, match="offset"):
        tok.segments([], offset=float("nan"))
    with pytest.raises(TimingError, match="duration"):
        tok.segments([], duration=-1.0)


# -- segment_words: any kind ---------------------------------------------------------------------


def _w(text, start, end, k=0):
    return Word(text, start, end, k, k)


def test_segment_words_breaks_at_sentences_pauses_and_length():
    words = [
        _w("Hello", 0.0, 0.4),
        _w("there.", 0.5, 0.9),
        _w("How", 1.0, 1.2),
        _w("are", 1.3, 1.4),
        _w("you", 3.0, 3.2),
        _w("我", 3.3, 3.4),
        _w("们。", 3.4, 3.6),
        _w("ok", 3.7, 3.8),
    ]
    got = segment_words(words, max_pause=1.0)
    assert [(s.text, s.start, s.end, s.first_token, s.last_token) for s in got] == [
        ("Hello there.", 0.0, 0.9, 0, 1),
        ("How are", 1.0, 1.4, 2, 3),  # a pause of 1.6 s > max_pause
        ("you 我们。", 3.0, 3.6, 4, 6),  # CJK characters join without a space
        ("ok", 3.7, 3.8, 7, 7),
    ]
    assert [s.text for s in segment_words(words[:4], max_words=1)] == ["Hello", "there.", "How", "are"]
    assert [s.text for s in segment_words(words[2:5], max_duration=2.0, max_pause=5.0)] == ["How are", "you"]
    assert segment_words([]) == []


def test_segment_words_bad_input_names_the_word_or_option():
    with pytest.raises(TimingError, match="word 1"):
        segment_words([_w("a", 1.0, 2.0), _w("b", 0.5, 0.7)])
    with pytest.raises(TimingError, match="max_pause"):
        segment_words([], max_pause=0)
    with pytest.raises(TimingError, match="max_words"):
        segment_words([], max_words=0)
