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
@example(ids=[33893, 94], language="en")  # whisper reads past its text: IndexError (below)
@example(ids=[33893, 94, 220, 33893, 94, 94], language="zh")
def test_split_on_any_ids_including_broken_bytes(tok, encoding, ids, language):
    """Whisper's split wherever whisper's code gives one; where it raises IndexError (a piece's
    U+FFFD past the end of the whole text: the whole decode merged broken bytes of several
    tokens into one U+FFFD), every token is still in a group, in order, and the pieces are the
    whole text (test_where_whisper_reads_past_its_text_the_tokens_join_the_piece_before)."""
    ref = WordTokenizer(encoding, language)
    ours = tok.split_to_word_tokens(ids, language)
    try:
        expected = ref.split_to_word_tokens(ids)
    except IndexError:
        words, groups = ours
        assert [t for group in groups for t in group] == ids[: sum(map(len, groups))]
        assert tok.decode_with_timestamps(ids).startswith("".join(words))
        return
    assert ours == expected


def test_where_whisper_reads_past_its_text_the_tokens_join_the_piece_before(tok, encoding):
    """openai-whisper's split_tokens_on_unicode indexes its whole decode at a U+FFFD of the piece
    decoded so far; for [33893, 94] ("제" and a broken byte, then another broken byte that the
    whole decode merges into the same U+FFFD) that index is past the end, and it raises a bare
    IndexError. Here the second token joins the piece its bytes are rendered in: a typed answer,
    never an IndexError (tests/peers: the xfail below is whisper's side)."""
    assert tok.decode_with_timestamps([33893, 94]) == "제\ufffd"
    for language in ("en", "zh", None):
        assert tok.split_to_word_tokens([33893, 94], language) == (["제\ufffd"], [[33893, 94]])
    # With eot after them (as word_tokens splits) whisper's index stays inside its text: the same.
    assert tok.word_tokens([33893, 94], "en") == reference_words(encoding, [33893, 94], "en")


@pytest.mark.xfail(strict=True, raises=IndexError, reason="openai-whisper reads past the end of its text: IndexError")
def test_whisper_itself_on_merged_broken_bytes(tok, encoding):
    """The deliberate difference: whisper's own split_to_word_tokens raises IndexError on
    [33893, 94]; ours gives the split above."""
    assert WordTokenizer(encoding, "en").split_to_word_tokens([33893, 94]) == tok.split_to_word_tokens(
        [33893, 94], "en"
    )


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
