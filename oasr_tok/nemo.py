"""A NeMo-style face over any oasr_tok tokenizer: the six conversions of NeMo's
``TokenizerSpec`` (text/tokens/ids in every direction), ``vocab_size`` and the special-id
properties, so pipelines written against NeMo's interface can use the library unchanged.

What "tokens" are: the vocabulary's own piece strings, as ``Tokenizer.id_to_piece`` spells
them — the table symbol (symbol_table, ``▁THE``), the SentencePiece piece (``▁the``,
``<0xE4>``), the ``tokenizers`` token string (``Ġthe`` byte-level, ``▁the`` Metaspace,
``##ing`` WordPiece), or the token-list entry (funasr_char, ``and@@``). They are not rendered
text: ``tokens_to_text`` is ``decode(tokens_to_ids(tokens))``, so special tokens render
nothing, exactly as in ``ids_to_text``. A kind that does not implement ``id_to_piece`` has
no tokens; the token directions then raise PiecesNotSupportedError and the id/text
directions still work.

Special ids, per role, from the first source that names one:
1. ``special_tokens=`` given to the adapter (a piece string or an id per role);
2. the checkpoint's declaration: ``tokenizer_config.json`` (``bos_token``, ``eos_token``…)
   for huggingface, the SentencePiece model's ``unk_id``/``bos_id``/``eos_id``/``pad_id``;
3. the conventional spellings in ``ROLE_NAMES`` (``<sos/eos>`` is both bos and eos, as in
   icefall and WeNet; ``<blk>``/``<blank>`` give ``blank_id``).
A role nobody names is None (NeMo's AutoTokenizer convention), never an exception.
"""
from __future__ import annotations

import json
from typing import Mapping, Sequence

from .base import Tokenizer
from .errors import EncodeError, EncodeNotSupportedError, PiecesNotSupportedError, SpecError

__all__ = ["NeMoTokenizer", "ROLES", "ROLE_NAMES"]

ROLES = ("pad", "bos", "eos", "unk", "sep", "cls", "mask", "blank")

#: Conventional spellings per role, tried in order when the checkpoint declares nothing.
ROLE_NAMES: dict[str, tuple[str, ...]] = {
    "pad": ("<pad>", "[PAD]", "<PAD>", "<|pad|>"),
    "bos": ("<s>", "<sos>", "<sos/eos>", "[BOS]", "<|begin_of_text|>", "<|startoftext|>", "<|startoftranscript|>"),
    "eos": ("</s>", "<eos>", "<sos/eos>", "[EOS]", "<|end_of_text|>", "<|endoftext|>"),
    "unk": ("<unk>", "<UNK>", "[UNK]", "<|unk|>"),
    "sep": ("[SEP]", "<sep>"),
    "cls": ("[CLS]", "<cls>"),
    "mask": ("[MASK]", "<mask>"),
    "blank": ("<blk>", "<blank>"),
}


class NeMoTokenizer:
    """NeMo's six-method tokenizer interface over an oasr_tok ``Tokenizer``.

    >>> nemo = NeMoTokenizer(oasr_tok.load("model_dir"))
    >>> nemo.ids_to_text([23, 5, 99]); nemo.ids_to_tokens([23, 5, 99]); nemo.eos_id
    """

    def __init__(self, tokenizer: Tokenizer, special_tokens: Mapping[str, str | int] | None = None) -> None:
        if not isinstance(tokenizer, Tokenizer):
            raise SpecError(f"NeMoTokenizer wraps an oasr_tok.Tokenizer, got {type(tokenizer).__name__}")
        unknown = set(special_tokens or {}) - set(ROLES)
        if unknown:
            raise SpecError(f"unknown special-token role(s) {sorted(unknown)}; roles are {list(ROLES)}")
        self.tokenizer = tokenizer
        self._given = dict(special_tokens or {})
        self._piece_ids: dict[str, int] | None = None
        self._roles: dict[str, int | None] | None = None
        self._pieces_known: bool | None = None

    # -- the six conversions -------------------------------------------------------------------

    def text_to_tokens(self, text: str) -> list[str]:
        return self.ids_to_tokens(self.text_to_ids(text))

    def tokens_to_text(self, tokens: Sequence[str]) -> str:
        return self.ids_to_text(self.tokens_to_ids(tokens))

    def tokens_to_ids(self, tokens: Sequence[str]) -> list[int]:
        """The id of each piece; EncodeError naming a piece the vocabulary does not have. A
        piece spelled by several ids (rare, some tables) maps to the lowest."""
        if isinstance(tokens, str):
            tokens = [tokens]
        self._require_pieces()
        table = self._pieces()
        ids = []
        for position, token in enumerate(tokens):
            try:
                ids.append(table[token])
            except (KeyError, TypeError):
                raise EncodeError(
                    f"token {token!r} (position {position}) is not in the {self._kind()} vocabulary"
                ) from None
        return ids

    def ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        self._require_pieces()  # even for [], so a kind without pieces fails the same way always
        to_piece = self.tokenizer.id_to_piece
        return [to_piece(i) for i in self.tokenizer.check_ids(ids)]

    def text_to_ids(self, text: str) -> list[int]:
        if not self.tokenizer.supports_encode:
            raise EncodeNotSupportedError(
                f"the {self._kind()} tokenizer is decode-only: text_to_ids/text_to_tokens are not available "
                "(ids_to_text, ids_to_tokens and tokens_to_ids work)"
            )
        return list(self.tokenizer.encode(text))

    def ids_to_text(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    # -- vocabulary ------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def vocab(self) -> list[str]:
        """Every piece, indexed by id (PiecesNotSupportedError for kinds without pieces)."""
        return self.ids_to_tokens(range(self.vocab_size))

    def token_to_id(self, token: str) -> int:
        return self.tokens_to_ids([token])[0]

    def id_to_token(self, token_id: int) -> str:
        return self.tokenizer.id_to_piece(token_id)

    def _pieces(self) -> dict[str, int]:
        if self._piece_ids is None:
            table: dict[str, int] = {}
            to_piece = self.tokenizer.id_to_piece
            for token_id in range(self.vocab_size - 1, -1, -1):  # downward: the lowest id wins
                table[to_piece(token_id)] = token_id
            self._piece_ids = table
        return self._piece_ids

    def _has_pieces(self) -> bool:
        if self._pieces_known is None:
            try:
                self.tokenizer.id_to_piece(0)
            except PiecesNotSupportedError:
                self._pieces_known = False
            else:
                self._pieces_known = True
        return self._pieces_known

    def _require_pieces(self) -> None:
        if not self._has_pieces():
            raise PiecesNotSupportedError(
                f"the {self._kind()} tokenizer has no vocabulary pieces (its kind does not implement "
                "Tokenizer.id_to_piece): the token directions are not available, ids_to_text/text_to_ids are"
            )

    def _names(self) -> dict[str, int]:
        """Piece -> id for looking up special tokens by name: the full piece map when the kind
        has pieces, else the added tokens of the spec's tokenizer.json (huggingface, whisper)."""
        if self._has_pieces():
            return self._pieces()
        spec = self.tokenizer.spec
        if spec is None or "tokenizer" not in spec.files:
            return {}
        with open(spec.files["tokenizer"], encoding="utf-8") as handle:
            added = json.load(handle).get("added_tokens") or []
        return {
            a["content"]: a["id"] for a in reversed(added)
            if isinstance(a, dict) and isinstance(a.get("content"), str) and isinstance(a.get("id"), int)
        }

    def _kind(self) -> str:
        spec = self.tokenizer.spec
        return spec.kind if spec is not None else type(self.tokenizer).__name__

    # -- special ids -----------------------------------------------------------------------------

    def special_token_ids(self) -> dict[str, int | None]:
        """Every role's id (None when absent), resolved once (see the module docstring)."""
        if self._roles is None:
            roles: dict[str, int | None] = {}
            declared = self._declared()
            pieces = self._names()
            for role in ROLES:
                if role in self._given:
                    roles[role] = self._lookup(self._given[role], pieces, role)
                elif role in declared:  # declared, possibly as absent (a null in tokenizer_config)
                    roles[role] = declared[role]
                else:
                    roles[role] = next((pieces[n] for n in ROLE_NAMES[role] if n in pieces), None)
            self._roles = roles
        return dict(self._roles)

    def _lookup(self, value: str | int | None, pieces: Mapping[str, int], role: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return self.tokenizer.check_ids([value])[0]
        if isinstance(value, str) and value in pieces:
            return pieces[value]
        raise SpecError(f"special token {value!r} for role {role!r} is not in the {self._kind()} vocabulary")

    def _declared(self) -> dict[str, int | None]:
        """Roles the checkpoint itself declares (tokenizer_config.json, the SentencePiece model)."""
        spec = self.tokenizer.spec
        if spec is None:
            return {}
        if "tokenizer_config" in spec.files:
            return self._declared_by_config(spec.files["tokenizer_config"])
        if spec.kind == "sentencepiece" and "model" in spec.files:
            import sentencepiece as spm

            processor = spm.SentencePieceProcessor(model_file=spec.files["model"])
            found = {"unk": processor.unk_id(), "bos": processor.bos_id(), "eos": processor.eos_id(), "pad": processor.pad_id()}
            # -1 means the model has no such piece: not a declaration, so the conventional
            # names still apply (icefall's <sos/eos> is a user-defined piece, bos_id -1).
            return {role: i for role, i in found.items() if i >= 0}
        return {}

    def _declared_by_config(self, path: str) -> dict[str, int | None]:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
        by_content = {
            entry["content"]: int(token_id)
            for token_id, entry in (config.get("added_tokens_decoder") or {}).items()
            if isinstance(entry, dict) and isinstance(entry.get("content"), str)
        }
        pieces = self._names()
        out: dict[str, int | None] = {}
        for role in ROLES:
            key = f"{role}_token"
            if key not in config:
                continue
            value = config[key]
            if isinstance(value, dict):
                value = value.get("content")
            out[role] = by_content.get(value, pieces.get(value)) if isinstance(value, str) else None
        return out

    @property
    def pad_id(self) -> int | None:
        return self.special_token_ids()["pad"]

    @property
    def bos_id(self) -> int | None:
        return self.special_token_ids()["bos"]

    @property
    def eos_id(self) -> int | None:
        return self.special_token_ids()["eos"]

    @property
    def unk_id(self) -> int | None:
        return self.special_token_ids()["unk"]

    @property
    def sep_id(self) -> int | None:
        return self.special_token_ids()["sep"]

    @property
    def cls_id(self) -> int | None:
        return self.special_token_ids()["cls"]

    @property
    def mask_id(self) -> int | None:
        return self.special_token_ids()["mask"]

    @property
    def blank_id(self) -> int | None:
        """The CTC/transducer blank (<blk>, <blank>), an ASR addition to NeMo's roles."""
        return self.special_token_ids()["blank"]

    @property
    def eod(self) -> int | None:
        """End of document: NeMo falls back to eos."""
        return self.eos_id

    # NeMo's short aliases (pad, bos, eos, sep, cls, mask).
    pad = pad_id
    bos = bos_id
    eos = eos_id
    sep = sep_id
    cls = cls_id
    mask = mask_id

    # -- plumbing ---------------------------------------------------------------------------------

    def __reduce__(self):
        # Ship the tokenizer (pickled by its spec) and the overrides, not the caches.
        return (NeMoTokenizer, (self.tokenizer, self._given or None))

    def __repr__(self) -> str:
        return f"NeMoTokenizer({self.tokenizer!r})"
