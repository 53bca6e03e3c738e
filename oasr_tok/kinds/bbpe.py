"""bbpe: icefall's byte-level BPE. A SentencePiece model trained on text whose UTF-8 bytes were
first spelled as characters, one per byte (icefall/byte_utils.py's `byte_encode`): the model's
pieces are runs of that byte alphabet, so a Chinese character is three "characters" and a
token may end inside one. icefall decodes a hypothesis as
``smart_byte_decode(sp.decode(ids))``: SentencePiece's own decode, each character read back
as its byte, and the bytes decoded as UTF-8 keeping the most whole characters.

That last step, stated exactly: a byte string's best recovery (the most characters of at most
four bytes that each decode) is the string with every byte that belongs to no well-formed
UTF-8 character dropped, which is UTF-8 decoding with errors="ignore" (a character's bytes
are fixed by its lead byte, so no other choice of characters can be longer; checked against
icefall's dynamic programme in tests/kinds/test_bbpe.py). So this kind is the sentencepiece kind's
per-id renderings, each turned into the bytes its characters stand for, streamed by the
compiled byte-level engine under the "ignore" rule: a token that ends inside a character holds
its bytes back, and bytes that can no longer become a character print nothing, as icefall's
recovery drops them.

`<unk>`'s rendering " ⁇ " is read as spaces, as sherpa-onnx's bbpe byte table reads U+2047 (icefall's byte_utils.py has no entry for it and raises KeyError);
so does this kind. A character outside the byte alphabet (a piece of a model not trained the
icefall way) stands for its own UTF-8 bytes here, where icefall's lookup raises KeyError.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ._common import checked_text, reject_unknown_options, special_ids_option
from .api import (
    FLAG_BYTE,
    FLAG_KEEP_FIRST,
    FLAG_SKIP,
    Detected,
    Found,
    KindRecord,
    MalformedAssetError,
    PieceTable,
    SetAside,
    SpecError,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    folder_names,
    join_pieces,
)
from .sentencepiece import (
    DEFAULT_SPECIAL_IDS,
    SentencePieceModel,
    build_renderings,
    load_processor,
    piece_strings,
    refuse_denormalizer,
)

__all__ = ["BYTE_TO_CHAR", "BbpeTokenizer", "byte_encode"]


def _alphabet() -> list[str]:
    """icefall's byte alphabet (byte_utils.py, PRINTABLE_BASE_CHARS): bytes 0-31 as U+0100
    onwards, printable ASCII as itself, bytes 127-255 as the code points from U+0120 upwards
    that NFKC leaves alone (it skips the six that normalisation would change). Stated as the
    rule rather than the list; tests/kinds/test_bbpe.py compares it with icefall's list."""
    nfkc_unstable = {0x132, 0x133, 0x13F, 0x140, 0x149, 0x17F}
    high = [cp for cp in range(0x120, 0x1A7) if cp not in nfkc_unstable]
    return [chr(cp) for cp in [*range(0x100, 0x120), *range(0x20, 0x7F), *high]]


#: byte -> the character icefall spells it with.
BYTE_TO_CHAR: tuple[str, ...] = tuple(_alphabet())
_CHAR_TO_BYTE = {ch: bytes([b]) for b, ch in enumerate(BYTE_TO_CHAR)}
_CHAR_TO_BYTE["\u2047"] = b" "  # SentencePiece renders <unk> as " ⁇ "; sherpa-onnx reads U+2047 as a space
_WHITESPACE = re.compile(r"\s+")
_SPELL = {b: ch for b, ch in enumerate(BYTE_TO_CHAR)}


def byte_encode(text: str) -> str:
    """icefall's byte_encode: whitespace runs made one space, then each UTF-8 byte spelled as
    its character of the byte alphabet (what the model was trained on)."""
    return "".join([_SPELL[b] for b in _WHITESPACE.sub(" ", text).encode("utf-8")])


def _as_bytes(text: str) -> bytes:
    """What a decoded surface stands for: each character's byte (see the module docstring)."""
    get = _CHAR_TO_BYTE.get
    return b"".join([get(ch) or ch.encode("utf-8") for ch in text])


class BbpeTokenizer(TableMethods, SentencePieceModel, Tokenizer):
    """An icefall byte-level BPE model (bbpe.model). Options: `special_ids` (default
    [0, 1, 2]: icefall's <blk>, <sos/eos> and <unk>; [] decodes every id as icefall does)."""

    supports_encode = True
    _table: PieceTable

    def __init__(
        self, path: str, special_ids: Sequence[int] | None = None, *, spelled: dict[int, str] | None = None
    ) -> None:
        self._sp = load_processor(path)
        refuse_denormalizer(self._sp, path)
        self._path = path
        options = {} if special_ids is None else {"special_ids": special_ids}
        size = self._sp.get_piece_size()
        self._special = (
            frozenset() if spelled is not None else special_ids_option(options, DEFAULT_SPECIAL_IDS, size, "bbpe")
        )
        renderings = build_renderings(self._sp, self._special, path, spelled)
        flags = renderings.flags
        if any(f & FLAG_BYTE for f in flags):
            raise MalformedAssetError(
                f"{path}: this SentencePiece model has byte-fallback pieces (<0xNN>); an icefall byte-level BPE "
                "model spells bytes as characters instead. Load it as kind 'sentencepiece'",
                path=path,
            )
        # (tuples: a long join of them lets go of the GIL, _engine/join.pyx)
        self._rest = tuple([b"" if f & FLAG_SKIP else _as_bytes(t) for t, f in zip(renderings.rest, flags)])
        self._first = (
            None
            if renderings.first is None
            else tuple([b"" if f & FLAG_SKIP else _as_bytes(t) for t, f in zip(renderings.first, flags)])
        )
        self._keeps_first = bytes(1 if f & (FLAG_KEEP_FIRST | FLAG_SKIP) else 0 for f in flags)
        self._table = PieceTable(self._rest, first_pieces=self._first, flags=flags, mode="bytes", byte_rule="ignore")
        self.spec = TokenizerSpec("bbpe", {"model": path}, options)

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> BbpeTokenizer:
        reject_unknown_options(spec.options, ["special_ids"], "bbpe")
        if set(spec.files) != {"model"}:
            raise SpecError(f"bbpe: expected one file, role 'model' (the bbpe.model), got roles {sorted(spec.files)}")
        tokenizer = cls(spec.file("model"), spec.options.get("special_ids"))
        tokenizer.spec = spec
        return tokenizer

    def decode(self, ids: Sequence[int]) -> str:
        """icefall's smart_byte_decode(sp.decode(ids)) of the ids left after special_ids."""
        joined: bytes = join_pieces(self._rest, ids, self._first, self._keeps_first)
        return joined.decode("utf-8", "ignore")

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """icefall's encode, sp.encode(byte_encode(text)); a special id's spelling in the text
        ("<sos/eos>") is that id unless split_special_tokens. The model has no bos/eos to add."""
        text = checked_text(text, "bbpe")
        processor = self._sp

        def plain(stretch: str) -> list[int]:
            ids: list[int] = processor.encode(byte_encode(stretch))
            return ids

        return self.encode_with_special_text(text, plain, split_special_tokens)

    def _keep_specials(self) -> Tokenizer:
        """The special ids rendered as their pieces' bytes ("<blk>", "<unk>") in the stream."""
        spelled = {i: self._sp.id_to_piece(i) for i in self._special}
        return BbpeTokenizer(self._path, spelled=spelled)


# -- recognising the files (the registry's detector for this kind) ----------------------------

#: Characters of the alphabet that stand for UTF-8 continuation bytes (0x80-0xBF): plain text
#: models never have them all, a byte-level model's pieces are full of them.
_CONTINUATION = frozenset(BYTE_TO_CHAR[0x80:0xC0])
_ALPHABET = frozenset(BYTE_TO_CHAR) | {"▁"}


def _is_byte_level(processor: Any, path: str) -> tuple[bool, str]:
    pieces = piece_strings(processor, path)  # a corrupt piece: MalformedAssetError naming the file
    ordinary = [
        piece
        for i, piece in enumerate(pieces)
        if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i))
        and not piece.startswith("<")
    ]
    outside = next((p for p in ordinary if not set(p) <= _ALPHABET), None)
    if outside is not None:
        return False, f"piece {outside!r} has characters outside icefall's byte alphabet"
    continuation = sum(1 for p in ordinary if set(p) & _CONTINUATION)
    if continuation == 0:
        return False, "no piece spells a UTF-8 continuation byte"
    return True, f"every piece is in icefall's byte alphabet ({continuation} spell UTF-8 continuation bytes)"


def _found(path: str, order: int) -> Detected | None:
    name = os.path.basename(path)
    try:
        import sentencepiece as spm
    except ImportError:
        if name != "bbpe.model":
            return None
        found = Found("bbpe", {"model": path}, source=name, order=order)
        found.evidence.append(("kind", "bbpe: named bbpe.model (sentencepiece is not installed, so not opened)"))
        return found
    processor = spm.SentencePieceProcessor()
    try:
        processor.Load(path)
    except (OSError, RuntimeError):
        return None  # the sentencepiece detector says why
    byte_level, why = _is_byte_level(processor, path)
    if not byte_level:
        return SetAside(name, f"a SentencePiece model, not byte-level BPE: {why}")
    found = Found("bbpe", {"model": path}, source=name, order=order)
    found.evidence.append(("kind", f"bbpe: {name} is a SentencePiece model and {why}"))
    return found


def detect(path: str) -> list[Detected]:
    """An icefall byte-level BPE model: a *.model whose pieces are icefall's byte alphabet
    (bbpe.model first)."""
    if not os.path.isdir(path):
        one = _found(path, 0) if path.endswith(".model") else None
        return [] if one is None else [one]
    models = [n for n in folder_names(path) if n.endswith(".model")]
    ordered = sorted(models, key=lambda n: (n != "bbpe.model", n))
    finds = [_found(os.path.join(path, name), sub) for sub, name in enumerate(ordered)]
    return [f for f in finds if f is not None]


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: before sentencepiece: a
# model in icefall's byte alphabet is SentencePiece's file too.
KIND = KindRecord(
    "bbpe", BbpeTokenizer.from_spec, detect, precedence=45, backend="sentencepiece", extra="sentencepiece"
)
