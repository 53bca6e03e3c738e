"""symbol_table cases: every real table, plus generated tables with byte pieces and
id-only space lines."""

from __future__ import annotations

import functools
import os
import tempfile

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import MULTISCRIPT, KindCase, vocabulary
from paths import shared

TABLES = [
    "icefall-librispeech-bpe500.tokens.txt",
    "sherpa-zh-char.tokens.txt",
    "sherpa-zh-en-mix.tokens.txt",
    "wenet-aishell2.units.txt",
    "wenet-librispeech-unigram5000.units.txt",
    "wenet-paraformer.units.txt",
]


def _table(name):
    return lambda: build_tokenizer(TokenizerSpec("symbol_table", {"units": shared(f"symbol_table/{name}")}))


def _by_piece(tok, wanted):
    symbols = vocabulary(tok)
    return [i for i, s in enumerate(symbols) if wanted(s)]


def _boundaries(tok):
    return _by_piece(tok, lambda s: s.startswith("\u2581"))[:20] + _by_piece(tok, lambda s: s.startswith("#"))


@functools.cache
def _generated_table() -> str:
    """A table with byte pieces, a space written as an id-only line, and multi-script pieces."""
    pieces = ["<blk>", "<sos/eos>", "<unk>", None, "\u2581", "\u2581the", "cat", "\u2581a", "b", "\u2581\u2581"]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    pieces += ["中", "文", "\u2581ok", "<0xZZ>", "x\u2581y", "#0", "\ufffd"]
    folder = tempfile.mkdtemp(prefix="oasr_tok_table_")
    path = os.path.join(folder, "tokens.txt")
    with open(path, "w", encoding="utf-8") as handle:
        for i, piece in enumerate(pieces):
            handle.write(f"{i}\n" if piece is None else f"{piece} {i}\n")
    return path


def _generated_interesting(tok):
    byte = lambda b: 10 + b
    # Complete 2-, 3- and 4-byte characters, lone lead and continuation bytes, invalid bytes
    # (0xFF, surrogate and overlong starts), the bytes of a genuine U+FFFD, and a U+FFFD piece.
    return [
        3,
        4,
        5,
        6,
        7,
        9,
        byte(0xE4),
        byte(0xB8),
        byte(0xAD),
        byte(0xC3),
        byte(0xA9),
        byte(0xF0),
        byte(0x9F),
        byte(0x98),
        byte(0x80),
        byte(0xFF),
        byte(0x80),
        byte(0x20),
        byte(0x41),
        byte(0xEF),
        byte(0xBF),
        byte(0xBD),
        byte(0xED),
        byte(0xA0),
        byte(0xC0),
        266,
        267,
        268,
        270,
        271,
        272,
    ]


def _sp_ids(tok):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=shared("sentencepiece/icefall-librispeech-bpe500.model"))
    return [sp.encode(text.upper()) for text in MULTISCRIPT]


_REFERENCE_NOTE = "no reference library: its rules are the legacy detokenizer's (docs/kinds/symbol_table.md), checked against sherpa/icefall tables in tests/kinds/test_symbol_table.py"


CASES = [
    KindCase(
        f"symbol_table/{name}",
        _table(name),
        interesting=_boundaries,
        realistic=_sp_ids if name.startswith("icefall") else None,
        reference_note=_REFERENCE_NOTE,
    )
    for name in TABLES
] + [
    KindCase(
        "symbol_table/generated-bytes",
        lambda: build_tokenizer(TokenizerSpec("symbol_table", {"units": _generated_table()})),
        interesting=_generated_interesting,
        reference_note=_REFERENCE_NOTE,
    )
]
