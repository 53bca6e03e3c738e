"""Where a tokenizer.json's encode can be cut: what a re-decoding session (oasr_tok.Session,
_engine/session.pyx) needs to re-encode only the end of its text.

encode(a + b) == encode(a) + encode(b) whenever the position between a and b is a hard
boundary of the pipeline (the pre-tokenizer's split cannot move across it, the normaliser does
not rewrite across it, and no added token is written across it). The engine knows the hard
boundaries of one pre-tokenizer, Qwen2's Split regex (Qwen2, Qwen2.5, Qwen3, Qwen3-ASR), from
the two characters around a position. This module says whether a tokenizer.json's pipeline is
exactly that one, around byte-level BPE, and which character pairs its added tokens are written
across; any other pipeline gets no plan, and its sessions re-encode the whole text, as qwen-asr
does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["QWEN2_SPLIT", "SessionPlan", "session_plan"]

#: Qwen2's pre-tokenizer regex, as its tokenizer.json writes it.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

#: (rule name, pair codes an added token is written across (a << 21 | b), id -> bytes with the
#: special ids' text, the decode's UTF-8 error handler, text -> ids): what Session takes.
SessionPlan = tuple[str, frozenset[int], tuple[bytes, ...], str, Callable[[str], list[int]]]


def _state(component: Any) -> Any:
    """A runtime component as its tokenizer.json writes it (None for none)."""
    return None if component is None else json.loads(component.__getstate__())


def _qwen2_pipeline(backend: Any) -> bool:
    """Whether the runtime's encode is NFC (or nothing), Qwen2's Split, byte-level, BPE without
    dropout: the pipeline whose hard boundaries the engine's rule names."""
    normalizer = _state(backend.normalizer)
    if normalizer is not None and normalizer != {"type": "NFC"}:
        return False
    pre = _state(backend.pre_tokenizer)
    if not isinstance(pre, dict) or pre.get("type") != "Sequence" or len(pre.get("pretokenizers", [])) != 2:
        return False
    split, byte_level = pre["pretokenizers"]
    if split != {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": False}:
        return False
    if byte_level.get("type") != "ByteLevel" or byte_level.get("add_prefix_space") or byte_level.get("use_regex"):
        return False
    model = backend.model
    return type(model).__name__ == "BPE" and model.dropout is None


def session_plan(backend: Any, joined: tuple[tuple[bytes, ...], str] | None) -> SessionPlan | None:
    """The plan of a `tokenizers` runtime whose decode is `joined` (a byte-level table's pieces
    with the special ids' text, and its error handler), or None: a pipeline other than Qwen2's,
    an added token that strips white space, matches whole words only or is normalised (its
    matches would depend on what is around a boundary), a runtime that truncates or pads."""
    if joined is None or backend.truncation is not None or backend.padding is not None:
        return None
    if getattr(backend, "encode_special_tokens", False) or not _qwen2_pipeline(backend):
        return None
    normalizes = backend.normalizer is not None
    pairs: set[int] = set()
    for added in backend.get_added_tokens_decoder().values():
        if added.lstrip or added.rstrip or added.single_word or (added.normalized and normalizes):
            return None
        content = added.content
        pairs.update((ord(content[i - 1]) << 21) | ord(content[i]) for i in range(1, len(content)))

    def encode(text: str) -> list[int]:
        ids: list[int] = backend.encode(text, add_special_tokens=False).ids
        return ids

    pieces, errors = joined
    return ("qwen2", frozenset(pairs), pieces, errors, encode)
