"""The bbpe kind against icefall: its byte alphabet, decode (smart_byte_decode(sp.decode(ids)))
and encode (sp.encode(byte_encode(text))) on the project's byte-level model, with the
expected values fixtures/make_bbpe.py computed with icefall's own byte_utils.py (commit in
fixtures/bbpe/expected.json) loaded by path; SentencePiece itself checks the per-id renderings
live. The three contracts run on the same model in tests/testing/test_every_kind.py (tests/cases/bbpe.py)."""

from __future__ import annotations

import json
from functools import cache

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import oasr_tok
from oasr_tok import MalformedAssetError, TokenizerSpec, build_tokenizer
from oasr_tok.kinds.bbpe import BYTE_TO_CHAR, byte_encode

from paths import own, shared

spm = pytest.importorskip("sentencepiece")


@cache
def expected() -> dict:
    with open(own("bbpe/expected.json"), encoding="utf-8") as f:
        return json.load(f)


def bbpe(**options):
    return build_tokenizer(TokenizerSpec("bbpe", {"model": own("bbpe/bbpe.model")}, options))


@pytest.fixture(scope="module")
def tok():
    return bbpe()


@pytest.fixture(scope="module")
def every_id():
    return bbpe(special_ids=[])


def test_the_alphabet_is_icefalls():
    assert [ord(ch) for ch in BYTE_TO_CHAR] == expected()["alphabet"]


def test_decode_is_icefalls_on_every_case(tok, every_id):
    cases = expected()["decode"]
    assert len(cases) > 300
    for case in cases:
        assert every_id.decode(case["ids"]) == case["icefall"], case["ids"]
        assert tok.decode(case["ids"]) == case["specials_stripped"], case["ids"]


def test_decode_is_icefalls_on_broken_bytes_too():
    # most random id lists end or break inside characters: icefall's recovery, not a plain decode
    broken = [c for c in expected()["decode"] if "\ufffd" in bytes_of(c["ids"]).decode("utf-8", "replace")]
    assert len(broken) > 100


@cache
def processor():
    return spm.SentencePieceProcessor(model_file=own("bbpe/bbpe.model"))


def bytes_of(ids):
    """SentencePiece's decode of `ids` read back as icefall reads it (U+2047 a space)."""
    reverse = {ch: b for b, ch in enumerate(BYTE_TO_CHAR)}
    return bytes(reverse.get(ch, 0x20) for ch in processor().decode(ids))


def test_unk_reads_as_a_space_as_icefall_does(every_id):
    unk = expected()["unk"]
    assert unk["sentencepiece"].startswith(" \u2047 ")
    assert every_id.decode(unk["ids"]) == unk["icefall"] == "    OK"


def test_encode_is_icefalls(tok):
    for text, ids in expected()["encode"]:
        assert tok.encode(text) == ids, text


def test_byte_encode_is_icefalls_spelling():
    assert byte_encode("a  b\t\nc") == "a b c"
    assert byte_encode("é") == BYTE_TO_CHAR[0xC3] + BYTE_TO_CHAR[0xA9]


@given(st.lists(st.integers(0, 499), max_size=40))
@example([3, 0, 1, 2, 499])
def test_decode_is_sentencepieces_rendering_read_back_as_bytes(every_id, ids):
    """The rule the kind states, with SentencePiece itself rendering the ids: each character its
    byte (U+2047 a space), decoded dropping what is not UTF-8."""
    assert every_id.decode(ids) == bytes_of(ids).decode("utf-8", "ignore")


def test_a_character_split_across_tokens_is_held_then_printed(tok):
    ids = tok.encode("今天 🎉 龍の夢 世界")  # 龍, 夢, 世 and 界 were not in the training text: a token per byte
    # some token ends inside a character
    assert any(bytes_of(ids[:k]).decode("utf-8", "replace").endswith("\ufffd") for k in range(1, len(ids)))
    state: dict = {}
    out = [tok.decode_incremental([i], state) for i in ids] + [tok.decode_incremental([], state, final=True)]
    assert "".join(out) == tok.decode(ids) == "今天 🎉 龍の夢 世界"
    assert all("\ufffd" not in delta for delta in out)


def test_bytes_that_never_complete_print_nothing(tok):
    lead = tok.piece_to_id(BYTE_TO_CHAR[0xE4])  # the first byte of 今 alone
    ok = tok.encode("OK")
    state: dict = {}
    out = [tok.decode_incremental([i], state) for i in [lead, *ok]] + [tok.decode_incremental([], state, final=True)]
    # SentencePiece keeps OK's leading space after a piece that printed (a byte nobody reads)
    assert "".join(out) == tok.decode([lead, *ok]) == " OK" == bytes_of([lead, *ok]).decode("utf-8", "ignore")


def test_with_specials_spells_them(tok):
    shown = tok.with_specials()
    assert shown.special_ids == frozenset()
    assert shown.decode([0, *tok.encode("OK"), 1]) == "<blk> OK<sos/eos>"  # as sp.decode renders them
    assert shown.decode([2]) == "<unk>"


def test_special_tokens_are_icefalls(tok):
    specials = tok.special_tokens
    assert specials.unk_id == 2 and specials.bos_id is None or specials.bos_id == 1


def test_load_resolves_a_byte_level_model_as_bbpe(tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "bbpe.model").write_bytes(open(own("bbpe/bbpe.model"), "rb").read())
    assert oasr_tok.resolve(str(folder)).kind == "bbpe"
    assert oasr_tok.resolve(str(folder / "bbpe.model")).kind == "bbpe"
    # by its pieces, whatever its name
    (folder / "bbpe.model").rename(folder / "unigram_500.model")
    assert oasr_tok.resolve(str(folder)).kind == "bbpe"
    report = str(oasr_tok.describe(str(folder)))
    assert "icefall's byte alphabet" in report and "sentencepiece" in report


@pytest.mark.parametrize(
    "model",
    ["sentencepiece/icefall-librispeech-bpe500.model", "sentencepiece/sherpa-zh-en-mix.model"],
)
def test_an_ordinary_sentencepiece_model_is_not_bbpe(model, tmp_path):
    path = shared(model)
    assert oasr_tok.resolve(path).kind == "sentencepiece"


def test_a_byte_fallback_model_is_refused_by_name():
    with pytest.raises(MalformedAssetError, match="byte-fallback") as info:
        build_tokenizer(TokenizerSpec("bbpe", {"model": own("sentencepiece/bpe-bytefallback.model")}))
    assert info.value.path.endswith("bpe-bytefallback.model")


def test_unknown_option_and_file_role_are_spec_errors():
    with pytest.raises(oasr_tok.SpecError, match="special"):
        bbpe(nonsense=1)
    with pytest.raises(oasr_tok.SpecError, match="model"):
        build_tokenizer(TokenizerSpec("bbpe", {"tokens": own("bbpe/bbpe.model")}))
