"""Hotwords for tokens.txt models: a symbol table with its modeling_unit encodes as sherpa-onnx's
text2token does, and oasr_tok.toolkits.hotwords.encode_lines writes its hotwords / keywords lines, line
for line equal to the ones fixtures/make_hotwords_expected.py got from sherpa-onnx 2.0.1's own
text2token (its sherpa_onnx/utils.py, loaded by path) on the real tables of ../shared/fixtures."""

from __future__ import annotations

import json

import pytest

import oasr_tok
from oasr_tok import EncodeError, EncodeNotSupportedError, SpecError, TokenizerSpec, build_tokenizer
from oasr_tok.toolkits.hotwords import encode_lines

from paths import OWN, own, shared

EXPECTED = json.loads((OWN / "hotwords" / "expected.json").read_text(encoding="utf-8"))


def _tok(case: dict) -> oasr_tok.Tokenizer:
    tokens = own(case["tokens"][4:]) if case["tokens"].startswith("own:") else shared(case["tokens"])
    files = {"units": tokens}
    if "bpe_model" in case:
        files["bpe_model"] = shared(case["bpe_model"])
    return build_tokenizer(TokenizerSpec("symbol_table", files, {"modeling_unit": case["tokens_type"]}))


@pytest.mark.parametrize("case", EXPECTED, ids=[c["name"] for c in EXPECTED])
def test_hotword_lines_equal_sherpa_onnx_text2token(case):
    tok = _tok(case)
    assert tok.supports_encode
    for number, (line, expected) in enumerate(zip(case["lines"], case["expected"]), start=1):
        if expected is None:
            # text2token skipped it (a unit the table lacks): here it is reported, naming the line.
            with pytest.raises(EncodeError, match="line 1 .*not a unit"):
                encode_lines(tok, [line])
        else:
            assert encode_lines(tok, [line]) == [expected], number


def test_a_file_of_lines_is_reported_line_by_line_never_shifted():
    case = next(c for c in EXPECTED if c["name"] == "cjkchar+bpe")
    tok = _tok(case)
    good = [line for line, e in zip(case["lines"], case["expected"]) if e is not None]
    assert encode_lines(tok, good) == [e for e in case["expected"] if e is not None]
    with pytest.raises(EncodeError) as info:
        encode_lines(tok, case["lines"])
    assert "line 1 " in str(info.value) and "line 2 " not in str(info.value)


def test_ids_are_the_tables_own_and_decode_back():
    case = next(c for c in EXPECTED if c["name"] == "cjkchar")
    tok = _tok(case)
    ids = tok.encode("今天 天气")
    assert [tok.id_to_piece(i) for i in ids] == ["今", "天", "天", "气"]
    assert tok.decode(ids) == "今天天气"


def test_modeling_unit_options_are_checked():
    units = shared("symbol_table/sherpa-zh-char.tokens.txt")
    with pytest.raises(SpecError, match="modeling_unit"):
        build_tokenizer(TokenizerSpec("symbol_table", {"units": units}, {"modeling_unit": "words"}))
    with pytest.raises(SpecError, match="bpe_model"):
        build_tokenizer(TokenizerSpec("symbol_table", {"units": units}, {"modeling_unit": "bpe"}))
    plain = build_tokenizer(TokenizerSpec("symbol_table", {"units": units}))
    assert not plain.supports_encode
    with pytest.raises(EncodeNotSupportedError):
        plain.encode("你好")
    with pytest.raises(EncodeError, match="modeling_unit"):
        encode_lines(plain, ["你好"])
