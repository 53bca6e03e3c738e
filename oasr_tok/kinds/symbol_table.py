"""symbol_table: an id -> piece map read from a WeNet units.txt or icefall/sherpa tokens.txt.

Rendering is piece-local: `▁` is a word boundary rendered as a space, `<0xNN>` byte pieces
are reassembled into UTF-8 (one U+FFFD per maximal invalid subpart), special ids render
nothing, and the leading whitespace of the transcript is dropped. Said as one rule (what
`decode` does): each id stands for bytes (a byte piece for its byte, a special id for none,
any other piece for its text in UTF-8); the transcript is their concatenation decoded as
lossy UTF-8, leading whitespace dropped. Decoding the whole at once is decoding each byte run
on its own, because a text piece is valid UTF-8, which never starts with a continuation byte,
and no piece is empty (an empty piece would end a byte run without adding a byte). Streaming and token pieces
run on the compiled PieceTable (constant work per token); `decode` below is the plain
Python statement of the same rules and the oracle the compiled paths are tested against.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from typing import Any

from ._common import byte_piece_value, checked_text, reject_unknown_options, special_ids_option
from ._units import unit_splitter
from .api import (
    FLAG_BYTE,
    FLAG_SKIP,
    TIKTOKEN_SET_ASIDE,
    Detected,
    EncodeError,
    Found,
    KindRecord,
    MalformedAssetError,
    PieceTable,
    SetAside,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    folder_names,
    is_tiktoken_ranks,
    join_pieces,
    markup_evidence,
    plain_text_candidate,
    read_lines,
    short_repr,
    sniff_text_table,
    summarise,
)

__all__ = ["SymbolTableTokenizer", "read_symbol_table"]


WORD_BOUNDARY = "\u2581"


def read_symbol_table(path: str) -> list[str]:
    """The pieces of a `piece id` table, indexed by id. A line holding only an id is a space
    (sherpa writes the space piece that way). Gaps, duplicate ids and malformed lines raise
    MalformedAssetError naming the file and line."""
    by_id: dict[int, tuple[str, int]] = {}
    for number, line in enumerate(read_lines(path, "symbol table"), start=1):
        if not line.strip():
            continue
        fields = line.rsplit(None, 1)
        # A line that is only an id: the piece is a space that the split swallowed.
        piece, raw_id = (" ", fields[0]) if len(fields) == 1 else fields
        try:
            token_id = int(raw_id)
            if token_id < 0 or not raw_id.isdigit():
                raise ValueError
        except ValueError:
            raise MalformedAssetError(
                f"{path}:{number}: expected 'piece id' with a non-negative integer id, got {short_repr(line)}",
                path=path,
                line=number,
            ) from None
        if token_id in by_id:
            raise MalformedAssetError(
                f"{path}:{number}: id {token_id} is given twice (first on line {by_id[token_id][1]})",
                path=path,
                line=number,
            )
        by_id[token_id] = (piece, number)
    if not by_id:
        raise MalformedAssetError(f"{path}: the symbol table is empty", path=path)
    size = max(by_id) + 1
    if len(by_id) != size:
        missing = next(i for i in range(size) if i not in by_id)
        after = max((n for i, (_, n) in by_id.items() if i < missing), default=0)
        raise MalformedAssetError(
            f"{path}:{after + 1}: ids must run 0 ... {size - 1} without gaps, but id {missing} is missing",
            path=path,
            line=after + 1,
        )
    return [by_id[i][0] for i in range(size)]


class SymbolTableTokenizer(TableMethods, Tokenizer):
    """A symbol table. Options: `special_ids` (default [0, 1, 2]); `modeling_unit` (cjkchar, bpe,
    cjkchar+bpe, fpinyin, ppinyin: how the model's units were made, which lets it encode
    hotwords as sherpa-onnx's text2token does; bpe ones need the file role `bpe_model`).
    Without `modeling_unit` it is decode-only."""

    supports_encode = False

    def __init__(self, pieces: Sequence[str], special_ids: Collection[int] | None = None) -> None:
        self._symbols = list(pieces)
        size = len(self._symbols)
        self._special = special_ids_option(
            {} if special_ids is None else {"special_ids": list(special_ids)}, (0, 1, 2), size, "symbol_table"
        )
        self._rendered = [piece.replace(WORD_BOUNDARY, " ") for piece in self._symbols]
        for token_id, piece in enumerate(self._symbols):
            if not piece and token_id not in self._special:
                raise MalformedAssetError(
                    f"symbol_table: piece {token_id} is empty (a table piece is at least one character)"
                )
        self._byte_of: dict[int, int] = {}
        flags = bytearray(size)
        values = bytearray(size)
        for token_id, piece in enumerate(self._symbols):
            value = byte_piece_value(piece)
            if value is not None:
                self._byte_of[token_id] = value
                flags[token_id] |= FLAG_BYTE
                values[token_id] = value
        for token_id in self._special:
            flags[token_id] = FLAG_SKIP
            self._byte_of.pop(token_id, None)
        self._utf8 = tuple(  # (a tuple: a long join of it lets go of the GIL, _engine/join.pyx)
            [
                b"" if i in self._special else bytes([self._byte_of[i]]) if i in self._byte_of else _utf8(text, i)
                for i, text in enumerate(self._rendered)
            ]
        )
        # decode_incremental and token_pieces are TableMethods' (the compiled engine).
        self._table = PieceTable(self._rendered, flags=bytes(flags), byte_values=bytes(values), lead="whitespace")

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> SymbolTableTokenizer:
        reject_unknown_options(spec.options, ["special_ids", "modeling_unit"], "symbol_table")
        if "units" not in spec.files and "sentencepiece_model" in spec.files:
            # The legacy table made of a SentencePiece model's pieces, as its spec says.
            return cls.from_sentencepiece_model(spec.files["sentencepiece_model"], dict(spec.options))
        pieces = read_symbol_table(spec.file("units"))
        tokenizer = cls(pieces, special_ids_option(spec.options, (0, 1, 2), len(pieces), "symbol_table"))
        unit = spec.options.get("modeling_unit")
        if unit is not None:
            processor = None
            if "bpe" in str(unit) and "bpe_model" in spec.files:
                from .sentencepiece import load_processor

                processor = load_processor(spec.files["bpe_model"])
            tokenizer._units = unit_splitter(unit, processor)
            tokenizer.supports_encode = True
        tokenizer.spec = spec
        return tokenizer

    _units: Callable[[str], list[str]] | None = None

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """The ids of `text`'s modeling units (option modeling_unit), as sherpa-onnx's
        text2token makes them; EncodeError naming a unit the table lacks."""
        if self._units is None:
            return super().encode(text, add_special_tokens, split_special_tokens=split_special_tokens)
        text = checked_text(text, "symbol_table")
        table = self.__dict__.get("_unit_ids")
        if table is None:
            table = self.__dict__["_unit_ids"] = {piece: i for i, piece in reversed(list(enumerate(self._symbols)))}
        ids = []
        for unit in self._units(text):
            token_id = table.get(unit)
            if token_id is None:
                raise EncodeError(f"symbol_table: {unit!r} (in {text!r}) is not a unit of this table")
            ids.append(token_id)
        return ids

    @classmethod
    def from_sentencepiece_model(cls, path: str, options: dict[str, Any] | None = None) -> SymbolTableTokenizer:
        """The legacy path: a symbol table made of a SentencePiece model's pieces."""
        from .sentencepiece import load_processor

        processor = load_processor(path)
        pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
        options = dict(options or {})
        tokenizer = cls(pieces, special_ids_option(options, (0, 1, 2), len(pieces), "symbol_table"))
        tokenizer.spec = TokenizerSpec("symbol_table", {"sentencepiece_model": path}, options)
        return tokenizer

    @property
    def vocab_size(self) -> int:
        return len(self._symbols)

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    def id_to_piece(self, token_id: int) -> str:
        """The raw symbol of `token_id` as the table spells it."""
        return self._symbols[self.check_ids([token_id])[0]]

    def decode(self, ids: Sequence[int]) -> str:
        joined: bytes = join_pieces(self._utf8, ids)  # (reads and checks the ids as check_ids does)
        return joined.decode("utf-8", "replace").lstrip()

    def _keep_specials(self) -> SymbolTableTokenizer:
        # Rendering is piece-local: the view is the same table with nothing stripped.
        return SymbolTableTokenizer(self._symbols, special_ids=[])


def _utf8(text: str, token_id: int) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedAssetError(
            f"symbol_table: piece {token_id} ({text!r}) is not valid text (a lone surrogate)"
        ) from None


# -- recognising the files (the registry's detector for this kind) ----------------------------

_TABLE_NAMES = ("units.txt", "tokens.txt", "words.txt")


def _table_layout(pieces: list[str]) -> str:
    if pieces[:3] == ["<blk>", "<sos/eos>", "<unk>"]:
        return "icefall/sherpa layout (<blk> 0, <sos/eos> 1, <unk> 2)"
    if pieces[:2] == ["<blank>", "<unk>"] and pieces[-1] == "<sos/eos>":
        return f"WeNet layout (<blank> 0, <unk> 1, <sos/eos> last at {len(pieces) - 1})"
    if pieces[:1] == ["<blank>"] and "<sos>" in pieces and "<eos>" in pieces:
        return "WeNet Paraformer layout (<blank> 0, <sos>/<eos>, <unk>)"
    if pieces[:1] == ["<eps>"]:
        return "Kaldi/k2 word-table layout (<eps> 0)"
    return "no known layout; special ids from the symbols themselves"


def _found(path: str, order: int) -> Found:
    pieces = read_symbol_table(path)
    special, why = markup_evidence(pieces)
    found = Found("symbol_table", {"units": path}, {"special_ids": special}, source=os.path.basename(path), order=order)
    found.evidence.append(("kind", f"symbol_table: {len(pieces)} 'piece id' lines; {_table_layout(pieces)}"))
    found.evidence.append(("special_ids", f"{summarise(special)}: {why}"))
    continuation = sum(1 for p in pieces if p.endswith("@@"))
    if continuation:
        found.notes.append(
            f"{continuation} pieces end in @@ (a Paraformer vocabulary): symbol_table renders them literally; "
            "FunASR's rules need the funasr_char kind and its tokens.json / one-per-line tokens.txt"
        )
    if os.path.basename(path) == "words.txt":
        found.notes.append("words.txt is a word table: symbol_table joins its entries without spaces")
    return found


def detect(path: str) -> list[Detected]:
    """A unit table of `piece id` lines: units.txt, then tokens.txt, then words.txt (a tiktoken
    rank file under those names is set aside: it is whisper's); a single text file of them.
    Markup symbols, never positions, make the special ids."""
    if not os.path.isdir(path):
        if not plain_text_candidate(path):
            return []
        form = sniff_text_table(path)
        if form == "table":
            return [_found(path, 0)]
        if form == "unknown":
            return [SetAside(os.path.basename(path), "neither 'piece id' lines nor one token per line")]
        return []  # one token per line: the funasr_char kind's to judge
    names = folder_names(path)
    out: list[Detected] = []
    for sub, name in enumerate(n for n in _TABLE_NAMES if n in names):
        at = os.path.join(path, name)
        if is_tiktoken_ranks(at):
            out.append(SetAside(name, TIKTOKEN_SET_ASIDE))
            continue
        form = sniff_text_table(at)
        if form == "table":
            out.append(_found(at, sub))
        elif form == "list" and name != "tokens.txt":  # a one-per-line tokens.txt is funasr_char's to judge
            out.append(SetAside(name, "one token per line: a unit table needs 'piece id' lines"))
        elif form == "unknown":
            out.append(SetAside(name, "neither 'piece id' lines nor one token per line"))
    return out


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: the `piece id` unit tables,
# after FunASR's token lists.
KIND = KindRecord("symbol_table", SymbolTableTokenizer.from_spec, detect, precedence=70)
