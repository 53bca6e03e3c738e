"""funasr_char: FunASR parity rule by rule, the clean mode's fixes, the reference port on random
and realistic ids, token pieces and word timings against FunASR's merged time stamps, bounded
streaming state, file errors, encode.

Each parity test states the token list FunASR's sentence_postprocess receives and the text it
prints; the expected text is checked against the line-by-line port (funasr_reference.py) as
well as against the kind, so a wrong expectation cannot pass silently."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.core.words import Word

from cases import vocabulary
from funasr_reference import reference_decode, sentence_postprocess
from paths import own, shared

REAL_TXT = shared("funasr_char/paraformer-zh-vocab8404/tokens.txt")
REAL_JSON = shared("funasr_char/paraformer-zh-vocab8404/tokens.json")
SMALL = own("funasr_char/small/tokens.txt")
ODD = own("funasr_char/odd/tokens.json")


def _tok(path=REAL_TXT, **options):
    return build_tokenizer(TokenizerSpec("funasr_char", {"tokens": path}, options))


REAL = _tok()
REAL_VOCAB = vocabulary(REAL)
REAL_BARE = _tok(special_ids=[])  # markup reaches FunASR's own wash
REAL_CLEAN = _tok(mode="clean")
ODD_TOK = _tok(ODD)
ODD_CLEAN = _tok(ODD, mode="clean")


def _ids(tok, tokens):
    index = {t: i for i, t in enumerate(vocabulary(tok))}
    return [index[t] for t in tokens]


def _streamed(tok, ids):
    """One id per call; checks no retraction along the way and returns the concatenation."""
    state: dict = {}
    emitted = ""
    for k, token_id in enumerate(ids):
        emitted += tok.decode_incremental([token_id], state)
        assert state["text"] == tok.decode(ids[: k + 1])
        assert tok.decode(ids).startswith(emitted)
    return emitted + tok.decode_incremental([], state, final=True)


def check_parity(tokens, expected, tok=REAL):
    """FunASR prints `expected` for `tokens`; so must the kind, whole, streamed and per token."""
    assert sentence_postprocess(tokens)[0] == expected  # the port agrees with the stated rule
    ids = _ids(tok, tokens)
    assert tok.decode(ids) == expected
    assert _streamed(tok, ids) == expected
    assert "".join(tok.token_pieces(ids)) == expected


def check_clean(tokens, expected, tok=REAL_CLEAN):
    ids = _ids(tok, tokens)
    assert tok.decode(ids) == expected
    assert _streamed(tok, ids) == expected
    assert "".join(tok.token_pieces(ids)) == expected


# -- parity, rule by rule ------------------------------------------------------------------


def test_rule_markup_words_dropped():
    # <s>, </s>, <unk>, <OOV> are washed out by sentence_postprocess itself, so they vanish even
    # when they are not special ids; <blank> is not in its list and is printed.
    check_parity(["<s>", "中", "<unk>", "文", "</s>"], "中文", tok=REAL_BARE)
    check_parity(["中", "<OOV>", "文"], "中文", tok=_tok(SMALL, special_ids=[]))
    check_parity(["中", "<blank>", "文"], "中<blank>文", tok=REAL_BARE)
    # With the default special ids they are stripped before the rules: same text.
    assert REAL.decode(_ids(REAL, ["<s>", "中", "<unk>", "文", "</s>", "<blank>"])) == "中文"


def test_rule_cjk_joined_without_spaces():
    check_parity(["今", "天", "天", "气", "好"], "今天天气好")


def test_rule_digits_count_as_chinese():
    check_parity(["第", "1", "2", "名"], "第12名")
    check_parity(["1", "2", "3"], "123")


def test_rule_digits_glued_to_english_word():
    # A digit is "Chinese", so it removes the space after an English word.
    check_parity(["world", "2", "people"], "world2people")


def test_rule_continuation_pieces_merged():
    check_parity(["hel@@", "lo", "world"], "hello world")
    check_parity(["par@@", "af@@", "or@@", "mer"], "paraformer")


def test_rule_english_words_separated_by_spaces():
    check_parity(["the", "price", "and"], "the price and")


def test_rule_space_before_cjk_removed():
    check_parity(["中", "price", "world", "中"], "中price world中")
    check_parity(["world", "你", "好"], "world你好")


def test_rule_single_letters_joined_and_upper_cased():
    check_parity(["a", "b", "c"], "ABC")
    check_parity(["n", "b", "a", "比", "赛"], "NBA比赛")
    check_parity(["a", "b", "world", "c", "d", "e"], "AB world CDE")


def test_rule_single_letter_alone_stays_lower_case():
    check_parity(["a", "中"], "a中")
    check_parity(["price", "x", "world"], "price x world")


def test_rule_abbreviation_survives_the_pop_before_cjk():
    check_parity(["a", "b", "中", "c", "d"], "AB中CD")


def test_rule_abbreviation_keeps_the_space_after_it():
    check_parity(["g", "p", "u", "price"], "GPU price")


def test_rule_letter_piece_is_not_a_single_letter():
    # "x@@" + "y" is the word "xy": no run.
    check_parity(["a", "x@@", "y", "b"], "a xy b")


def test_rule_dangling_piece_at_the_end_lost():
    check_parity(["中", "hel@@"], "中")
    check_parity(["the", "wor@@"], "the")


def test_rule_pending_piece_carried_past_cjk():
    # The pending word waits for the next English word, so it lands after the CJK text.
    check_parity(["hel@@", "中", "lo"], "中hello")


def test_rule_piece_after_word_keeps_the_space():
    # A piece clears alpha_blank: the CJK character that follows pops nothing.
    check_parity(["world", "x@@", "中"], "world 中")


def test_rule_punctuation_after_word_popped_by_cjk():
    # The pop removes whatever element is last: here the full stop, not the space.
    check_parity(["world", ".", "中"], "world 中")
    check_parity(["world", ".", "people"], "world .people")


def test_rule_digit_pieces_printed_with_their_marker():
    # "1@@" is all "Chinese" characters ("@" counts), so it is printed as it is.
    check_parity(["1@@", "2"], "1@@2")
    check_parity(["world", "9@@", "中"], "world9@@中")


def test_rule_apostrophe_words():
    check_parity(["it's", "中"], "it's中")
    check_parity(["'"], "'")
    check_parity(["i'@@", "m@@", "and"], "i'mand")


def test_rule_letter_outside_the_cjk_block_is_an_english_word():
    # U+2B5AF is a letter beyond U+9FFF: FunASR spaces it like an English word.
    check_parity(["\U0002b5af", "\U0002b5af"], "\U0002b5af \U0002b5af")
    check_parity(["中", "\U0002b5af", "中"], "中\U0002b5af中")


def test_rule_whole_sentence_branch():
    # "中 文" passes the sentence-level Chinese test (spaces ignored): in an all-Chinese
    # sentence its space is removed; one English word anywhere makes the sentence mixed and
    # the token is printed as it is.
    check_parity(["中 文", "中"], "中文中", tok=ODD_TOK)
    check_parity(["中 文", "中", "a"], "中 文中a", tok=ODD_TOK)
    # "a中" is sentence-alpha (string order) but per character neither.
    check_parity(["a中", "b"], "a中 b", tok=ODD_TOK)
    check_parity(["a中", "b", "中"], "a中b中", tok=ODD_TOK)


def test_rule_empty_and_space_tokens_break_runs():
    check_parity(["a", "", "b"], "a b", tok=ODD_TOK)
    check_parity(["a", " ", "b"], "a  b", tok=ODD_TOK)


def test_rule_text_is_stripped():
    check_parity(["\u3000", "中", "\u3000"], "中", tok=ODD_TOK)
    check_parity([" ", "a"], "a", tok=ODD_TOK)


def test_rule_upper_case_letters_join_runs():
    check_parity(["A", "b", "c"], "ABC", tok=ODD_TOK)


def test_undecided_branch_holds_until_decided():
    """While every token so far passes the sentence-level Chinese test, "中 文" prints as 中文;
    one English word later it prints as "中 文": nothing after 中 may leave before that is known."""
    tok = ODD_TOK
    state: dict = {}
    # Both renderings start 中中; they part at the space.
    assert tok.decode_incremental(_ids(tok, ["中", "中 文", "中"]), state) == "中中"
    assert state["text"] == "中中文中"
    assert tok.decode_incremental(_ids(tok, ["a"]), state) == " 文中"
    assert tok.decode_incremental([], state, final=True) == "a"
    assert state["text"] == "中中 文中a"


def test_undecided_branch_flushes_the_open_branch_at_the_end():
    tok = ODD_TOK
    state: dict = {}
    assert tok.decode_incremental(_ids(tok, ["中 文", "1"]), state) == "中"
    assert tok.decode_incremental([], state, final=True) == "文1"


def test_real_vocabulary_has_no_branch_sensitive_token():
    """In the real list every token's per-token class agrees with its sentence-level class, so
    the whole-sentence branch choice never changes the text there (docs: § The branch)."""
    for tok in (REAL, _tok(REAL_JSON)):
        assert not [t for t, entry in zip(vocabulary(tok), tok._info) if entry[4]]


# -- parity against the port, random and realistic ------------------------------------------


def _pool(tok):
    tokens = vocabulary(tok)
    short = [i for i, t in enumerate(tokens) if len(t) <= 1 or "@@" in t or not t.isalpha() or len(t) <= 2]
    return short


@pytest.mark.parametrize(
    "path,options",
    [
        (REAL_TXT, {}),
        (REAL_TXT, {"special_ids": []}),
        (REAL_JSON, {}),
        (SMALL, {}),
        (ODD, {}),
        (ODD, {"special_ids": []}),
    ],
)
@given(data=st.data())
def test_decode_matches_funasr_on_random_ids(path, options, data):
    tok = _tok(path, **options)
    pool = _pool(tok)
    one = st.one_of(st.integers(0, tok.vocab_size - 1), st.sampled_from(pool), st.sampled_from(pool))
    ids = data.draw(st.lists(one, max_size=30))
    assert tok.decode(ids) == reference_decode(vocabulary(tok), tok.special_ids, ids)


def test_decode_matches_funasr_on_realistic_ids():
    texts = [
        "我们用 gpu 训练 paraformer 模型",
        "a b c 你好 n b a 比赛 x y",
        "hello world 你好 it's okay",
        "第 1 2 3 名 and 4 5 6 people",
        "the quick brown fox",
        "今天天气很好",
    ]
    for text in texts:
        ids = REAL.encode(text)
        assert REAL.decode(ids) == reference_decode(REAL_VOCAB, REAL.special_ids, ids)
        # Every prefix too: what a stream shows along the way.
        for k in range(len(ids)):
            assert REAL.decode(ids[:k]) == reference_decode(REAL_VOCAB, REAL.special_ids, ids[:k])


def test_token_pieces_of_long_id_lists_and_arrays_join_to_funasrs_text():
    import numpy as np

    ids = [
        i
        for text in ("我们用 gpu 训练 paraformer 模型", "hello world 你好 it's okay", "第 1 2 3 名")
        for i in REAL.encode(text)
    ]
    ids = (ids * (5000 // len(ids) + 1))[:5000]  # long: a list this long is read in place
    expected = reference_decode(REAL_VOCAB, REAL.special_ids, ids)
    wide = np.zeros(2 * len(ids), dtype=np.int64)
    wide[::2] = ids
    pieces = REAL.token_pieces(ids)
    assert "".join(pieces) == expected and len(pieces) == len(ids)
    for container in (np.array(ids), np.array(ids, dtype=np.int32), wide[::2], np.array(ids, dtype=">u2"), tuple(ids)):
        assert REAL.token_pieces(container) == pieces
    for bad, value in ((np.array([*ids, REAL.vocab_size]), REAL.vocab_size), ([*ids, -1], -1)):
        with pytest.raises(oasr_tok.InvalidIdError, match=f"token id {value} at position {len(ids)} is out of range"):
            REAL.token_pieces(bad)


# -- clean mode --------------------------------------------------------------------------------


def test_clean_keeps_a_dangling_piece():
    check_clean(["中", "hel@@"], "中hel")
    check_clean(["the", "wor@@"], "the wor")


def test_clean_ends_a_pending_piece_where_the_word_stops():
    check_clean(["hel@@", "中", "lo"], "hel中lo")
    check_clean(["hel@@", ".", "lo"], "hel .lo")


def test_clean_digits_not_glued_to_english_words():
    check_clean(["world", "2", "people"], "world 2 people")
    check_clean(["第", "1", "2", "名"], "第12名")
    check_clean(["world", "1", "2", "中"], "world 12中")


def test_clean_digit_pieces_are_continuations():
    check_clean(["1@@", "2"], "12")
    check_clean(["3@@", "d", "中"], "3d中")
    check_clean(["mp@@", "3"], "mp3")


def test_clean_keeps_punctuation_after_a_word():
    check_clean(["world", ".", "中"], "world .中")
    check_clean(["world", "&", "people"], "world &people")


def test_clean_has_no_whole_sentence_branch():
    check_clean(["中 文", "中"], "中 文中", tok=ODD_CLEAN)
    check_clean(["a中", "b"], "a中b", tok=ODD_CLEAN)
    check_clean(["hello", "@", "中"], "hello @中", tok=ODD_CLEAN)
    check_clean(["hello", "9@@"], "hello 9", tok=ODD_CLEAN)


def test_clean_keeps_the_other_rules():
    check_clean(["a", "b", "c", "中"], "ABC中")
    check_clean(["price", "world", "中"], "price world中")
    check_clean(["<s>", "中", "</s>"], "中", tok=_tok(mode="clean", special_ids=[]))


def test_clean_equals_parity_where_no_quirk_applies():
    for text in ["我们用 gpu 训练 paraformer 模型", "a b c 你好 n b a 比赛", "hello world 你好 it's okay"]:
        ids = REAL.encode(text)
        assert REAL_CLEAN.decode(ids) == REAL.decode(ids)


# -- token pieces: each character on the token that printed it -------------------------------
# Expected pieces follow docs/kinds/funasr_char.md § Token pieces: a token's own text (without
# `@@`, upper-cased in a run of letters) on that token; a space the rules insert on the token
# that prints the next text; "" for what the rules drop. check_parity/check_clean hold the
# joined text against FunASR's port as well.


def check_pieces(tokens, expected, tok=REAL):
    ids = _ids(tok, tokens)
    text = "".join(expected)
    if tok.mode == "parity":
        assert sentence_postprocess([t for t, i in zip(tokens, ids) if i not in tok.special_ids])[0] == text
    assert tok.decode(ids) == text
    assert tok.token_pieces(ids) == expected


def test_pieces_split_a_word_over_its_continuation_pieces():
    check_pieces(["g@@", "p@@", "u"], ["g", "p", "u"])
    check_pieces(["我", "用", "g@@", "p@@", "u", "训"], ["我", "用", "g", "p", "u", "训"])
    check_pieces(["par@@", "af@@", "or@@", "mer"], ["par", "af", "or", "mer"])


def test_pieces_give_each_abbreviation_letter_to_its_token():
    check_pieces(["a", "b", "c"], ["A", "B", "C"])
    check_pieces(["n", "b", "a", "比", "赛"], ["N", "B", "A", "比", "赛"])
    check_pieces(["a", "b", "中", "c", "d"], ["A", "B", "中", "C", "D"])


def test_pieces_put_an_inserted_space_on_the_next_word():
    check_pieces(["g", "p", "u", "price"], ["G", "P", "U", " price"])
    check_pieces(["hel@@", "lo", "world"], ["hel", "lo", " world"])
    check_pieces(["the", "price", "and"], ["the", " price", " and"])
    # The space after `world` survives the piece (no pop) and prints before 中.
    check_pieces(["world", "x@@", "中"], ["world", "", " 中"])


def test_pieces_lose_what_the_rules_drop():
    check_pieces(["price", "中"], ["price", "中"])  # the space popped by the CJK token
    check_pieces(["world", ".", "中"], ["world", "", " 中"])  # the full stop popped instead
    check_pieces(["world", ".", "people"], ["world", " .", "people"])
    check_pieces(["the", "wor@@"], ["the", ""])  # a dangling piece is lost
    check_pieces(["<s>", "中", "<unk>", "文", "</s>"], ["", "中", "", "文", ""], tok=REAL_BARE)
    check_pieces(["中", "a", "</s>"], ["中", "a", ""], tok=REAL_BARE)
    check_pieces([" ", "a"], ["", "a"], tok=ODD_TOK)  # the strip
    check_pieces(["\u3000", "中", "\u3000"], ["", "中", ""], tok=ODD_TOK)


def test_pieces_of_a_piece_carried_past_cjk_go_with_the_word_token():
    # FunASR prints "中hello": `hel` lands after 中, so it cannot stay on the first token
    # (pieces are in id order); it goes with `lo`, the token that places the word.
    check_pieces(["hel@@", "中", "lo"], ["", "中", "hello"])
    check_pieces(["hel@@", "中", "l@@", "o"], ["", "中", "hell", "o"])


def test_pieces_other_tokens_keep_their_text():
    check_pieces(["1@@", "2"], ["1@@", "2"])
    check_pieces(["a", " ", "b"], ["a", "  ", "b"], tok=ODD_TOK)  # the inserted space goes to " "
    check_pieces(["a", "", "b"], ["a", "", " b"], tok=ODD_TOK)


def test_pieces_follow_the_whole_sentence_branch():
    check_pieces(["中 文", "中"], ["中文", "中"], tok=ODD_TOK)  # all-Chinese: spaces removed
    check_pieces(["中 文", "中", "a"], ["中 文", "中", "a"], tok=ODD_TOK)  # mixed
    check_pieces(["a中", "b"], ["a中", " b"], tok=ODD_TOK)  # all-alpha: a space after each


def test_pieces_in_clean_mode():
    check_pieces(["the", "wor@@"], ["the", " wor"], tok=REAL_CLEAN)
    check_pieces(["hel@@", "中", "lo"], ["hel", "中", "lo"], tok=REAL_CLEAN)
    check_pieces(["world", "2", "people"], ["world", " 2", " people"], tok=REAL_CLEAN)
    check_pieces(["mp@@", "3", "中"], ["mp", "3", "中"], tok=REAL_CLEAN)
    check_pieces(["world", ".", "中"], ["world", " .", "中"], tok=REAL_CLEAN)
    check_pieces(["g@@", "p@@", "u", "a", "b"], ["g", "p", "u", " A", "B"], tok=REAL_CLEAN)


# -- word timings against FunASR's merged time stamps ----------------------------------------


def test_word_timings_of_a_piece_word_span_its_pieces():
    ids = _ids(REAL, ["我", "用", "g@@", "p@@", "u", "训"])
    starts, ends = [0, 10, 20, 30, 40, 50], [8, 18, 28, 38, 48, 58]
    words = REAL.word_timings(ids, starts, ends)
    assert words[2] == Word("gpu", 20, 48, 2, 4)  # g@@'s start, u's end
    assert REAL.word_timings(ids, starts)[2] == Word("gpu", 20, 50, 2, 4)  # ends at 训's start
    abc = REAL.word_timings(_ids(REAL, ["a", "b", "c", "中"]), [0, 10, 20, 30], [5, 15, 25, 35])
    assert abc == [Word("ABC", 0, 25, 0, 2), Word("中", 30, 35, 3, 3)]


def _funasr_words(tokens, starts, ends):
    """FunASR's timestamp path: (word, begin, end) for each word it returns."""
    _, stamps, words = sentence_postprocess(tokens, [[b, e] for b, e in zip(starts, ends)])
    assert len(stamps) == len(words)
    return [(word, b, e) for word, (b, e) in zip(words, stamps)]


def _ours(tok, ids, starts, ends):
    return [(w.text, w.start, w.end) for w in tok.word_timings(ids, starts, ends)]


@pytest.mark.parametrize(
    "text",
    [
        "我们用 gpu 训练 paraformer 模型",
        "a b c 你好 n b a 比赛 x y",
        "hello world 你好 it's okay don't worry",
        "the quick brown fox jumps over the lazy dog",
        "今天天气很好",
        "gpu price a 中",
    ],
)
def test_word_timings_agree_with_funasr_on_hypotheses(text):
    ids = REAL.encode(text)
    starts = [100 * k for k in range(len(ids))]
    ends = [100 * k + 60 for k in range(len(ids))]
    assert _ours(REAL, ids, starts, ends) == _funasr_words([REAL_VOCAB[i] for i in ids], starts, ends)


_LOWER = "abcdefghijklmnopqrstuvwxyz"
_PIECES = [i for i, t in enumerate(REAL_VOCAB) if t.endswith("@@") and t[:-2] and all(c in _LOWER for c in t[:-2])]
_WORDS = [
    i
    for i, t in enumerate(REAL_VOCAB)
    if t and all(c in _LOWER for c in t.replace("'", "")) and t[0] != "'" and t[-1] != "'" and "@@" not in t
]
_LETTERS = [i for i, t in enumerate(REAL_VOCAB) if len(t) == 1 and t in _LOWER]
_CJK = [i for i, t in enumerate(REAL_VOCAB) if len(t) == 1 and "\u4e00" <= t <= "\u9fff"]

# A hypothesis as a recogniser emits it: CJK characters, English words (pieces ending in a word
# token), single letters; perhaps an unfinished word at the end, which both sides drop.
_word = st.one_of(
    st.lists(st.sampled_from(_CJK), min_size=1, max_size=3),
    st.tuples(st.lists(st.sampled_from(_PIECES), max_size=3), st.sampled_from(_WORDS)).map(lambda t: t[0] + [t[1]]),
    st.sampled_from(_LETTERS).map(lambda i: [i]),
)
_hypothesis = st.tuples(st.lists(_word, min_size=1, max_size=12), st.lists(st.sampled_from(_PIECES), max_size=2)).map(
    lambda t: [i for word in t[0] for i in word] + t[1]
)


@given(ids=_hypothesis, data=st.data())
def test_word_timings_agree_with_funasr_on_generated_hypotheses(ids, data):
    """Where FunASR's word list and ours cut the text the same way (CJK, English words, runs of
    letters; no digits, no punctuation), each word has FunASR's begin and end."""
    gaps = data.draw(st.lists(st.integers(0, 50), min_size=2 * len(ids), max_size=2 * len(ids)))
    starts, ends, t = [], [], 0
    for k in range(len(ids)):
        t += gaps[2 * k]
        starts.append(t)
        t += gaps[2 * k + 1]
        ends.append(t)
    assert _ours(REAL, ids, starts, ends) == _funasr_words([REAL_VOCAB[i] for i in ids], starts, ends)


def test_word_timings_where_funasr_gives_a_carried_piece_away():
    """FunASR's timestamp path gives 中 the times of the `hel@@` before it (the piece's begin
    and end are still pending when 中 is appended); here 中 keeps its own, and `hello` starts
    at `lo` like FunASR's (docs: § Token pieces)."""
    tokens = ["hel@@", "中", "lo"]
    starts, ends = [0, 100, 200], [60, 160, 260]
    assert _funasr_words(tokens, starts, ends) == [("中", 0, 60), ("hello", 200, 260)]
    assert _ours(REAL, _ids(REAL, tokens), starts, ends) == [("中", 100, 160), ("hello", 200, 260)]


# -- streaming: bounded state, structure ------------------------------------------------------


def test_streaming_state_stays_small_on_long_streams():
    """The held tail and the kind's own state do not grow with the transcript."""
    ids = REAL.encode("今天 hello world 我们 a b c 去 gpu 公园 123 it's ok 的") * 400
    for tok in (REAL, REAL_CLEAN):
        state: dict = {}
        sizes = []
        for k, token_id in enumerate(ids):
            tok.decode_incremental([token_id], state)
            assert state["_tail"] <= 4
            if k in (100, len(ids) - 1):
                sizes.append(len(repr(state["_funasr"])))
        assert sizes[1] <= sizes[0] + 16
        tok.decode_incremental([], state, final=True)
        assert state["text"] == tok.decode(ids)


def test_streaming_and_pieces_do_not_re_decode(monkeypatch):
    """The fast paths never fall back to decoding the prefix (the quadratic default)."""
    tok = _tok()
    ids = tok.encode("hello world 你好 a b c")
    expected_pieces = tok.token_pieces(ids)
    expected = tok.decode(ids)

    def forbidden(*args, **kwargs):
        raise AssertionError("decode called on the streaming path")

    monkeypatch.setattr(tok, "decode", forbidden)
    assert tok.token_pieces(ids) == expected_pieces
    state: dict = {}
    out = "".join(tok.decode_incremental([i], state) for i in ids) + tok.decode_incremental([], state, final=True)
    assert out == expected


def test_abbreviation_letters_are_held_until_the_run_is_known():
    tok = REAL
    state: dict = {}
    assert tok.decode_incremental(_ids(tok, ["中", "a"]), state) == "中"
    assert state["text"] == "中a"
    assert tok.decode_incremental(_ids(tok, ["b"]), state) == "AB"
    assert tok.decode_incremental(_ids(tok, ["world"]), state) == " world"
    assert tok.decode_incremental(_ids(tok, ["中"]), state) == "中"


def test_forked_state_continues_each_branch_alone():
    prefix = _ids(REAL, ["a", "b", "hel@@"])
    state: dict = {}
    REAL.decode_incremental(prefix, state)
    fork = copy.deepcopy(state)
    left = REAL.decode_incremental(_ids(REAL, ["中"]), state) + REAL.decode_incremental([], state, final=True)
    right = REAL.decode_incremental(_ids(REAL, ["c"]), fork) + REAL.decode_incremental([], fork, final=True)
    assert state["text"] == REAL.decode(prefix + _ids(REAL, ["中"])) == "AB 中"  # the piece kept the space
    assert fork["text"] == REAL.decode(prefix + _ids(REAL, ["c"])) == "AB helc"
    assert state["text"].endswith(left) and fork["text"].endswith(right)


def test_foreign_state_is_refused_and_left_alone():
    state = {"_funasr": "not a stream"}
    with pytest.raises(oasr_tok.StreamStateError):
        REAL.decode_incremental([5], state)
    assert state == {"_funasr": "not a stream"}


# -- files, options, pickling ---------------------------------------------------------------


def test_txt_and_json_give_the_same_tokenizer():
    a, b = _tok(REAL_TXT), _tok(REAL_JSON)
    assert a.vocab_size == b.vocab_size == 8404
    assert vocabulary(a) == vocabulary(b)
    assert a.special_ids == b.special_ids == frozenset({0, 1, 2, 8403})


def test_special_ids_option_and_mode_option():
    tok = _tok(special_ids=[0])
    assert tok.special_ids == frozenset({0})
    assert tok.mode == "parity" and REAL_CLEAN.mode == "clean"
    with pytest.raises(oasr_tok.SpecError, match="mode"):
        _tok(mode="fast")
    with pytest.raises(oasr_tok.SpecError, match="8404"):
        _tok(special_ids=[8404])
    with pytest.raises(oasr_tok.SpecError, match="unknown option"):
        _tok(lowercase=True)


def test_pickles_by_spec():
    tok = _tok(mode="clean")
    again = pickle.loads(pickle.dumps(tok))
    ids = tok.encode("hello 你好 wor")
    assert again.decode(ids) == tok.decode(ids) and again.mode == "clean"


def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return str(path)


def test_missing_file_names_it(tmp_path):
    missing = str(tmp_path / "nope" / "tokens.txt")
    with pytest.raises(oasr_tok.AssetNotFoundError) as info:
        _tok(missing)
    assert info.value.path == missing and missing in str(info.value)


@pytest.mark.parametrize(
    "name,content,line,words",
    [
        ("tokens.txt", "<blank>\n中\n\n文\n", 3, "empty line"),
        ("tokens.txt", "<blank>\n中\n文\n中\n", 4, "listed twice (first on line 2)"),
        ("tokens.txt", "", 1, "empty"),
        ("tokens.txt", "<blank> 0\n<s> 1\n", 1, "symbol table"),
        # A missing comma: every Python's json reports it on the line of the next value
        # (3.13 reports a trailing comma on its own line, older versions on the next one).
        ("tokens.json", '["a",\n "b"\n "c"]', 3, "not valid JSON"),
    ],
)
def test_malformed_text_files_name_file_and_line(tmp_path, name, content, line, words):
    path = _write(tmp_path, name, content)
    with pytest.raises(oasr_tok.MalformedAssetError) as info:
        _tok(path)
    assert info.value.path == path and info.value.line == line
    assert words in str(info.value) and f"{path}:{line}" in str(info.value)


@pytest.mark.parametrize(
    "content,words",
    [('{"a": 0}', "JSON list"), ('["a", 3]', "element 1"), ('["a", "b", "a"]', "ids 0 and 2"), ("[]", "empty")],
)
def test_malformed_json_names_file_and_element(tmp_path, content, words):
    path = _write(tmp_path, "tokens.json", content)
    with pytest.raises(oasr_tok.MalformedAssetError) as info:
        _tok(path)
    assert info.value.path == path and words in str(info.value)


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "tokens.txt"
    path.write_bytes("中\n文\n".encode() + b"\xff\n")
    with pytest.raises(oasr_tok.MalformedAssetError) as info:
        _tok(str(path))
    assert info.value.line == 3


# -- encode (hotwords) --------------------------------------------------------------------------


def test_encode_cjk_characters_one_id_each():
    ids = REAL.encode("今天天气")
    assert [REAL.id_to_token(i) for i in ids] == ["今", "天", "天", "气"]


def test_encode_english_words_through_greedy_pieces():
    tokens = REAL_VOCAB
    ids = REAL.encode("paraformer")
    pieces = [tokens[i] for i in ids]
    assert "".join(p.replace("@@", "") for p in pieces) == "paraformer"
    assert all(p.endswith("@@") for p in pieces[:-1]) and not pieces[-1].endswith("@@")
    # Greedy longest match: each piece is the longest `x@@` (or final token) available there.
    rest = "paraformer"
    for piece in pieces:
        text = piece.replace("@@", "")
        longer = [
            rest[:k]
            for k in range(len(text) + 1, len(rest) + 1)
            if (rest[:k] if k == len(rest) else rest[:k] + "@@") in REAL._index
        ]
        assert not longer, (piece, longer)
        rest = rest[len(text) :]
    assert REAL.decode(ids) == "paraformer"


def test_encode_round_trips_mixed_hotwords():
    assert REAL.decode(REAL.encode("我们 hello world 你好")) == "我们hello world你好"
    assert REAL.decode(REAL.encode("NBA")) == "nba"  # tried as written, then lower-cased
    assert REAL.decode(REAL.encode("don't 123")) == "don't123"


def test_encode_names_the_missing_character():
    with pytest.raises(oasr_tok.EncodeError, match="'😀'"):
        REAL.encode("你好😀")
    with pytest.raises(oasr_tok.EncodeError, match="'ü'"):
        REAL.encode("über")
    with pytest.raises(oasr_tok.EncodeError):
        REAL.encode(None)  # type: ignore[arg-type]
    assert REAL.supports_encode


@pytest.mark.parametrize("bad", [("x",), (0, ("w",), None, "", ""), (9, None, None, "", ""), (3, None, None, 1, "")])
def test_corrupt_state_is_refused_and_left_alone(bad):
    state = {"_funasr": bad, "text": "", "_tail": 0}
    before = copy.deepcopy(state)
    with pytest.raises(oasr_tok.StreamStateError):
        REAL.decode_incremental([5], state)
    assert state == before
