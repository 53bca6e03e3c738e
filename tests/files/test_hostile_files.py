"""Asset files a careless or hostile user gives: absurd ids, byte-order marks, JSON that is not what its
key says, bit flips, nesting past the recursion limit, YAML aliases. Each gets a typed error naming
the file (and line, key or id), never an allocation the file decides.

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models

import oasr_tok
from oasr_tok import (
    MalformedAssetError,
    TokenizerSpec,
    build_tokenizer,
)

from hostile import in_child
from paths import own, shared

WHISPER_EN = own("whisper/en/tokenizer.json")


BYTELEVEL = own("huggingface/bytelevel-bpe/tokenizer.json")


PARAFORMER_TXT = shared("funasr_char/paraformer-zh-vocab8404/tokens.txt")


SHERPA = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")


ICEFALL_MODEL = shared("sentencepiece/icefall-librispeech-bpe500.model")


FUNASR_MARKERS = ("<blank>", "<s>", "</s>", "<unk>")


def _write_json(path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _json(path: str):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


ABSURD = 100_000_000


def _absurd_tokenizer_json(tmp_path, source: str, where: str) -> str:
    data = _json(source)
    if where == "added":
        data["added_tokens"].append(
            {
                "id": ABSURD,
                "content": "<|absurd|>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        )
    else:
        data["model"]["vocab"]["absurd"] = ABSURD
    return _write_json(tmp_path / where / "tokenizer.json", data)


BOM = "\ufeff"


def _flipped_sentencepiece(tmp_path) -> str:
    import sentencepiece

    raw = bytearray(open(ICEFALL_MODEL, "rb").read())
    piece = sentencepiece.SentencePieceProcessor(model_file=ICEFALL_MODEL).id_to_piece(100).encode("utf-8")
    at = raw.find(piece)
    raw[at + len(piece) - 1] |= 0x80  # one bit: the piece's last byte is no longer UTF-8
    path = tmp_path / "bpe.model"
    path.write_bytes(bytes(raw))
    return str(path)


def _nemo(path, yaml_text: str) -> str:
    with tarfile.open(path, "w") as archive:
        data = yaml_text.encode()
        info = tarfile.TarInfo("model_config.yaml")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return str(path)


LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


@pytest.mark.parametrize(
    "source, where",
    [
        (WHISPER_EN, "added"),
        (WHISPER_EN, "vocab"),
        (BYTELEVEL, "vocab"),
        # The tokenizers runtime gives an added token whose id is not next the next free id (as
        # transformers does), so no table is sized by it: this one must simply load, in 1 GiB.
        (BYTELEVEL, "added"),
    ],
    ids=["whisper-added", "whisper-vocab", "huggingface-vocab", "huggingface-added"],
)
def test_an_absurd_id_is_refused_naming_file_and_id(tmp_path, source, where):
    """Hostile input, issue 12, finding 2: one absurd id must not size every table."""
    path = _absurd_tokenizer_json(tmp_path, source, where)
    # 1 GiB of address space: a table sized by the id would end in MemoryError (or worse).
    result = in_child(
        "import oasr_tok\n"
        f"folder = {os.path.dirname(path)!r}\n"
        "try:\n"
        "    oasr_tok.load(folder)\n"
        "    out = {'error': None}\n"
        "except BaseException as exc:\n"
        "    out = {'error': type(exc).__name__, 'message': str(exc),\n"
        "           'malformed': isinstance(exc, oasr_tok.MalformedAssetError)}\n"
        "out['describe'] = oasr_tok.describe(folder).error\n"
        "print(json.dumps(out))\n",
        memory_mb=1024,
    )
    if source == BYTELEVEL and where == "added":
        assert result == {"error": None, "describe": None}
        return
    assert result["malformed"], result
    assert path in result["message"] and str(ABSURD) in result["message"]
    assert str(ABSURD) in result["describe"]


def test_bom_in_a_funasr_tokens_txt(tmp_path):
    """Hostile input, issue 12, finding 7: a byte-order mark is not part of the first token."""
    text = open(PARAFORMER_TXT, encoding="utf-8").read()
    lines = text.split("\n")
    (tmp_path / "tokens.txt").write_text(BOM + text, encoding="utf-8")
    tok = oasr_tok.load(str(tmp_path))
    assert tok.spec.kind == "funasr_char"
    expected = {lines.index(m) for m in FUNASR_MARKERS if m in lines}
    assert tok.special_ids == expected and 0 in expected
    assert tok.id_to_piece(0) == lines[0]
    assert tok.decode([0, 1, 0]) == tok.decode([1])


def test_bom_in_a_symbol_table(tmp_path):
    """Hostile input, issue 12, finding 7: a byte-order mark is not part of the first token."""
    text = open(SHERPA, encoding="utf-8").read()
    (tmp_path / "tokens.txt").write_text(BOM + text, encoding="utf-8")
    tok = oasr_tok.load(str(tmp_path))
    assert tok.spec.kind == "symbol_table"
    first_piece = text.split("\n")[0].rsplit(None, 1)[0]
    assert tok.id_to_piece(0) == first_piece == "<blk>"
    assert 0 in tok.special_ids
    assert tok.decode([0]) == ""


@pytest.mark.parametrize("bad_id", [True, False, -1, 1.0, "7"])
def test_added_token_ids_must_be_non_negative_integers(tmp_path, bad_id):
    """Hostile input, issue 12, finding 9: JSON booleans and negative numbers are not ids."""
    data = _json(WHISPER_EN)
    data["added_tokens"].append({"id": bad_id, "content": "<|bad|>", "special": True})
    path = _write_json(tmp_path / "tokenizer.json", data)
    with pytest.raises(MalformedAssetError, match="'id'") as info:
        build_tokenizer(TokenizerSpec("whisper", {"tokenizer": path}))
    assert path in str(info.value)


@pytest.mark.parametrize("key", ["-1", "+5", " 7", "1_0", "true"])
def test_tokenizer_config_keys_must_be_ids(tmp_path, key):
    """Hostile input, issue 12, finding 9: JSON booleans and negative numbers are not ids."""
    shutil.copy(BYTELEVEL, tmp_path / "tokenizer.json")
    config = _write_json(
        tmp_path / "tokenizer_config.json", {"added_tokens_decoder": {key: {"content": "<x>", "special": True}}}
    )
    with pytest.raises(MalformedAssetError, match="not a token id") as info:
        oasr_tok.load(str(tmp_path))
    assert config in str(info.value)


def test_a_bit_flipped_sentencepiece_piece(tmp_path):
    """Hostile input, issue 12, finding 11: every failure on a bad asset is a TokenizerError
    naming the file."""
    path = _flipped_sentencepiece(tmp_path)
    for attempt in (
        lambda: build_tokenizer(TokenizerSpec("sentencepiece", {"model": path})),
        lambda: oasr_tok.load(path),
        lambda: oasr_tok.load(str(tmp_path)),
        lambda: oasr_tok.describe(str(tmp_path)),
    ):
        with pytest.raises(MalformedAssetError, match="piece 100") as info:
            attempt()
        assert path in str(info.value)


@pytest.mark.parametrize("decoder", [-1, "ByteLevel", [], 3.5])
def test_a_whisper_decoder_of_the_wrong_json_type(tmp_path, decoder):
    """Hostile input, issue 12, finding 11: every failure on a bad asset is a TokenizerError
    naming the file."""
    data = _json(WHISPER_EN)
    data["decoder"] = decoder
    path = _write_json(tmp_path / "tokenizer.json", data)
    with pytest.raises(MalformedAssetError) as info:
        oasr_tok.load(str(tmp_path))
    assert path in str(info.value)
    description = oasr_tok.describe(str(tmp_path))
    assert description.error is not None and path in description.error


@pytest.mark.parametrize("content", [{}, [], 5, None])
def test_a_tokenizer_config_content_of_the_wrong_json_type(tmp_path, content):
    """Hostile input, issue 12, finding 11: every failure on a bad asset is a TokenizerError
    naming the file."""
    shutil.copy(BYTELEVEL, tmp_path / "tokenizer.json")
    config = _write_json(
        tmp_path / "tokenizer_config.json", {"added_tokens_decoder": {"900": {"content": content, "special": True}}}
    )
    with pytest.raises(MalformedAssetError) as info:
        oasr_tok.load(str(tmp_path))
    assert config in str(info.value)
    description = oasr_tok.describe(str(tmp_path))
    assert description.error is not None and config in description.error


@pytest.mark.parametrize(
    "config",
    [
        LAUGHS + "tokenizer: {type: bpe, model_path: *i}\n",  # the 436-byte "billion laughs"
        LAUGHS + "tokenizer: *i\n",
        "base: &base {type: bpe, model_path: 'nemo:tokenizer.model'}\ntokenizer: *base\n",  # even a small alias
    ],
    ids=["laughs-under-model_path", "laughs-as-tokenizer", "small-alias"],
)
def test_a_nemo_config_with_yaml_aliases_is_refused_at_once(tmp_path, config):
    """Hostile input, third round (issue 35), defect 1a: a file never decides an allocation
    (YAML aliases in a .nemo config)."""
    archive = _nemo(tmp_path / "model.nemo", config)
    for call in (oasr_tok.load, oasr_tok.resolve, oasr_tok.describe):
        with pytest.raises(MalformedAssetError, match="alias") as info:
            call(archive)
        assert len(str(info.value)) < 600


def test_a_nemo_config_nested_deeper_than_any_recursion_limit(tmp_path):
    """Hostile input, third round (issue 35), defect 1c: a file never decides an allocation (a
    config nested past the recursion limit)."""
    archive = _nemo(tmp_path / "model.nemo", "tokenizer: " + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(MalformedAssetError, match="nested too deeply|not valid YAML"):
        oasr_tok.load(archive)


@given(st.one_of(st.integers(10**6, 10**30), st.sampled_from([10**7, 10**8, 2**63, 2**64])))
@example(10**7)
def test_a_wav2vec2_vocab_with_an_id_far_beyond_its_entries_is_refused(tmp_path_factory, big):
    """Hostile input, third round (issue 35), defect 1b: a file never decides an allocation (a
    vocab.json id far past its entries)."""
    folder = tmp_path_factory.mktemp("w2v")
    (folder / "vocab.json").write_text(json.dumps({"<pad>": 0, "|": 1, "a": 2, "b": big}), "utf-8")
    with pytest.raises(MalformedAssetError, match="vocab.json") as info:
        oasr_tok.load(folder)
    assert str(folder) in str(info.value) and str(big) in str(info.value)


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.json", "tokens.json", "tekken.json", "tokenizer_spec.json"])
def test_json_nested_deeper_than_any_recursion_limit(tmp_path, name):
    """Hostile input, third round (issue 35), defect 1c: a file never decides an allocation
    (JSON nested past the recursion limit)."""
    (tmp_path / name).write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    for call in (oasr_tok.load, oasr_tok.describe):
        with pytest.raises(MalformedAssetError, match="nested too deeply") as info:
            call(tmp_path)
        assert name in str(info.value)


def test_g8_merges_nested_thousands_deep_are_a_typed_error_naming_the_file(tmp_path):
    """Hostile input, fourth round (issue 44), finding G8.

    A tokenizer.json whose merges nest 100,000 deep loads (decoding never reads the merges),
    then the first encode raised a bare RecursionError: a MalformedAssetError naming the file."""
    runtime = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")]))
    runtime.decoder = decoders.ByteLevel()
    path = tmp_path / "tokenizer.json"
    runtime.save(str(path))
    data = json.loads(path.read_text())
    data["model"]["merges"] = "MERGES"
    text = json.dumps(data).replace('"MERGES"', "[" * 100_000 + "]" * 100_000)
    path.write_text(text)
    tok = oasr_tok.load(str(tmp_path))
    assert tok.decode([0, 1]) == "ab"
    with pytest.raises(MalformedAssetError, match="nested too deeply") as info:
        tok.encode("ab")
    assert str(path) in str(info.value)
