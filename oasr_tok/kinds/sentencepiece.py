"""sentencepiece: ids are SentencePiece piece ids; SentencePiece itself is the oracle.

`decode` equals SentencePiece's own decode of the ids left after stripping `special_ids`
(option, default [0, 1, 2]), stated over the per-id renderings below (which is faster than
asking SentencePiece, whose decode builds a proto of every piece); `encode` is its encode (no
BOS/EOS).

Streaming runs on the compiled PieceTable (constant work per token, no call into
SentencePiece per token). SentencePiece's decode (sentencepiece_processor.cc, `Decode`) is
piece-local except for two rules, and the table is built from per-id facts asked of the
loaded model, never from piece spellings:

* Byte pieces (`is_byte`) are gathered into runs (a run is cut by any non-byte piece that
  survives special stripping, a control piece included) and decoded one character at a
  time: a valid character goes on its last byte piece, every invalid byte renders one
  U+FFFD on its own piece. PieceTable's "per_byte" rule; a valid prefix of a character is
  held back until the run says what it is.
* The leading-`▁` rule: while nothing visible has been output, a piece's leading `▁` is
  dropped (how many ids keep the rule in force depends on add_dummy_prefix and
  remove_extra_whitespaces, and on the SentencePiece version). What each id renders first
  is SentencePiece's decode of that id alone; what it renders afterwards is its surface
  after a primer piece that has ended the rule; whether it ends the rule is read from the
  surface a probe piece gets after it. All three are asked of SentencePiece per id, in
  batches, when the tokenizer is built; the build fails loudly if SentencePiece's answers
  are not piece-local (a model with a denormalizer, which rewrites the decoded text as a
  whole, is refused up front).

`token_pieces` are SentencePiece's own per-piece surfaces (specials get ""). The compiled
table gives exactly those whenever no byte run turns out invalid; when one does, the
table's streaming attribution (the U+FFFD of a broken prefix lands on the token that broke
it) differs from SentencePiece's (on the invalid byte itself), so that rare case asks
SentencePiece for the surfaces.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from ._common import byte_piece_value, checked_text, reject_unknown_options, special_ids_option
from .api import (
    FLAG_BYTE,
    FLAG_KEEP_FIRST,
    FLAG_SKIP,
    SPEC_FILE,
    Detected,
    Found,
    KindRecord,
    MalformedAssetError,
    PieceTable,
    ResolveError,
    SetAside,
    SpecError,
    SpecialTokens,
    SpecialTokensBuilder,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    check_ids,
    existing_file,
    folder_names,
    is_archive_ref,
    join_pieces,
    markup_evidence,
    on_disk,
    read_member,
    summarise,
)

__all__ = ["SentencePieceTokenizer", "load_processor"]


DEFAULT_SPECIAL_IDS = (0, 1, 2)


def load_processor(path: str) -> Any:
    """A `sentencepiece.SentencePieceProcessor` for the model file at `path`.
    AssetNotFoundError if there is no such file; MalformedAssetError (naming the file) if
    SentencePiece cannot load it."""
    import sentencepiece

    existing_file(path, "SentencePiece model")
    processor = sentencepiece.SentencePieceProcessor()
    try:
        if is_archive_ref(path):  # a member of a .nemo archive: loaded from its bytes
            processor.LoadFromSerializedProto(read_member(path, "SentencePiece model"))
        else:
            processor.LoadFromFile(on_disk(path))
    except (RuntimeError, OSError) as exc:
        raise MalformedAssetError(
            f"{path}: not a SentencePiece model SentencePiece can load: {exc}", path=path
        ) from None
    if processor.get_piece_size() <= 0:
        raise MalformedAssetError(f"{path}: the SentencePiece model has no pieces", path=path)
    piece_strings(processor, path)
    return processor


def piece_strings(processor: Any, path: str) -> list[str]:
    """Every piece of the loaded model as a str. SentencePiece loads a model whose piece
    bytes are not UTF-8 (one flipped bit does it) and fails later, in whatever call meets the
    piece, with a bare UnicodeDecodeError: this finds it up front and names file and id."""
    size = processor.get_piece_size()
    try:
        return list(processor.id_to_piece(list(range(size))))
    except UnicodeDecodeError:
        for token_id in range(size):
            try:
                processor.id_to_piece(token_id)
            except UnicodeDecodeError:
                raise MalformedAssetError(
                    f"{path}: SentencePiece piece {token_id} is not valid UTF-8 (a corrupt model file)", path=path
                ) from None
        raise


# -- reading two facts the Python API does not expose ------------------------------------------


def _fields(message: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of a serialized protobuf message; value is an int
    or, for length-delimited fields, the bytes. Raises ValueError on a truncated message."""
    pos, end = 0, len(message)

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while True:
            if pos >= end or shift > 63:
                raise ValueError("truncated varint")
            byte = message[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while pos < end:
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise ValueError("truncated fixed field")
            yield number, wire, int.from_bytes(message[pos : pos + size], "little")
            pos += size
        elif wire == 2:
            size = varint()
            if pos + size > end:
                raise ValueError("truncated length-delimited field")
            yield number, wire, message[pos : pos + size]
            pos += size
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _has_denormalizer(serialized: bytes) -> bool:
    """Whether ModelProto.denormalizer_spec (field 5) has a non-empty precompiled_charsmap
    (field 2): the condition under which SentencePiece rewrites its decoded text as a whole."""
    for number, wire, value in _fields(serialized):
        if number == 5 and wire == 2 and isinstance(value, bytes):  # wire type 2 is always bytes
            for inner, inner_wire, charsmap in _fields(value):
                if inner == 2 and inner_wire == 2 and charsmap:
                    return True
    return False


def refuse_denormalizer(processor: Any, path: str) -> None:
    """MalformedAssetError for a model with a denormalizer (_has_denormalizer)."""
    if _has_denormalizer(processor.serialized_model_proto()):
        raise MalformedAssetError(
            f"{path}: this SentencePiece model has a denormalizer, which rewrites decoded text as a whole; "
            "oasr_tok cannot stream it token by token and refuses it rather than render it wrongly",
            path=path,
        )


def model_special_tokens(processor: Any, vocabulary: Mapping[str, int], special: frozenset[int]) -> SpecialTokens:
    """The special tokens a SentencePiece model states (its bos/eos/unk/pad ids)."""
    builder = SpecialTokensBuilder(processor.get_piece_size())
    for role, token_id in (
        ("bos", processor.bos_id()),
        ("eos", processor.eos_id()),
        ("unk", processor.unk_id()),
        ("pad", processor.pad_id()),
    ):
        # -1: the model has no such piece; the conventional spellings may still name one
        # (icefall's <sos/eos> is a user-defined piece with bos_id -1).
        if token_id >= 0:
            builder.set(role, token_id, f"the SentencePiece model's {role}_id ({processor.id_to_piece(token_id)!r})")
    builder.add_bos = processor.bos_id() >= 0
    return builder.build(vocabulary, special)


def model_vocabulary(processor: Any) -> dict[str, int]:
    """piece -> id (the lowest id of a piece spelled twice)."""
    to_piece = processor.id_to_piece
    table: dict[str, int] = {}
    for token_id in range(processor.get_piece_size() - 1, -1, -1):
        table[to_piece(token_id)] = token_id
    return table


# -- the table, asked of SentencePiece -----------------------------------------------------------


class Renderings(NamedTuple):
    """What each id renders, as SentencePiece decodes it (see build_renderings)."""

    rest: list[str]  # once the leading rule has ended ("" for byte and special ids)
    first: list[str] | None  # while it is in force; None: the model has no such rule
    flags: bytes  # per id: FLAG_SKIP, FLAG_BYTE, FLAG_KEEP_FIRST (the PieceTable flags)
    values: bytes  # per id: the byte of a byte piece

    def table(self) -> PieceTable:
        return PieceTable(
            self.rest, first_pieces=self.first, flags=self.flags, byte_values=self.values, byte_rule="per_byte"
        )


def build_piece_table(
    processor: Any, special: frozenset[int], path: str = "<model>", spelled: Mapping[int, str] | None = None
) -> PieceTable:
    """The PieceTable that renders ids exactly as `processor.decode` does after `special` is
    stripped (build_renderings)."""
    return build_renderings(processor, special, path, spelled).table()


def build_renderings(
    processor: Any, special: frozenset[int], path: str = "<model>", spelled: Mapping[int, str] | None = None
) -> Renderings:
    """What each id renders when `processor.decode` decodes the ids left after `special` is
    stripped. Every per-id fact comes from the processor (see the module docstring).
    `spelled` (the with_specials() view): ids rendered as the given text, which is visible
    and so ends the leading-space rule, and cuts byte runs."""
    size = processor.get_piece_size()
    decode = processor.decode
    flags = bytearray(size)
    values = bytearray(size)
    text_ids: list[int] = []
    for token_id in range(size):
        if processor.is_byte(token_id):
            value = byte_piece_value(processor.id_to_piece(token_id))
            if value is None:
                raise MalformedAssetError(
                    f"{path}: byte piece {token_id} is spelled {processor.id_to_piece(token_id)!r}, not <0xNN>",
                    path=path,
                )
            flags[token_id] = FLAG_BYTE
            values[token_id] = value
        else:
            text_ids.append(token_id)

    # What each id renders while the leading rule is in force: SentencePiece's decode of it alone.
    alone = decode([[i] for i in text_ids]) if text_ids else []
    first = [""] * size
    for token_id, text in zip(text_ids, alone):
        first[token_id] = text

    # A primer: an ordinary piece that renders something when first. It ends the rule under
    # every SentencePiece version (checked below with the probe).
    primer = next(
        (i for i in text_ids if first[i] and not processor.is_control(i) and not processor.is_unknown(i)),
        None,
    )
    rest = list(first)
    if primer is not None:
        head = len(first[primer])
        for token_id, text in zip(text_ids, decode([[primer, i] for i in text_ids])):
            if text[:head] != first[primer]:
                raise MalformedAssetError(
                    f"{path}: SentencePiece's decode is not piece-local for this model", path=path
                )
            rest[token_id] = text[head:]

    # A probe: an id that renders differently while the rule is in force. None: no rule to track.
    probe = next((i for i in text_ids if first[i] != rest[i]), None)
    if probe is None:
        first_pieces = None
    else:
        first_pieces = first
        # Whether id i ends the rule: the surface the probe gets after it.
        everything = list(range(size))
        before = decode([[i] for i in everything])
        after = decode([[i, probe] for i in everything])
        for token_id, head_text, text in zip(everything, before, after):
            surface = text[len(head_text) :] if text.startswith(head_text) else None
            if surface == rest[probe]:
                continue
            if surface == first[probe]:
                flags[token_id] |= FLAG_KEEP_FIRST
                continue
            raise MalformedAssetError(
                f"{path}: SentencePiece's decode is not piece-local for this model (id {token_id})", path=path
            )
        if primer is not None and flags[primer] & FLAG_KEEP_FIRST:
            raise MalformedAssetError(
                f"{path}: no piece of this model ends SentencePiece's leading-space rule", path=path
            )

    for token_id in special:
        flags[token_id] = FLAG_SKIP
    for token_id, text in (spelled or {}).items():
        flags[token_id] = 0
        rest[token_id] = text
        if first_pieces is not None:
            first_pieces[token_id] = text
    return Renderings(rest, first_pieces, bytes(flags), bytes(values))


class SentencePieceModel:
    """What a kind over a loaded SentencePiece model (`self._sp`, its special ids `self._special`,
    its PieceTable `self._table`) says of its vocabulary: shared by sentencepiece and bbpe."""

    _sp: Any
    _special: frozenset[int]
    _table: PieceTable

    @property
    def vocab_size(self) -> int:
        return self._table.vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    @property
    def processor(self) -> Any:
        """The `sentencepiece.SentencePieceProcessor` underneath."""
        return self._sp

    def id_to_piece(self, token_id: int) -> str:
        """The model's own spelling of `token_id` ("▁the", "<0xE4>", "<unk>"; bbpe: "▁ƋŠŊ")."""
        piece: str = self._sp.id_to_piece(self.check_ids([token_id])[0])  # type: ignore[attr-defined]
        return piece

    def _special_tokens(self) -> SpecialTokens:
        return model_special_tokens(self._sp, self.vocabulary, self._special)  # type: ignore[attr-defined]

    def _vocabulary(self) -> dict[str, int]:
        return model_vocabulary(self._sp)


class SentencePieceTokenizer(TableMethods, SentencePieceModel, Tokenizer):
    """A SentencePiece model (.model). Options: `special_ids` (default [0, 1, 2])."""

    supports_encode = True
    _table: PieceTable

    def __init__(self, path: str, special_ids: Sequence[int] | None = None) -> None:
        self._sp = load_processor(path)
        refuse_denormalizer(self._sp, path)
        options = {} if special_ids is None else {"special_ids": special_ids}
        self._special = special_ids_option(options, DEFAULT_SPECIAL_IDS, self._sp.get_piece_size(), "sentencepiece")
        # decode_incremental is TableMethods' (the compiled engine); token_pieces is below.
        renderings = build_renderings(self._sp, self._special, path)
        self._table = renderings.table()
        self._skip = bytes(1 if i in self._special else 0 for i in range(self._sp.get_piece_size()))
        self._decoding = _DecodeTables(renderings)
        if special_ids is not None:
            options = {"special_ids": list(special_ids)}
        self.spec = TokenizerSpec("sentencepiece", {"model": path}, options)

    #: A NeMo ChatTemplateMixin-style template (option `chat_template`), used by
    #: apply_chat_template when no other template is given (see docs/prompts.md).
    nemo_chat_template: Mapping[str, Any] | None = None

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> SentencePieceTokenizer:
        reject_unknown_options(spec.options, ["special_ids", "chat_template"], "sentencepiece")
        template = spec.options.get("chat_template")
        if template is not None and not (isinstance(template, dict) and isinstance(template.get("roles"), dict)):
            raise SpecError("sentencepiece: option chat_template must be a NeMo-style dict with a 'roles' dict")
        tokenizer = cls(spec.file("model"), spec.options.get("special_ids"))
        tokenizer.nemo_chat_template = template
        tokenizer.spec = spec
        return tokenizer

    def decode(self, ids: Sequence[int]) -> str:
        """SentencePiece's decode of the ids left after stripping special_ids, stated over the
        per-id renderings (module docstring): while the leading rule is in force an id renders
        its first surface, and the first id that does not keep the rule ends it; after that each
        id renders its surface. A byte piece is its byte; the UTF-8 of everything is decoded
        with one U+FFFD per invalid byte. (Faster than asking SentencePiece: its decode builds
        a proto of every piece. tests/kinds/test_sentencepiece.py checks the two are equal.)"""
        tables = self._decoding
        joined = None
        if not tables.exotic:
            joined = join_pieces(tables.rest, ids, tables.first, tables.keeps_first, stops=tables.stops)
        if joined is None:
            # An id that renders nothing but cuts a byte run (see _DecodeTables): SentencePiece.
            text: str = self._sp.decode(check_ids(ids, len(self._skip), self._skip))
            return text
        return joined.decode("utf-8", "oasr_tok.per_byte")

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """SentencePiece's encode of `text`. The spelling of a special id in the text ("<s>")
        is that id unless split_special_tokens (SentencePiece itself would spell it out
        piece by piece); add_special_tokens=True puts the model's bos in front when it has
        one (as Llama-style tokenizers over such models do; no eos)."""
        text = checked_text(text, "sentencepiece")
        ids = self.encode_with_special_text(text, self._sp.encode, split_special_tokens)
        return self.add_bos_eos(ids) if add_special_tokens else ids

    # -- the prompt side (docs/prompts.md) ---------------------------------------------------

    def _keep_specials(self) -> Tokenizer:
        return SentencePieceWithSpecials(self)

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        """SentencePiece's own surface of each piece; "" for special ids."""
        pieces = self._table.token_pieces(ids)
        if "\ufffd" not in "".join(pieces):
            # No byte run was invalid, so the table attributed every character exactly as
            # SentencePiece does (on its last byte piece).
            return pieces
        ids = self.check_ids(ids)
        special = self._special
        surfaces = iter(_surfaces(self._sp.decode([i for i in ids if i not in special], out_type="serialized_proto")))
        return ["" if i in special else next(surfaces) for i in ids]


class _DecodeTables:
    """The renderings as UTF-8, for decode: special ids render b"" and keep the leading rule in
    force (they are stripped before SentencePiece sees the ids)."""

    def __init__(self, renderings: Renderings) -> None:
        flags, values = renderings.flags, renderings.values

        def utf8(texts: list[str]) -> tuple[bytes, ...]:  # (a tuple: a long join lets go of the GIL)
            return tuple(
                [
                    b"" if f & FLAG_SKIP else bytes([values[i]]) if f & FLAG_BYTE else texts[i].encode("utf-8")
                    for i, f in enumerate(flags)
                ]
            )

        self.rest = utf8(renderings.rest)
        self.first = None if renderings.first is None else utf8(renderings.first)
        self.keeps_first = bytes(1 if f & (FLAG_KEEP_FIRST | FLAG_SKIP) else 0 for f in flags)
        #: Ids that render nothing but are not stripped (an unstripped control piece, an empty
        #: unknown surface): they still cut a byte run in two, which joined UTF-8 cannot say.
        #: (While the leading rule is in force more ids render nothing, "▁" alone; no byte run
        #: can be open then, as a byte piece always ends the rule, or `exotic` holds.)
        self.stops = bytes(
            1 if not f & (FLAG_SKIP | FLAG_BYTE) and not self.rest[i] else 0 for i, f in enumerate(flags)
        )
        #: A model whose byte pieces keep the leading rule: SentencePiece decodes all its ids.
        self.exotic = any(f & FLAG_BYTE and f & FLAG_KEEP_FIRST for f in flags)


def _surfaces(serialized: bytes) -> list[str]:
    """The surface (field 3) of every piece (field 2) of a serialized SentencePieceText."""
    out = []
    for number, wire, piece in _fields(serialized):
        if number == 2 and wire == 2 and isinstance(piece, bytes):  # wire type 2 is always bytes
            surface = b""
            for inner, inner_wire, value in _fields(piece):
                if inner == 3 and inner_wire == 2 and isinstance(value, bytes):
                    surface = value
            out.append(surface.decode("utf-8"))
    return out


class SentencePieceWithSpecials(TableMethods, Tokenizer):
    """`SentencePieceTokenizer.with_specials()`: the special ids rendered as their pieces
    ("<s>", "<sos/eos>") instead of dropped. Between them SentencePiece decodes as usual; a
    special piece is visible text, so it ends SentencePiece's leading-space rule (the text
    after "<s>" keeps its space, as a Llama-style tokenizer.json decodes it) and cuts byte
    runs. special_ids is empty."""

    supports_encode = True

    def __init__(self, parent: SentencePieceTokenizer) -> None:
        self._parent = parent
        sp = parent.processor
        self._spelled = {i: sp.id_to_piece(i) for i in parent.special_ids}
        self._table = build_piece_table(sp, frozenset(), spelled=self._spelled)
        # A piece that renders text and ends the leading rule, to decode a run that follows
        # visible text (decode [primer] + run, cut the primer's text off).
        self._primer = next(
            (
                i
                for i in range(parent.vocab_size)
                if i not in self._spelled
                and sp.decode([i])
                and not sp.is_control(i)
                and not sp.is_unknown(i)
                and not sp.is_byte(i)
            ),
            None,
        )

    @property
    def vocab_size(self) -> int:
        return self._parent.vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset()

    def decode(self, ids: Sequence[int]) -> str:
        sp, spelled, primer = self._parent.processor, self._spelled, self._primer
        out: list[str] = []
        run: list[int] = []

        def flush() -> None:
            if not run:
                return
            if out and any(out) and primer is not None:
                head = sp.decode([primer])
                out.append(sp.decode([primer, *run])[len(head) :])
            else:
                out.append(sp.decode(run))
            run.clear()

        for token_id in self.check_ids(ids):
            text = spelled.get(token_id)
            if text is None:
                run.append(token_id)
            else:
                flush()
                out.append(text)
        flush()
        return "".join(out)

    def id_to_piece(self, token_id: int) -> str:
        return self._parent.id_to_piece(token_id)

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        return self._parent.encode(text, add_special_tokens, split_special_tokens=split_special_tokens)


# -- recognising the files (the registry's detector for this kind) ----------------------------


def _found(path: str, order: int) -> Detected:
    """A find for the *.model at `path`, or why it is not a SentencePiece model."""
    name = os.path.basename(path)
    found = Found("sentencepiece", {"model": path}, source=name, order=order)
    try:
        import sentencepiece as spm
    except ImportError:
        found.evidence.append(
            (
                "kind",
                "sentencepiece: a *.model file (the sentencepiece package is not installed, so "
                "the model was not opened)",
            )
        )
        found.evidence.append(("special_ids", "the kind's default [0, 1, 2] (model not inspected)"))
        return found
    processor = spm.SentencePieceProcessor()
    try:
        processor.Load(path)
    except (OSError, RuntimeError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return SetAside(name, f"not a SentencePiece model ({why})")
    size = processor.get_piece_size()
    pieces = piece_strings(processor, path)
    control = [i for i in range(size) if processor.is_control(i)]
    unknown = [i for i in range(size) if processor.is_unknown(i)]
    markup, why = markup_evidence(pieces)
    special = sorted(set(control) | set(unknown) | set(markup))
    found.options["special_ids"] = special
    found.evidence.append(("kind", f"sentencepiece: the file loads as a SentencePiece model with {size} pieces"))
    found.evidence.append(
        (
            "special_ids",
            f"{special if len(special) <= 8 else summarise(special)}: control pieces "
            f"[{summarise(control)}], unknown [{summarise(unknown)}] (asked of SentencePiece); markup by name: {why}",
        )
    )
    return found


def detect(path: str) -> list[Detected]:
    """A SentencePiece model: bpe.model, then tokenizer.model, then a single *.model. Several
    *.model and none of those names is ambiguous: an error, unless a tokenizer_spec.json beside
    them names what to use (an aggregate's per-language models)."""
    if not os.path.isdir(path):
        return [_found(path, 0)] if path.endswith(".model") else []
    names = folder_names(path)
    models = [n for n in names if n.endswith(".model")]
    preferred = [n for n in ("bpe.model", "tokenizer.model") if n in models]
    if len(models) > 1 and not preferred:
        if SPEC_FILE in names:
            # The explicit spec decides; the models are reported, not guessed between.
            return [SetAside(n, f"one of several SentencePiece models; {SPEC_FILE} names what to use") for n in models]
        raise ResolveError(
            f"{path}: several SentencePiece model candidates and none is bpe.model or tokenizer.model: "
            f"{', '.join(models)}; write a {SPEC_FILE} naming the one to use"
        )
    ordered = preferred + [n for n in models if n not in preferred]
    return [_found(os.path.join(path, name), sub) for sub, name in enumerate(ordered)]


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: the SentencePiece models
# that are not icefall's byte-level ones, before the text tables.
KIND = KindRecord(
    "sentencepiece",
    SentencePieceTokenizer.from_spec,
    detect,
    precedence=50,
    backend="sentencepiece",
    extra="sentencepiece",
)
