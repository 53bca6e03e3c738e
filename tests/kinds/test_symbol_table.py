"""symbol_table: reading every table layout, its errors, and decode rules stated by the design."""

from __future__ import annotations

import copy

import pytest

import oasr_tok
from oasr_tok import Detokenizer, MalformedAssetError, TokenizerSpec, build_tokenizer

from paths import shared


def _table(tmp_path, text: str, name="tokens.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def _tok(path, **options):
    return build_tokenizer(TokenizerSpec("symbol_table", {"units": path}, options))


@pytest.mark.parametrize(
    "name,size,last",
    [
        ("icefall-librispeech-bpe500.tokens.txt", 502, "#1"),
        ("sherpa-zh-char.tokens.txt", 5539, "#1"),
        ("sherpa-zh-en-mix.tokens.txt", 6257, "#2"),
        ("wenet-aishell2.units.txt", 5235, "<sos/eos>"),
        ("wenet-librispeech-unigram5000.units.txt", 5002, "<sos/eos>"),
        ("wenet-paraformer.units.txt", 8404, "<unk>"),
    ],
)
def test_reads_every_real_layout(name, size, last):
    tok = _tok(shared(f"symbol_table/{name}"))
    assert tok.vocab_size == size
    assert tok.id_to_piece(size - 1) == last
    assert tok.special_ids == frozenset({0, 1, 2})
    assert tok.supports_encode is False


def test_word_boundaries_become_spaces_and_leading_whitespace_is_dropped(tmp_path):
    tok = _tok(_table(tmp_path, "<blk> 0\n<sos/eos> 1\n<unk> 2\n\u2581HE 3\nLLO 4\n\u2581WORLD 5\n\u2581 6\n"))
    assert tok.decode([3, 4, 5]) == "HELLO WORLD"
    assert tok.decode([6, 6, 3, 0, 4]) == "HELLO"
    assert tok.decode([3, 6]) == "HE "  # trailing space is kept: a later word may follow
    assert tok.token_pieces([6, 3, 4, 1, 5]) == ["", "HE", "LLO", "", " WORLD"]


def test_id_only_line_is_a_space(tmp_path):
    tok = _tok(_table(tmp_path, "<blk> 0\n<sos/eos> 1\n<unk> 2\na 3\n4\nb 5\n"))
    assert tok.id_to_piece(4) == " "
    assert tok.decode([3, 4, 5]) == "a b"


def test_byte_pieces_are_reassembled_into_utf8(tmp_path):
    lines = ["<blk> 0", "<sos/eos> 1", "<unk> 2"] + [f"<0x{b:02X}> {3 + b}" for b in range(256)] + ["\u2581x 259"]
    tok = _tok(_table(tmp_path, "\n".join(lines) + "\n"))
    byte = lambda b: 3 + b
    zhong = [byte(b) for b in "中".encode()]
    assert tok.decode(zhong) == "中"
    assert tok.token_pieces(zhong) == ["", "", "中"]
    # A blank between the bytes of one character does not break it: specials are stripped first.
    assert tok.decode([zhong[0], 0, zhong[1], zhong[2]]) == "中"
    # Incomplete at the end: one U+FFFD (Python's and Rust's maximal-subpart rule), on the last byte's piece.
    assert tok.decode(zhong[:2]) == "\ufffd"
    assert tok.token_pieces(zhong[:2] + [0]) == ["", "\ufffd", ""]
    # Interrupted by a text piece: the run is rendered before it.
    assert tok.decode(zhong[:2] + [259]) == "\ufffd x"
    # An invalid byte is final at once; a genuine U+FFFD is just a character.
    state: dict = {}
    assert tok.decode_incremental([byte(0xFF)], state) == "\ufffd"
    fffd = [byte(b) for b in "\ufffd".encode()]
    assert tok.decode_incremental(fffd, state) == "\ufffd"
    assert state["text"] == "\ufffd\ufffd"


def test_streaming_holds_only_an_incomplete_character(tmp_path):
    lines = ["<blk> 0", "<sos/eos> 1", "<unk> 2"] + [f"<0x{b:02X}> {3 + b}" for b in range(256)] + ["\u2581ok 259"]
    tok = _tok(_table(tmp_path, "\n".join(lines) + "\n"))
    emoji = [3 + b for b in "😀".encode()]
    state: dict = {}
    assert tok.decode_incremental([259], state) == "ok"
    for k in range(3):
        assert tok.decode_incremental([emoji[k]], state) == ""
        assert state["text"] == "ok\ufffd"  # state["text"] is always the full decode so far
    assert tok.decode_incremental([emoji[3]], state) == "😀"
    assert state["text"] == "ok😀"


@pytest.mark.parametrize(
    "content,line,message",
    [
        ("<blk> 0\n<unk> 2\n", 2, "id 1 is missing"),
        ("<blk> 0\n<unk> 1\nx 1\n", 3, "id 1 is given twice"),
        ("<blk> 0\n<unk> one\n", 2, "non-negative integer"),
        ("<blk> 0\n<unk> -1\n", 2, "non-negative integer"),
        ("<blk> 0\nnoid\n", 2, "non-negative integer"),
        ("", None, "empty"),
        (b"<blk> 0\n\xff\xfe 1\n", 2, "UTF-8"),
    ],
)
def test_malformed_tables_name_file_and_line(tmp_path, content, line, message):
    path = _table(tmp_path, content)
    with pytest.raises(MalformedAssetError, match=message) as info:
        _tok(path)
    assert info.value.path == path
    assert info.value.line == line
    assert path in str(info.value)
    if line is not None:
        assert f"{path}:{line}:" in str(info.value)


def test_missing_table_is_a_file_not_found_naming_it(tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(oasr_tok.AssetNotFoundError, match="nope.txt") as info:
        _tok(missing)
    assert isinstance(info.value, FileNotFoundError)


def test_special_ids_option_changes_what_decode_strips():
    path = shared("symbol_table/wenet-librispeech-unigram5000.units.txt")
    default = _tok(path)
    wenet = _tok(path, special_ids=[0, 1, 5001])
    assert default.decode([5001]) == "<sos/eos>"
    assert wenet.decode([5001]) == "" and wenet.special_ids == frozenset({0, 1, 5001})
    assert wenet.token_pieces([0, 5001]) == ["", ""]


def test_detokenizer_is_the_symbol_table_tokenizer_underneath():
    path = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")
    detok = Detokenizer(unit_table=path)
    tok = _tok(path)
    batch = [[3, 4, 5], [0, 100, 1, 101, 2], [], [499, 500, 501]]
    assert detok.decode_batch(batch) == [tok.decode(ids) for ids in batch]
    assert [detok(ids) for ids in batch] == tok.decode_batch(batch)
    assert Detokenizer(tokenizer=tok).tokenizer is tok
    with pytest.raises(oasr_tok.SpecError):
        Detokenizer()
    with pytest.raises(oasr_tok.SpecError):
        Detokenizer(unit_table=path, tokenizer=tok)


def test_state_text_is_shared_safely_with_callers():
    """The text buffer resizes in place only when the state holds the only reference: a
    partial the caller kept must never change under it."""
    tok = _tok(shared("symbol_table/sherpa-zh-en-mix.tokens.txt"))
    ids = list(range(3, 400))
    state: dict = {}
    kept = []
    for i in ids:
        tok.decode_incremental([i], state)
        kept.append(state["text"])
    for k, partial in enumerate(kept):
        assert partial == tok.decode(ids[: k + 1])
    fork = copy.deepcopy(state)
    tok.decode_incremental([5, 6], fork)
    assert state["text"] == tok.decode(ids)
