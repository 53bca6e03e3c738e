"""Resolution on hostile files: a token list read by load() as the kind reads it, a tiktoken rank file
that is not a symbol table, an explicit spec whose errors name it.

Each test is a regression test of a defect a hostile-input campaign found (issues 12, 35, 44):
its docstring names the campaign and the finding."""

from __future__ import annotations

import json
import shutil

import pytest

import oasr_tok
from oasr_tok import (
    ResolveError,
    SpecError,
    UnknownKindError,
)

from hostile import small_table
from paths import shared

PARAFORMER_TXT = shared("funasr_char/paraformer-zh-vocab8404/tokens.txt")


SHERPA = shared("symbol_table/icefall-librispeech-bpe500.tokens.txt")


TIKTOKEN = shared("whisper-tiktoken/multilingual.tiktoken")


FUNASR_MARKERS = ("<blank>", "<s>", "</s>", "<unk>")


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_resolution_and_kind_split_lines_alike(tmp_path, separator):
    """Hostile input, issue 12, finding 8: load() and the kind read the lines of a token list
    the same way."""
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


def test_a_tiktoken_file_does_not_resolve_as_a_symbol_table(tmp_path):
    """Hostile input, issue 12, finding 10: a tiktoken rank file is not a symbol table."""
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


def test_a_spec_file_with_bad_options_or_an_unknown_kind_names_the_file(tmp_path):
    """Hostile input, third round (issue 35), defect 4: accepted or unclear (a
    tokenizer_spec.json's errors name it)."""
    small_table(tmp_path)
    spec_file = tmp_path / "tokenizer_spec.json"
    for content, error in (
        ({"kind": "symbol_table", "files": {"units": "tokens.txt"}, "options": {"nonsense": 1}}, SpecError),
        ({"kind": "no_such_kind", "files": {"units": "tokens.txt"}, "options": {}}, UnknownKindError),
    ):
        spec_file.write_text(json.dumps(content), "utf-8")
        with pytest.raises(error) as info:
            oasr_tok.load(tmp_path)
        assert str(spec_file) in str(info.value)
