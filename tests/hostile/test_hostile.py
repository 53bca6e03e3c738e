"""Hostile and careless input (issue 12): one regression test per defect found by fuzzing.

Every test states what the contract (DESIGN.md § Errors) requires: a typed error from
oasr_tok.errors naming the file, line, key or id, the state left as it was, no crash, no
silent wrong answer. Expected values come from the contract and from the files themselves
(the line a token is on, the id a file gives it), never from our own output. Cases that could
exhaust memory or crash run in a child process with a memory limit (see hostile.py)."""

from __future__ import annotations

import json
import math
import os
import shutil
from fractions import Fraction

import pytest

import oasr_tok
from oasr_tok import (
    EncodeError,
    MalformedAssetError,
    NonIntegerIdError,
    ResolveError,
    TimingError,
    TokenizerSpec,
    build_tokenizer,
)

from hostile import in_child, run_cli
from paths import own, shared

WHISPER_EN = own("whisper/en/tokenizer.json")
BYTELEVEL = own("huggingface/bytelevel-bpe/tokenizer.json")
PARAFORMER_TXT = shared("funasr_char/paraformer-zh-vocab8404/tokens.txt")
SHERPA = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")
ICEFALL_MODEL = shared("sentencepiece/icefall-librispeech-bpe500.model")
TIKTOKEN = shared("whisper-tiktoken/multilingual.tiktoken")
FUNASR_MARKERS = ("<blank>", "<s>", "</s>", "<unk>")


def _write_json(path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _json(path: str):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


# -- 2: one absurd id must not size every table --------------------------------------------------

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


def test_an_absurd_whisper_vocab_size_option_is_refused():
    result = in_child(
        "import oasr_tok\n"
        f"spec = oasr_tok.TokenizerSpec('whisper', {{'tokenizer': {WHISPER_EN!r}}}, {{'vocab_size': 10**12}})\n"
        "try:\n"
        "    oasr_tok.build_tokenizer(spec)\n"
        "    out = None\n"
        "except BaseException as exc:\n"
        "    out = [type(exc).__name__, str(exc)]\n"
        "print(json.dumps(out))\n",
        memory_mb=1024,
    )
    assert result[0] == "SpecError" and "far beyond" in result[1]


# -- 7: a byte-order mark is not part of the first token -----------------------------------------

BOM = "\ufeff"


def test_bom_in_a_funasr_tokens_txt(tmp_path):
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
    text = open(SHERPA, encoding="utf-8").read()
    (tmp_path / "tokens.txt").write_text(BOM + text, encoding="utf-8")
    tok = oasr_tok.load(str(tmp_path))
    assert tok.spec.kind == "symbol_table"
    first_piece = text.split("\n")[0].rsplit(None, 1)[0]
    assert tok.id_to_piece(0) == first_piece == "<blk>"
    assert 0 in tok.special_ids
    assert tok.decode([0]) == ""


# -- 8: load() and the kind read the lines of a token list the same way ------------------------


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_resolution_and_kind_split_lines_alike(tmp_path, separator):
    lines = open(PARAFORMER_TXT, encoding="utf-8").read().split("\n")
    lines[5] = "a" + separator + "b"  # a token with a character str.splitlines() breaks at
    (tmp_path / "tokens.txt").write_text("\n".join(lines), encoding="utf-8")
    tok = oasr_tok.load(str(tmp_path))
    # The file's own numbering: a token's id is its line index.
    expected = {lines.index(m) for m in FUNASR_MARKERS}
    assert tok.special_ids == expected
    assert tok.vocab_size == len([line for line in lines if line != ""])
    ordinary = next(i for i, t in enumerate(lines) if i > 10 and "\u4e00" <= t <= "\u9fff")
    assert tok.decode([ordinary]) == lines[ordinary]


# -- 9: JSON booleans and negative numbers are not ids ---------------------------------------------


@pytest.mark.parametrize("bad_id", [True, False, -1, 1.0, "7"])
def test_added_token_ids_must_be_non_negative_integers(tmp_path, bad_id):
    data = _json(WHISPER_EN)
    data["added_tokens"].append({"id": bad_id, "content": "<|bad|>", "special": True})
    path = _write_json(tmp_path / "tokenizer.json", data)
    with pytest.raises(MalformedAssetError, match="'id'") as info:
        build_tokenizer(TokenizerSpec("whisper", {"tokenizer": path}))
    assert path in str(info.value)


@pytest.mark.parametrize("key", ["-1", "+5", " 7", "1_0", "true"])
def test_tokenizer_config_keys_must_be_ids(tmp_path, key):
    shutil.copy(BYTELEVEL, tmp_path / "tokenizer.json")
    config = _write_json(
        tmp_path / "tokenizer_config.json", {"added_tokens_decoder": {key: {"content": "<x>", "special": True}}}
    )
    with pytest.raises(MalformedAssetError, match="not a token id") as info:
        oasr_tok.load(str(tmp_path))
    assert config in str(info.value)


# -- 10: a tiktoken rank file is not a symbol table ----------------------------------------------


def test_a_tiktoken_file_does_not_resolve_as_a_symbol_table(tmp_path):
    from oasr_tok.files.detection import is_tiktoken_ranks

    assert is_tiktoken_ranks(TIKTOKEN)
    assert not is_tiktoken_ranks(SHERPA)
    # Alone it is openai-whisper's vocabulary (the whisper kind reads it), never a symbol table.
    assert oasr_tok.resolve(TIKTOKEN).kind == "whisper"
    # Renamed to a table's name, the content still says what it is.
    shutil.copy(TIKTOKEN, tmp_path / "tokens.txt")
    assert is_tiktoken_ranks(str(tmp_path / "tokens.txt"))
    with pytest.raises(ResolveError, match="tiktoken"):
        oasr_tok.resolve(str(tmp_path))


# -- 11: every failure on a bad asset is a TokenizerError naming the file ------------------------


def _flipped_sentencepiece(tmp_path) -> str:
    import sentencepiece

    raw = bytearray(open(ICEFALL_MODEL, "rb").read())
    piece = sentencepiece.SentencePieceProcessor(model_file=ICEFALL_MODEL).id_to_piece(100).encode("utf-8")
    at = raw.find(piece)
    raw[at + len(piece) - 1] |= 0x80  # one bit: the piece's last byte is no longer UTF-8
    path = tmp_path / "bpe.model"
    path.write_bytes(bytes(raw))
    return str(path)


def test_a_bit_flipped_sentencepiece_piece(tmp_path):
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
    shutil.copy(BYTELEVEL, tmp_path / "tokenizer.json")
    config = _write_json(
        tmp_path / "tokenizer_config.json", {"added_tokens_decoder": {"900": {"content": content, "special": True}}}
    )
    with pytest.raises(MalformedAssetError) as info:
        oasr_tok.load(str(tmp_path))
    assert config in str(info.value)
    description = oasr_tok.describe(str(tmp_path))
    assert description.error is not None and config in description.error


# -- 12: encode errors are the same everywhere; whisper helpers check their arguments -----------


def _encoders():
    return {
        "sentencepiece": build_tokenizer(TokenizerSpec("sentencepiece", {"model": ICEFALL_MODEL})),
        "huggingface": build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": BYTELEVEL})),
        "whisper": build_tokenizer(TokenizerSpec("whisper", {"tokenizer": WHISPER_EN})),
        "funasr_char": oasr_tok.load(own("funasr_char/small/tokens.json")),
    }


@pytest.mark.parametrize("text", [None, 5, b"abc", ["a"], "a\ud800b", "\udfff"])
def test_encode_refuses_non_text_with_encode_error(text):
    for name, tok in _encoders().items():
        with pytest.raises(EncodeError) as info:
            tok.encode(text)
        assert len(str(info.value)) < 300, name


def test_whisper_helpers_check_their_arguments():
    tok = build_tokenizer(TokenizerSpec("whisper", {"tokenizer": WHISPER_EN}))
    for seconds in (math.nan, math.inf, "x", "1.0", None, 10**400, 31.0, -1):
        with pytest.raises(TimingError):
            tok.timestamp_id(seconds)
    assert tok.timestamp_id(Fraction(1, 50)) == tok.timestamp_begin + 1
    for language in ("xx", "", 5, ["en"]):
        with pytest.raises(EncodeError):
            tok.sot_sequence(language)
    with pytest.raises(EncodeError):
        tok.sot_sequence("en", task="dance")
    ids = [tok.timestamp_begin, 0, tok.timestamp_begin + 10]
    for offset in ("x", math.nan, math.inf, None, [1.0]):
        with pytest.raises(TimingError):
            tok.token_times(ids, offset=offset)
    with pytest.raises(NonIntegerIdError):
        tok.timestamp_seconds(1.5)


# -- 13: the CLI on bad stdin, bad ids and bad paths: one line on stderr, never a traceback -------


def _one_line_error(result, code: int) -> None:
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == code, stderr
    assert "Traceback" not in stderr and "lost sys.stderr" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr


@pytest.mark.parametrize("command", ["decode", "stream", "words"])
@pytest.mark.parametrize(
    "stdin",
    [
        pytest.param(b"\xff\xfe[\x001\x00]\x00\n", id="utf16-bom"),
        pytest.param("[1, 2]\n".encode("utf-16-le"), id="utf16-no-bom"),
        pytest.param(b"[1, 2, \xc3]\n", id="truncated-utf8"),
        # Named, not shown: pytest puts a test's id in the environment of its subprocesses
        # (PYTEST_CURRENT_TEST), and an id of 200,000 brackets is past the kernel's limit for one.
        pytest.param(b"[" * 100_000 + b"]" * 100_000 + b"\n", id="deeper-than-recursion-limit"),
        pytest.param(b"[" + b"9" * 5000 + b"]\n", id="5000-digit-id-in-list"),
        pytest.param(b"9" * 5000 + b"\n", id="5000-digit-id"),
        pytest.param(b'{"ids": [' + b"[" * 50_000 + b"]" * 50_000 + b'], "starts": [0]}\n', id="deep-words-json"),
    ],
)
def test_cli_bad_stdin_is_one_line_and_exit_3(command, stdin):
    _one_line_error(run_cli([command, SHERPA], stdin), 3)


def test_cli_huge_id_argument():
    _one_line_error(run_cli(["decode", SHERPA, "9" * 5000]), 3)


def test_cli_path_that_is_not_utf8(tmp_path):
    bad = os.fsencode(str(tmp_path)) + b"/\xff\xfe-not-utf8"
    for args in (["describe", bad], ["decode", bad, "1"], ["--json", "describe", bad]):
        _one_line_error(run_cli(args), 1)


# -- 14: time order is compared exactly ---------------------------------------------------------


def _words_tok():
    return oasr_tok.load(SHERPA)


@pytest.mark.parametrize(
    "starts, ends",
    [
        ([2**60 + 1, 2**60], None),  # decreasing above 2**53
        ([0, 2**53 + 1], [2**53 + 1, 2**53]),  # an end before its start
        ([Fraction(10**20 + 1, 10**20), Fraction(1)], None),  # Fractions a double equates
        ([time_ns := 1_700_000_000_123_456_789, time_ns - 1], None),  # time.time_ns() values
    ],
)
def test_time_order_is_exact(starts, ends):
    tok = _words_tok()
    ids = [100, 101]
    with pytest.raises(TimingError):
        tok.word_timings(ids, starts, ends)


def test_exact_times_in_order_are_kept():
    tok = _words_tok()
    ids = [100, 101]
    starts = [2**60, 2**60 + 1]
    words = tok.word_timings(ids, starts)
    assert [w.start for w in words][0] == 2**60


# -- stream states are validated (4-6) -------------------------------------------------------------
# (in test_hostile_states.py)
