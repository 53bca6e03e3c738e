"""encode for a GGUF's `t5` (UGM: unigram) vocabulary, as llama.cpp's llm_tokenizer_ugm_session
does it (src/llama-vocab.cpp, llama-cpp-python 0.3.36's vendored copy):

1. normalise: at each position a user-defined token is kept as it is; otherwise the longest
   prefix the precompiled charsmap (SentencePiece's normaliser, an XOR-compressed double array
   followed by NUL-terminated replacements) knows is replaced; otherwise the character is kept.
   Spaces become "▁" (escape_whitespaces), one is put before the text (add_space_prefix) and
   runs of spaces are merged (remove_extra_whitespaces) as the file's flags say;
2. the best split by Viterbi over the normalised UTF-8: the highest sum of piece scores
   (user-defined pieces score 0), a code point no piece covers is the unknown token at the
   lowest normal score minus 10, consecutive unknowns merged into one.

Plain Python: `tokenizers`' Unigram differs from llama.cpp in the unknown token's score and in
how user-defined tokens are normalised, and the point is to be llama.cpp's answer exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..api import (
    MalformedAssetError,
)

if TYPE_CHECKING:
    from .vocab import GGUFVocab

__all__ = ["ugm_encoder"]

_NORMAL, _USER_DEFINED, _UNUSED = 4, 16, 2
_SPACE = "\u2581".encode()


class _Charsmap:
    """SentencePiece's precompiled charsmap: longest-prefix replacements over UTF-8 bytes."""

    def __init__(self, blob: bytes, path: str) -> None:
        self.nodes: tuple[int, ...] = ()
        self.replacements = b""
        if not blob:
            return
        if len(blob) < 4:
            raise MalformedAssetError(f"{path}: the precompiled charsmap is shorter than its header", path=path)
        (size,) = struct.unpack_from("<I", blob, 0)
        if size + 4 >= len(blob) or size % 4:
            raise MalformedAssetError(f"{path}: the precompiled charsmap's array runs past its end", path=path)
        self.nodes = struct.unpack_from(f"<{size // 4}I", blob, 4)
        self.replacements = blob[4 + size :]

    def _node(self, index: int) -> int:
        if index >= len(self.nodes):
            raise MalformedAssetError("the precompiled charsmap points outside its array")
        return self.nodes[index]

    def _base(self, index: int) -> int:
        node = self._node(index)
        return (node >> 10) << ((node & (1 << 9)) >> 6)

    def longest(self, data: bytes, start: int) -> tuple[int, bytes] | None:
        """(bytes matched, replacement) of the longest known prefix of data[start:], or None."""
        if not self.nodes:
            return None
        best: tuple[int, bytes] | None = None
        index = self._base(0)
        for offset in range(start, len(data)):
            c = data[offset]
            if c == 0:
                break
            index ^= c
            node = self._node(index)
            if node & ((1 << 31) | 0xFF) != c:
                break
            leaf = (node >> 8) & 1
            index ^= self._base(index)
            if leaf:
                value = self._node(index) & ((1 << 31) - 1)
                end = self.replacements.find(b"\0", value)
                if value >= len(self.replacements) or end < 0:
                    raise MalformedAssetError("the precompiled charsmap's replacement is not NUL-terminated")
                best = (offset - start + 1, self.replacements[value:end])
        return best


def ugm_encoder(vocab: GGUFVocab) -> Callable[[str], list[int]]:
    values = vocab.meta.values
    raw: Any = values.get("tokenizer.ggml.precompiled_charsmap")
    if hasattr(raw, "load"):
        raw = raw.load()
    charsmap = _Charsmap(bytes(int(b) & 0xFF for b in raw) if raw is not None else b"", vocab.path)
    scores: Any = values.get("tokenizer.ggml.scores")
    if hasattr(scores, "load"):
        scores = scores.load()
    scores = list(scores) if scores is not None else [0.0] * len(vocab.texts)
    attrs = vocab.attrs
    pieces: dict[bytes, int] = {}
    user: set[bytes] = set()
    normal_scores = [scores[i] for i, a in enumerate(attrs) if a & _NORMAL]
    for i, text in enumerate(vocab.texts):
        if attrs[i] & (_NORMAL | _USER_DEFINED | _UNUSED):
            pieces[text.encode("utf-8", "surrogateescape")] = i  # the trie keeps the last id of a text
        if attrs[i] & _USER_DEFINED:
            user.add(text.encode("utf-8", "surrogateescape"))
    longest_piece = max(map(len, pieces), default=1)
    longest_user = max(map(len, user), default=0)
    unknown_score = (min(normal_scores) if normal_scores else 3.4028234663852886e38) - 10.0
    unk = vocab.ids["unk"]
    unk = 2 if unk is None else unk  # llama.cpp's t5 default
    add_prefix = bool(values.get("tokenizer.ggml.add_space_prefix", False))
    merge_spaces = bool(values.get("tokenizer.ggml.remove_extra_whitespaces", False))
    user_defined = {i for i, a in enumerate(attrs) if a & _USER_DEFINED}

    def normalize(text: str) -> bytes:
        data = text.encode("utf-8")
        out = bytearray()
        prepended = non_ws = False
        at = 0
        while at < len(data):
            chunk: bytes
            size = 0
            for k in range(min(longest_user, len(data) - at), 0, -1):
                if data[at : at + k] in user:
                    chunk, size = data[at : at + k], k
                    break
            if not size:
                match = charsmap.longest(data, at)
                if match is not None:
                    size, chunk = match
                else:
                    size = _char_len(data[at])
                    chunk = data[at : at + size]
            for byte in chunk:
                if byte != 0x20:
                    if not non_ws:
                        non_ws = True
                        if (add_prefix and not prepended) or merge_spaces:
                            out += _SPACE
                            prepended = True
                    out.append(byte)
                else:
                    non_ws = False
                    if not merge_spaces:
                        out += _SPACE
            at += size
        return bytes(out)

    def encode(text: str) -> list[int]:
        data = normalize(text)
        n = len(data)
        if n == 0:
            return []
        best: list[tuple[int, int, float]] = [(unk, 0, -1.7976931348623157e308)] * (n + 1)
        best[0] = (unk, 0, 0.0)
        at = 0
        while at < n:
            step = min(_char_len(data[at]), n - at)
            base = best[at][2]
            whole = False
            for end in range(at + 1, min(n, at + longest_piece) + 1):
                token = pieces.get(data[at:end])
                if token is None:
                    continue
                if end - at == step:
                    whole = True
                score = base + (0.0 if token in user_defined else scores[token])
                if score > best[end][2]:
                    best[end] = (token, at, score)
            if not whole:
                score = base + unknown_score
                if score > best[at + step][2]:
                    best[at + step] = (unk, at, score)
            at += step
        out: list[int] = []
        previous_unknown = False
        position = n
        while True:
            token, start, _ = best[position]
            unknown = token == unk
            if not (previous_unknown and unknown):
                out.append(token)
            if start == 0:
                break
            previous_unknown = unknown
            position = start
        out.reverse()
        return out

    return encode


def _char_len(lead: int) -> int:
    # unicode_len_utf8: the length a lead byte announces (a stray continuation byte: 1)
    return 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
