"""llama.cpp's tokenizer test suite, replayed: tests/test-tokenizer-0.cpp at llama-cpp-python
0.3.36's vendored llama.cpp (its models/ggml-vocab-*.gguf and their .inp/.out goldens), every
golden of every vocabulary that has them; and the pre-tokenizer table of src/llama-vocab.cpp,
read from the source itself.

test-tokenizer-0 tokenizes each text with add_special=false, parse_special=false (common_tokenize)
and compares with the ids llama.cpp's converter wrote; oasr_tok's `encode(text)` is that call.
The files are unpacked by fixtures/fetch_llama_cpp.py (tests/peers/peer_files.py)."""

from __future__ import annotations

import pytest

import oasr_tok
from oasr_tok.kinds.gguf.encode import _NOT_REPRODUCED, _PRE, _REGEXES

import llama_cpp_source
from peer_files import llama_cpp, llama_vocabularies

SEPARATOR = "\n__ggml_vocab_test__\n"


def goldens(name: str) -> list[tuple[str, list[int]]]:
    """test-tokenizer-0's reading of the .inp / .out pair: texts cut at the separator, one
    stripped line of space-separated ids per text."""
    base = llama_cpp() / "models" / f"ggml-vocab-{name}.gguf"
    texts = (base.parent / (base.name + ".inp")).read_bytes().decode("utf-8").split(SEPARATOR)
    lines = (base.parent / (base.name + ".out")).read_text(encoding="utf-8").split("\n")
    assert len(lines) >= len(texts)
    return [(text, [int(x) for x in line.strip().split()]) for text, line in zip(texts, lines)]


_LOADED: dict[str, oasr_tok.Tokenizer] = {}


def tok(name: str) -> oasr_tok.Tokenizer:
    if name not in _LOADED:
        _LOADED[name] = oasr_tok.load(str(llama_cpp() / "models" / f"ggml-vocab-{name}.gguf"))
    return _LOADED[name]


@pytest.mark.parametrize("name", llama_vocabularies())
def test_every_golden_encodes_as_llama_cpp(name: str) -> None:
    pytest.importorskip("tokenizers")
    cases = goldens(name)
    assert len(cases) >= 46
    tokenizer = tok(name)
    assert tokenizer.supports_encode
    wrong = [(text, tokenizer.encode(text), ids) for text, ids in cases if tokenizer.encode(text) != ids]
    assert not wrong, f"{len(wrong)} of {len(cases)} goldens differ, first: {wrong[0]!r}"


@pytest.mark.parametrize("name", llama_vocabularies())
def test_the_goldens_stream_as_they_decode(name: str) -> None:
    """The streaming contract on llama.cpp's own vocabularies: each golden's ids, one at a
    time, give decode's text (decode itself is checked against llama_detokenize in
    tests/kinds/test_gguf.py)."""
    tokenizer = tok(name)
    for _, ids in goldens(name):
        state: dict = {}
        streamed = "".join(tokenizer.decode_incremental([i], state) for i in ids)
        streamed += tokenizer.decode_incremental([], state, final=True)
        assert streamed == tokenizer.decode(ids)


def test_the_pre_tokenizer_table_is_llama_cpps_source() -> None:
    source = llama_cpp_source.read(llama_cpp())
    regexes = llama_cpp_source.regex_exprs(source)
    regexes["LLAMA_VOCAB_PRE_TYPE_DEFAULT"] = regexes["DEFAULT"]
    names = llama_cpp_source.pre_names(source)
    ignore = llama_cpp_source.ignore_merges(source)
    for name, (pre, ignore_merges) in _PRE.items():
        assert name in names, f"{name!r} is not a pre-tokenizer llama.cpp knows"
        assert _REGEXES[pre] == regexes[names[name]], name
        assert ignore_merges == (name in ignore), name
    # every name llama.cpp knows is reproduced or refused by name, none silently split otherwise
    assert set(names) <= set(_PRE) | set(_NOT_REPRODUCED), sorted(set(names) - set(_PRE) - set(_NOT_REPRODUCED))
