"""Word timings: each rule of docs/decoding.md § Word timings pinned by an example, the time
types the caller passes, the errors, and the Word record.

Expected words are written from the rules (what a reader of the transcript calls a word), not
copied from the implementation's output."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasr_tok import TimingError, TokenizerSpec, Word, build_tokenizer
from oasr_tok.core.words import group_words

from paths import own, shared


def texts(words):
    return [w.text for w in words]


def spans(words):
    return [(w.text, w.first_token, w.last_token) for w in words]


def by_chars(text: str):
    """One token per character, token k starting at time k."""
    pieces = list(text)
    return group_words(pieces, list(range(len(pieces))))


# -- the rules, one example each ----------------------------------------------------------------


def test_english_contractions_stay_whole():
    pieces = ["I", "'", "ll", " tell", " you", ",", " don", "'", "t", " stop", "."]
    words = group_words(pieces, [10 * k for k in range(len(pieces))])
    assert spans(words) == [("I'll", 0, 2), ("tell", 3, 3), ("you,", 4, 5), ("don't", 6, 8), ("stop.", 9, 10)]
    # A word starts when its first token starts and (no ends given) ends when the token after
    # its last one starts; the last word ends at its last token's own start.
    assert [(w.start, w.end) for w in words] == [(0, 30), (30, 40), (40, 60), (60, 90), (90, 100)]


def test_french_elisions_stay_whole():
    pieces = ["d", "'", "avoir", " aujourd", "'", "hui", " l", "’", "école"]
    words = group_words(pieces, list(range(len(pieces))))
    assert spans(words) == [("d'avoir", 0, 2), ("aujourd'hui", 3, 5), ("l’école", 6, 8)]


def test_spelled_letters_stay_one_word():
    pieces = [" my", " name", " is", " L", "-", "Y", "-", "V"]
    words = group_words(pieces, list(range(len(pieces))))
    assert spans(words)[-1] == ("L-Y-V", 3, 7)
    assert texts(words) == ["my", "name", "is", "L-Y-V"]


def test_mixed_chinese_english():
    pieces = ["我们", "用", " Py", "thon", " 写", "代码"]
    words = group_words(pieces, [0.0, 0.5, 1.0, 1.25, 1.5, 2.0])
    assert texts(words) == ["我", "们", "用", "Python", "写", "代", "码"]
    # 我们 came in one token: that token gives its time to both characters.
    assert [(w.start, w.end, w.first_token, w.last_token) for w in words[:2]] == [(0.0, 0.5, 0, 0), (0.0, 0.5, 0, 0)]
    assert (words[3].start, words[3].end) == (1.0, 1.5)
    assert [(w.first_token, w.last_token) for w in words[5:]] == [(5, 5), (5, 5)]


def test_latin_inside_cjk_without_spaces():
    assert texts(by_chars("我用iPhone拍照")) == ["我", "用", "iPhone", "拍", "照"]
    assert texts(by_chars("2024年")) == ["2024", "年"]


def test_japanese_each_character_is_a_word():
    assert texts(by_chars("東京は晴れです。")) == ["東", "京", "は", "晴", "れ", "で", "す。"]
    # The prolonged sound mark and a voiced sound mark belong to the kana before them.
    assert texts(by_chars("コーヒー")) == ["コー", "ヒー"]
    assert texts(by_chars("か\u3099")) == ["か\u3099"]


def test_thai_each_character_with_its_marks():
    # สวัสดีครับ: vowel signs above (ั, ี) are combining marks of the consonant before them.
    assert texts(by_chars("สวัสดีครับ")) == ["ส", "วั", "ส", "ดี", "ค", "รั", "บ"]
    assert texts(by_chars("ทำ")) == ["ทำ"]  # SARA AM is a spacing mark


def test_lao_myanmar_khmer_are_written_without_spaces():
    assert texts(by_chars("ກິນ")) == ["ກິ", "ນ"]  # ິ is a combining vowel sign
    # A Myanmar virama / Khmer coeng stacks the next consonant on the same character.
    assert texts(by_chars("မ\u1039ဘ")) == ["မ\u1039ဘ"]
    assert texts(by_chars("ក\u17d2មែរ")) == ["ក\u17d2ម\u17c2", "រ"]


def test_punctuation_joins_the_word_before():
    assert texts(by_chars("Hello, world! 你好，世界。")) == ["Hello,", "world!", "你", "好，", "世", "界。"]
    # Standing alone (French spacing), it still joins the word before, spaces and all.
    assert texts(by_chars("Bonjour ! Ça va ?")) == ["Bonjour !", "Ça", "va ?"]
    # With no word before it, it joins the word after; with no word at all, it stands alone.
    assert texts(by_chars("... well")) == ["... well"]
    assert texts(by_chars("?! ...")) == ["?!", "..."]


def test_brackets_and_quotes_join_the_word_after():
    assert texts(by_chars("He said (quietly) “yes”.")) == ["He", "said", "(quietly)", "“yes”."]
    assert texts(by_chars("« Salut » dit-il")) == ["« Salut »", "dit-il"]
    assert texts(by_chars("他说：“你好”")) == ["他", "说：", "“你", "好”"]
    assert texts(by_chars("用「Python」写")) == ["用", "「Python」", "写"]
    assert texts(by_chars("a (")) == ["a ("]  # nothing after it: it stays with the word before


def test_empty_and_whitespace_only():
    assert group_words([], []) == []
    assert group_words(["", " ", "\n"], [0, 1, 2]) == []


def test_tokens_that_render_nothing_belong_to_no_word():
    pieces = ["", "hel", "", "lo", "", " world", ""]
    words = group_words(pieces, [0, 1, 2, 3, 4, 5, 6])
    assert spans(words) == [("hello", 1, 3), ("world", 5, 5)]
    # Without ends a token ends where the next starts, empty or not; but an empty token gives no
    # time of its own: "hello" does not start at token 0, "world" does not end at token 6's end.
    assert [(w.start, w.end) for w in words] == [(1, 4), (5, 6)]
    words = group_words(pieces, [0, 1, 2, 3, 4, 5, 6], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5])
    assert [(w.start, w.end) for w in words] == [(1, 3.5), (5, 5.5)]


# A token whose piece is whitespace only (a bare ▁, " ", "\n") between two words printed no
# character of either: its time is the gap between them, so words never overlap.


def test_whitespace_only_token_time_is_the_gap_between_words():
    pieces = ["", "hel", "", "lo", " ", "", "world", ""]
    starts, ends = [0, 1, 2, 3, 4, 5, 6, 7], [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
    words = group_words(pieces, starts, ends)
    # first/last token are the tokens that overlap the word: the " " (token 4) overlaps neither.
    assert spans(words) == [("hello", 1, 3), ("world", 6, 6)]
    # hello ends with "lo" (token 3, 3.5); world starts with its own token (6): 3.5 ... 6 is the gap.
    assert [(w.start, w.end) for w in words] == [(1, 3.5), (6, 6.5)]
    # Without ends "lo" ends where the next token (the " ") starts.
    assert [(w.start, w.end) for w in group_words(pieces, starts)] == [(1, 4), (6, 7)]


def test_several_whitespace_only_tokens_in_a_row_all_lie_in_the_gap():
    pieces = ["a", " ", "", "\n", " ", "b"]
    words = group_words(pieces, [0, 10, 20, 30, 40, 50], [5, 15, 25, 35, 45, 55])
    assert [(w.text, w.start, w.end, w.first_token, w.last_token) for w in words] == [
        ("a", 0, 5, 0, 0),
        ("b", 50, 55, 5, 5),
    ]


def test_whitespace_only_tokens_before_the_first_and_after_the_last_word_give_no_time():
    pieces = ["", " ", "\t", "go", " ", " now", " ", ""]
    words = group_words(pieces, [0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7])
    assert [(w.text, w.start, w.end, w.first_token, w.last_token) for w in words] == [
        ("go", 3, 3, 3, 3),
        ("now", 5, 5, 5, 5),
    ]


def test_whitespace_only_token_inside_a_word_is_just_part_of_it():
    # French spacing: "Bonjour !" is one word, so the " " overlaps it and is one of its tokens.
    words = group_words(["Bonjour", " ", "!", " ", "Ça"], [0, 1, 2, 3, 4])
    assert [(w.text, w.start, w.end, w.first_token, w.last_token) for w in words] == [
        ("Bonjour !", 0, 3, 0, 2),
        ("Ça", 4, 4, 4, 4),
    ]


def test_ends_given():
    pieces = [" the", " cat", "s"]
    words = group_words(pieces, [0.0, 0.4, 0.7], [0.3, 0.6, 0.9])
    assert [(w.text, w.start, w.end) for w in words] == [("the", 0.0, 0.3), ("cats", 0.4, 0.9)]


# -- real kinds ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    symbols = ["<blk>", "<sos/eos>", "<unk>", "\u2581the", "\u2581", "cat", "x\u2581y", "\u2581a", "b"]
    symbols += [f"<0x{b:02X}>" for b in range(256)]
    symbols += ["文"]
    path = tmp_path_factory.mktemp("words") / "tokens.txt"
    path.write_text("".join(f"{s} {i}\n" for i, s in enumerate(symbols)), encoding="utf-8")
    return build_tokenizer(TokenizerSpec("symbol_table", {"units": str(path)}))


def test_symbol_spanning_two_words_gives_its_time_to_both(table):
    ids = [7, 6, 8]  # ▁a x▁y b  ->  "ax yb"
    assert table.decode(ids) == "ax yb"
    words = table.word_timings(ids, [0, 10, 20])
    assert spans(words) == [("ax", 0, 1), ("yb", 1, 2)]
    assert [(w.start, w.end) for w in words] == [(0, 20), (10, 20)]


def test_bare_word_boundary_token(table):
    ids = [3, 4, 5]  # ▁the ▁ cat  ->  "the cat"
    assert table.decode(ids) == "the cat"
    words = table.word_timings(ids, [0, 5, 8], [4, 7, 12])
    # The bare ▁ renders the space between the words: it printed neither, so its span (5 ... 7)
    # is the gap between them.
    assert [(w.text, w.start, w.end, w.first_token, w.last_token) for w in words] == [
        ("the", 0, 4, 0, 0),
        ("cat", 8, 12, 2, 2),
    ]


@pytest.fixture(scope="module")
def icefall():
    return build_tokenizer(
        TokenizerSpec("symbol_table", {"units": shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")})
    )


@pytest.fixture(scope="module")
def icefall_sp():
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_file=shared("sentencepiece/icefall-librispeech-bpe500.model"))


def test_icefall_word_that_begins_with_a_bare_piece(icefall, icefall_sp):
    # SentencePiece writes ZEUS as ▁ Z E US: the standalone ▁ is where the word begins.
    ids = icefall_sp.encode("HE KNEW ZEUS")
    pieces = [icefall_sp.id_to_piece(i) for i in ids]
    bare = pieces.index("\u2581")
    assert pieces[bare + 1 :] == ["Z", "E", "US"] and pieces[bare - 1] == "\u2581KNEW"
    assert icefall.decode(ids) == icefall_sp.decode(ids)
    frames = [4 * k for k in range(len(ids))]
    words = icefall.word_timings(ids, frames)
    assert [(w.text, w.first_token, w.last_token) for w in words] == [
        ("HE", 0, 0),
        ("KNEW", 1, 1),
        ("ZEUS", bare + 1, len(ids) - 1),
    ]
    # KNEW ends where the ▁ starts (no ends given); ZEUS starts with Z: the ▁ is the gap.
    assert (words[1].start, words[1].end) == (frames[bare - 1], frames[bare])
    assert (words[2].start, words[2].end) == (frames[bare + 1], frames[-1])


def test_icefall_bare_piece_at_the_very_start_renders_nothing(icefall, icefall_sp):
    # decode drops the transcript's leading whitespace, so a leading ▁ renders "" (token_pieces
    # joins to decode) and, like any token that renders nothing, gives no time.
    ids = icefall_sp.encode("ZEUS")
    assert icefall_sp.id_to_piece(ids[0]) == "\u2581" and icefall.decode(ids) == icefall_sp.decode(ids) == "ZEUS"
    assert icefall.token_pieces(ids)[0] == ""
    words = icefall.word_timings(ids, [10 * k for k in range(len(ids))])
    assert [(w.text, w.start, w.first_token) for w in words] == [("ZEUS", 10, 1)]


def test_a_split_character_renders_on_the_completing_token_and_is_timed_from_the_first(table):
    """Issue 36: every token that carries a byte of a word's characters belongs to that word,
    as openai-whisper groups tokens into words (tests/peers/test_whisper_word_tokens.py)."""
    byte = lambda b: 9 + b
    ids = [byte(0xE4), byte(0xB8), byte(0xAD), 265, 0]  # 中 in three byte tokens, 文, <blk>
    pieces = table.token_pieces(ids)
    assert pieces == ["", "", "中", "文", ""]  # the contract: the completing token renders it
    words = table.word_timings(ids, [0, 1, 2, 3, 4])
    assert [(w.text, w.start, w.end, w.first_token, w.last_token) for w in words] == [
        ("中", 0, 3, 0, 2),
        ("文", 3, 4, 3, 3),
    ]


def test_whisper_timestamps_are_ignored_as_text_and_give_times():
    tok = build_tokenizer(TokenizerSpec("whisper", {"tokenizer": own("whisper/en/tokenizer.json")}))
    text_ids = tok.encode(" hello world.")
    ids = [tok.timestamp_id(0.0), *text_ids, tok.timestamp_id(1.0), tok.eot]
    assert tok.decode(ids) == " hello world."
    times = tok.token_times(ids)
    words = tok.word_timings(ids, times)
    assert texts(words) == ["hello", "world."]
    pieces = tok.token_pieces(ids)
    assert pieces[0] == pieces[-2] == pieces[-1] == ""  # timestamps and eot render nothing
    assert words[0].first_token == min(k for k, p in enumerate(pieces) if p.strip())
    assert words[-1].last_token == len(ids) - 3
    assert 0.0 <= words[0].start <= words[0].end <= words[1].start <= words[1].end <= 1.0


# -- times as the caller gives them -------------------------------------------------------------


def test_int_times_stay_ints_and_float_times_stay_floats():
    words = group_words([" a", " b"], (3, 7))
    assert [(w.start, w.end) for w in words] == [(3, 7), (7, 7)]
    assert all(type(w.start) is int and type(w.end) is int for w in words)
    words = group_words([" a", " b"], [0.25, 0.5], [0.5, 0.75])
    assert all(type(w.start) is float and type(w.end) is float for w in words)


def test_numpy_arrays():
    import numpy as np

    words = group_words([" a", " b"], np.array([100, 250], dtype=np.int64))
    assert [(w.start, w.end) for w in words] == [(100, 250), (250, 250)]
    assert all(type(w.start) is int for w in words)
    words = group_words([" a", " b"], np.array([0.5, 1.5]), np.array([1.0, 2.0]))
    assert [(w.start, w.end) for w in words] == [(0.5, 1.0), (1.5, 2.0)]
    assert all(type(w.start) is float for w in words)


# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "starts, ends, where",
    [
        ([0, 1], None, "starts has 2 times for 3 tokens"),
        ([0, 1, 2, 3], None, "starts has 4 times for 3 tokens"),
        ([0, 1, 2], [1, 2], "ends has 2 times for 3 tokens"),
        ([0, 2, 1], None, "starts[2]"),
        ([0, math.nan, 1], None, "starts[1]"),
        ([0, 1, math.inf], None, "starts[2]"),
        ([0, 1, 2], [1, math.nan, 3], "ends[1]"),
        ([0, 1, 2], [1, 0.5, 3], "ends[1]"),
        ([0, 1, 2], [3, 2, 4], "ends[1]"),
        ([0, "1", 2], None, "starts[1]"),
        ([0, None, 2], None, "starts[1]"),
        ([0, True, 2], None, "starts[1]"),
        ([0, 1, 10**400], None, "starts[2]"),
    ],
)
def test_bad_times_raise_timing_error_naming_the_position(starts, ends, where):
    with pytest.raises(TimingError, match=where.replace("[", r"\[").replace("]", r"\]")):
        group_words([" a", " b", " c"], starts, ends)


def test_timing_error_is_a_value_error():
    with pytest.raises(ValueError):
        group_words([" a"], [])


def test_times_must_be_a_sequence():
    with pytest.raises(TimingError):
        group_words([" a"], 5)
    with pytest.raises(TimingError):
        group_words(["a"], "0")


def test_pieces_must_be_strings():
    with pytest.raises(TypeError, match=r"pieces\[1\]"):
        group_words(["a", b"b"], [0, 1])


def test_word_timings_checks_ids(table):
    with pytest.raises(ValueError):
        table.word_timings([99999], [0])


# -- the record ---------------------------------------------------------------------------------


def test_word_is_an_immutable_value():
    word = Word("hi", 0.5, 1.0, 2, 3)
    assert (word.text, word.start, word.end, word.first_token, word.last_token) == ("hi", 0.5, 1.0, 2, 3)
    assert word == Word("hi", 0.5, 1.0, 2, 3) and word != Word("hi", 0.5, 1.0, 2, 4)
    assert hash(word) == hash(Word("hi", 0.5, 1.0, 2, 3))
    with pytest.raises(AttributeError):
        word.text = "ho"
    assert pickle.loads(pickle.dumps(word)) == word
    assert "hi" in repr(word)
    assert word.to_dict() == {"text": "hi", "start": 0.5, "end": 1.0, "first_token": 2, "last_token": 3}


# -- the no-overlap rule against transformers' Wav2Vec2CTCTokenizer ----------------------------

W2V_LETTERS = "ABCDE"  # letters only: punctuation groups by our rules (a lone ' joins the word before)


@pytest.fixture(scope="module")
def wav2vec2_ctc(tmp_path_factory):
    import json

    from transformers import Wav2Vec2CTCTokenizer

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4}
    vocab.update({ch: 5 + k for k, ch in enumerate(W2V_LETTERS)})
    path = tmp_path_factory.mktemp("w2v") / "vocab.json"
    path.write_text(json.dumps(vocab), encoding="utf-8")
    return Wav2Vec2CTCTokenizer(str(path)), {i: ch for ch, i in vocab.items()}


@given(frames=st.lists(st.integers(0, 4 + len(W2V_LETTERS)).filter(lambda i: i not in (1, 2, 3)), max_size=60))
def test_word_spans_match_transformers_wav2vec2_word_offsets(wav2vec2_ctc, frames):
    """CTC frames -> tokens (runs of one id, blanks dropped), each spanning its frames; the
    word delimiter `|` prints a space. transformers times a word by its characters' frames and
    gives the delimiter's frames to no word: exactly our rule with ends."""
    hf, by_id = wav2vec2_ctc
    out = hf.decode(frames, output_word_offsets=True)
    expected = [(o["word"], int(o["start_offset"]), int(o["end_offset"])) for o in out.word_offsets]
    pieces, starts, ends = [], [], []
    k = 0
    while k < len(frames):
        j = k
        while j < len(frames) and frames[j] == frames[k]:
            j += 1
        if frames[k] != 0:  # <pad> is the CTC blank
            pieces.append(" " if by_id[frames[k]] == "|" else by_id[frames[k]])
            starts.append(k)
            ends.append(j)
        k = j
    words = group_words(pieces, starts, ends)
    assert [(w.text, w.start, w.end) for w in words] == expected
