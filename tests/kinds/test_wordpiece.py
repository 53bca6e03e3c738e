"""wordpiece kind: a BERT vocab.txt, against `tokenizers`' BertWordPieceTokenizer made from the
same file (decode with special tokens skipped, encode), on the project's trained vocabularies
(fixtures/wordpiece/, fixtures/make_asr_formats.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import BertWordPieceTokenizer

import oasr_tok
from oasr_tok import MalformedAssetError, SpecError, TokenizerSpec, build_tokenizer

from cases import MULTISCRIPT
from paths import own

VARIANTS = {"uncased": {}, "cased": {"lowercase": False}}
_BUILT: dict = {}


def pair(name: str):
    if name not in _BUILT:
        path = own(f"wordpiece/{name}/vocab.txt")
        ours = build_tokenizer(TokenizerSpec("wordpiece", {"vocab": path}, VARIANTS[name]))
        theirs = BertWordPieceTokenizer(path, **VARIANTS[name])
        _BUILT[name] = (ours, theirs)
    return _BUILT[name]


@pytest.mark.parametrize("name", list(VARIANTS))
@settings(max_examples=200)
@given(data=st.data())
def test_decode_matches_the_runtime(name, data):
    ours, theirs = pair(name)
    ids = data.draw(st.lists(st.integers(0, ours.vocab_size - 1), max_size=30))
    assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=True)
    assert "".join(ours.token_pieces(ids)) == ours.decode(ids)


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("text", [*MULTISCRIPT, "Hello World, don't stop! 中文 café", "NeMo parakeet ?!"])
def test_encode_is_the_runtime_encode_and_round_trips_like_it(name, text):
    ours, theirs = pair(name)
    assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids
    ids = ours.encode(text)
    assert ours.decode(ids) == theirs.decode(ids)


def test_specials_and_the_framing_option():
    ours, theirs = pair("uncased")
    assert {ours.id_to_piece(i) for i in ours.special_ids} == {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    framed = build_tokenizer(
        TokenizerSpec("wordpiece", {"vocab": own("wordpiece/uncased/vocab.txt")}, {"add_special_tokens": True})
    )
    assert framed.encode("hello") == theirs.encode("hello").ids
    assert framed.encode("hello")[0] == theirs.token_to_id("[CLS]")


@pytest.mark.parametrize(
    "content, words",
    [
        ("[UNK]\na\na\n", "'a' is given twice"),
        ("[UNK]\n\nb\n", ":2: empty piece"),
        ("", "empty"),
        ("a\nb\n", "unknown token"),
    ],
)
def test_malformed_vocabularies_name_file_and_line(tmp_path, content, words):
    path = tmp_path / "vocab.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(MalformedAssetError, match=words) as info:
        build_tokenizer(TokenizerSpec("wordpiece", {"vocab": str(path)}))
    assert info.value.path == str(path)


def test_options_are_checked():
    with pytest.raises(SpecError, match="lowercase"):
        build_tokenizer(TokenizerSpec("wordpiece", {"vocab": own("wordpiece/uncased/vocab.txt")}, {"lowercase": "no"}))
    with pytest.raises(SpecError, match="unknown option"):
        build_tokenizer(TokenizerSpec("wordpiece", {"vocab": own("wordpiece/uncased/vocab.txt")}, {"cased": True}))


def test_resolution_reads_vocab_txt_and_do_lower_case():
    spec = oasr_tok.resolve(own("wordpiece/uncased"))
    assert spec.kind == "wordpiece" and spec.options == {}
    cased = oasr_tok.resolve(own("wordpiece/cased"))
    assert cased.kind == "wordpiece" and cased.options == {"lowercase": False}
    assert oasr_tok.resolve(own("wordpiece/cased/vocab.txt")) == cased
    tok = oasr_tok.load(own("wordpiece/cased"))
    _, theirs = pair("cased")
    assert tok.encode("Hello World") == theirs.encode("Hello World", add_special_tokens=False).ids
    described = oasr_tok.describe(own("wordpiece/uncased"))
    assert described.kind == "wordpiece" and described.special_ids == sorted(pair("uncased")[0].special_ids)
