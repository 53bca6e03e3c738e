"""Hotword and keyword files for sherpa-onnx, written from a tokenizer: each phrase as the
model's units, the items after it kept as they were (docs/prompts.md § Hotwords).

A line of sherpa-onnx's hotwords or keywords file is a phrase and extra items: ``:2.0`` (a
boosting score), ``#0.6`` (a keyword's triggering threshold), ``@小爱同学`` (the phrase as it
should be reported). `encode_lines` writes each line as sherpa-onnx's `text2token` command
does: the phrase's units (a symbol table's, per its `modeling_unit` option; any other kind's
vocabulary pieces), space-separated, then the extra items. A phrase holding something the
model's units cannot spell is reported with its line number, never dropped (sherpa-onnx's
command skips such a line, and then writes the extra items of the lines after it one line off).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import EncodeError, short_repr

__all__ = ["encode_lines"]

_EXTRA = (":", "#", "@")


def encode_lines(tok: Any, lines: Iterable[str]) -> list[str]:
    """sherpa-onnx's hotwords / keywords lines for `lines` (one phrase and its extra items per
    line; a blank line stays blank). EncodeError listing every line that cannot be encoded."""
    if not getattr(tok, "supports_encode", False):
        raise EncodeError(
            f"{type(tok).__name__} cannot encode: give a symbol_table its modeling_unit option "
            "(cjkchar, bpe, cjkchar+bpe, fpinyin, ppinyin)"
        )
    if isinstance(lines, str):
        raise EncodeError("encode_lines takes a list of lines, got one str (split it into lines)")
    if not isinstance(lines, Iterable):
        raise EncodeError(f"encode_lines takes a list of lines (str), got {type(lines).__name__}")
    out: list[str] = []
    failed: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not isinstance(line, str):
            raise EncodeError(f"line {number} is {type(line).__name__}, not a str")
        items = line.strip().split()
        text = " ".join(item for item in items if item[0] not in _EXTRA)
        extra = [item for item in items if item[0] in _EXTRA]
        try:
            pieces = [tok.id_to_piece(token_id) for token_id in tok.encode(text)]
        except EncodeError as exc:
            failed.append(f"line {number} ({short_repr(line.strip(), 60)}): {exc}")
            continue
        out.append(" ".join(pieces + extra))
    if failed:
        raise EncodeError("these lines cannot be encoded with the model's units:\n  " + "\n  ".join(failed))
    return out
