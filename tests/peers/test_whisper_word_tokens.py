"""openai-whisper's word grouping, replayed: Tokenizer.split_to_word_tokens (unicode split for
zh/ja/th/lo/my/yue, spaces otherwise) and add_word_timestamps' merge_punctuations, from
whisper/tokenizer.py and whisper/timing.py of openai-whisper 20250625 (copied verbatim into
tests/whisper_transcribe_reference.py, run over its own tiktoken encoding of the shared
multilingual.tiktoken), against the whisper kind's split_to_word_tokens / word_tokens on the
real faster-whisper-base tokenizer.json; and Tokenizer.word_timings' token spans on byte-level
text: every token that carries a byte of a word's characters belongs to that word, as in
whisper's groups."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.kinds.whisper import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS

from paths import shared
from whisper_transcribe_reference import WordTiming, WordTokenizer, get_encoding, merge_punctuations


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer(
        TokenizerSpec("whisper", {"tokenizer": shared("whisper/faster-whisper-base/tokenizer.json")})
    )


@pytest.fixture(scope="module")
def encoding():
    return get_encoding(shared("whisper-tiktoken/multilingual.tiktoken"))


TEXTS = {
    "en": [" Hello world, this is a test.", ' He said, "hello (world)!" ok.', " It's 3.5% - (really) ¿no?"],
    "zh": [" 今天天气很好，我们去公园散步吧。", " 你好🎉世界 𠀀𠀁 ok"],
    "ja": [" 東京は日本の首都です。「はい」"],
    "th": [" สวัสดีครับ ยินดีต้อนรับ"],
    "de": [" Grüß Gott! Schöne Grüße, ’so‘ …"],
    "ko": [" 안녕하세요, 반갑습니다."],
}
CASES = [(language, text) for language, texts in TEXTS.items() for text in texts]


def reference_words(encoding, tokens, language):
    ref = WordTokenizer(encoding, language)
    words, word_tokens = ref.split_to_word_tokens(tokens + [ref.eot])
    alignment = [WordTiming(w, t, 0.0, 0.0, 1.0) for w, t in zip(words[:-1], word_tokens[:-1])]
    merge_punctuations(alignment, PREPEND_PUNCTUATIONS, APPEND_PUNCTUATIONS)
    return [(w.word, w.tokens) for w in alignment if w.word]


@pytest.mark.parametrize("language, text", CASES)
def test_split_to_word_tokens_is_whispers(tok, encoding, language, text):
    tokens = tok.encode(text)
    ref = WordTokenizer(encoding, language)
    assert tok.split_to_word_tokens(tokens + [tok.eot], language) == ref.split_to_word_tokens(tokens + [ref.eot])
    assert tok.word_tokens(tokens, language) == reference_words(encoding, tokens, language)


@given(ids=st.lists(st.integers(0, 50256), max_size=25), language=st.sampled_from(["en", "zh", "ja", "de"]))
@example(ids=[171, 120, 234, 3919, 255], language="zh")
def test_split_on_any_ids_including_broken_bytes(tok, encoding, ids, language):
    ref = WordTokenizer(encoding, language)
    assert tok.split_to_word_tokens(ids, language) == ref.split_to_word_tokens(ids)


@pytest.mark.parametrize("language, text", [c for c in CASES if c[0] in ("zh", "ja", "th", "ko")])
def test_word_timings_give_each_word_every_token_that_carried_its_bytes(tok, encoding, language, text):
    """For text written without spaces, whisper's words are single characters (or runs of
    them) with all the tokens that carried their bytes; each of our words starts with the
    first token whisper gives its first character."""
    tokens = tok.encode(text)
    groups = WordTokenizer(encoding, language).split_to_word_tokens(tokens)[1]
    first_token_of_piece = {}
    at = 0
    for group in groups:
        first_token_of_piece[at] = at
        at += len(group)
    starts = [float(k) for k in range(len(tokens))]
    words = tok.word_timings(tokens, starts)
    for word in words:
        # the whisper group holding the word's first token starts at the same token
        assert word.first_token in first_token_of_piece, (word, groups)
