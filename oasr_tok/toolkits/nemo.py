"""A NeMo-style face over any oasr_tok tokenizer: the six conversions of NeMo's
``TokenizerSpec`` (text/tokens/ids in every direction), ``vocab_size`` and the special-id
properties, so pipelines written against NeMo's interface can use the library unchanged.

For a SentencePiece model the text directions are NeMo's SentencePieceTokenizer's exactly
(its non-legacy mode): ``text_to_ids`` is SentencePiece's encode, which spells a special
token's text out rather than match it, and ``ids_to_text`` SentencePiece's decode of every id
(``<unk>`` as `` ⁇ ``, user-defined symbols such as ``<sos/eos>`` as written), where the
tokenizer's own ``decode`` leaves the special ids out. Over an aggregate (Canary) tokenizer
``ids_to_text`` is NeMo's AggregateTokenizer's: every id's piece joined, ``▁`` as a space.

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
2. the tokenizer's own ``special_tokens`` (what the kind read from its checkpoint:
   tokenizer_config.json, the SentencePiece model's ids, Whisper's layout, ... and the
   conventional spellings in ``ROLE_NAMES``; ``<sos/eos>`` is both bos and eos);
3. NeMo's AutoTokenizer fallbacks: eos = sep when eos is missing (and sep = eos), bos = cls
   (and cls = bos). ``blank_id`` (``<blk>``/``<blank>``) is looked up in the vocabulary.
A role nobody names is None (NeMo's AutoTokenizer convention), never an exception.

NeMo's *legacy* special tokens (``SentencePieceTokenizer(model, special_tokens=...,
legacy=True)``, older checkpoints): ``legacy_special_tokens=`` takes the same list or dict
(``{"bos_token": "<s>", "sep_token": "[SEP]"}``). A token the model lacks gets the next id
past the model's pieces, one the model has keeps its id; ``text_to_ids`` / ``text_to_tokens``
then cut the text at each such token (the earliest, the first given on a tie), encode the
stretches between (a lone ``▁`` that opens a stretch between two special tokens dropped, as
NeMo's ``trim_spm_separator_after_special_token`` does; the last stretch keeps it), and ``ids_to_text`` decodes the stretches
between special ids and writes each special token between spaces, the whole stripped. A dict's
``<role>_token`` names set those roles. Exact to NeMo 3.0's class (tests/peers/test_nemo_sentencepiece.py).

``nemo_tokenizer_spec(tok)`` gives the same adapter as a subclass of NeMo's own
``TokenizerSpec`` when NeMo is importable, so NeMo's ``isinstance`` checks accept it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._engine.ids import check_ids
from ..core.specials import ROLE_NAMES
from ..core.tokenizer import Tokenizer
from ..errors import BackendNotInstalledError, EncodeError, EncodeNotSupportedError, PiecesNotSupportedError, SpecError

__all__ = ["NeMoTokenizer", "ROLES", "ROLE_NAMES", "nemo_tokenizer_spec"]

ROLES = ("pad", "bos", "eos", "unk", "sep", "cls", "mask", "blank")


class NeMoTokenizer:
    """NeMo's six-method tokenizer interface over an oasr_tok ``Tokenizer``.

    >>> nemo = NeMoTokenizer(oasr_tok.load("model_dir"))
    >>> nemo.ids_to_text([23, 5, 99]); nemo.ids_to_tokens([23, 5, 99]); nemo.eos_id
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        special_tokens: Mapping[str, str | int] | None = None,
        *,
        legacy_special_tokens: Sequence[str] | Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(tokenizer, Tokenizer):
            raise SpecError(f"NeMoTokenizer wraps an oasr_tok.Tokenizer, got {type(tokenizer).__name__}")
        unknown = set(special_tokens or {}) - set(ROLES)
        if unknown:
            raise SpecError(f"unknown special-token role(s) {sorted(unknown)}; roles are {list(ROLES)}")
        self.tokenizer = tokenizer
        self._given = dict(special_tokens or {})
        self._explicit = dict(special_tokens or {})  # (the roles given, before legacy names add theirs)
        self._piece_ids: dict[str, int] | None = None
        self._roles: dict[str, int | None] | None = None
        self._pieces_known: bool | None = None
        self._legacy_given = legacy_special_tokens
        self._legacy: dict[str, int] = {}  # special token -> id (legacy mode)
        self._legacy_ids: dict[int, str] = {}
        self._size = tokenizer.vocab_size
        if legacy_special_tokens is not None:
            self._add_legacy(legacy_special_tokens)

    # -- NeMo's legacy special tokens ------------------------------------------------------------

    def _add_legacy(self, given: Sequence[str] | Mapping[str, str]) -> None:
        if not self._sentencepiece():
            raise SpecError(
                "legacy_special_tokens are NeMo's SentencePieceTokenizer's (legacy=True): wrap a sentencepiece tokenizer"
            )
        if isinstance(given, str) or not isinstance(given, (Mapping, Sequence)):
            raise SpecError(f"legacy_special_tokens is a list of tokens or a dict of name -> token, got {given!r}")
        named = list(given.items()) if isinstance(given, Mapping) else [(None, token) for token in given]
        processor = self.tokenizer.processor  # type: ignore[attr-defined]
        unk = processor.unk_id()
        for name, token in named:
            if not isinstance(token, str):
                raise SpecError(f"a legacy special token is a str, got {token!r}")
            role = name[: -len("_token")] if isinstance(name, str) and name.endswith("_token") else None
            # (NeMo's legacy unk_id is always the model's own unk, whatever the names say)
            if role in ROLES and role != "unk" and role not in self._given:
                self._given[role] = token
            known = processor.piece_to_id(token)
            if known == unk and token not in self._legacy:
                self._legacy[token] = self._size
                self._legacy_ids[self._size] = token
                self._size += 1
            elif known != unk:
                self._legacy[token] = known
                self._legacy_ids[known] = token

    def _legacy_split(self, text: str) -> list[tuple[str, str | None]]:
        """NeMo's legacy cut of `text`: (stretch, the special token after it or None)."""
        out: list[tuple[str, str | None]] = []
        at = 0
        while True:
            found = {token: text[at:].index(token) for token in self._legacy if token in text[at:]}
            if not found:
                break
            token = min(found, key=found.__getitem__)  # the earliest; on a tie the first given
            out.append((text[at : at + found[token]], token))
            at += found[token] + len(token)
        out.append((text[at:], None))
        return out

    # -- the six conversions -------------------------------------------------------------------

    def text_to_tokens(self, text: str) -> list[str]:
        if self._legacy:
            processor = self.tokenizer.processor  # type: ignore[attr-defined]
            tokens: list[str] = []
            for stretch, special in self._legacy_split(text):
                part: list[str] = processor.encode_as_pieces(stretch)
                # (NeMo trims a stretch between two special tokens, not the last one)
                if special is not None and tokens and tokens[-1] in self._legacy and part and part[0] == "\u2581":
                    part.pop(0)
                tokens.extend(part)
                if special is not None:
                    tokens.append(special)
            return tokens
        if self._sentencepiece():
            # NeMo's encode_as_pieces: an unknown stretch keeps its own text, not "<unk>"
            pieces: list[str] = self.tokenizer.processor.encode_as_pieces(text)  # type: ignore[attr-defined]
            return pieces
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
        if self._legacy_ids:
            base = self.tokenizer.vocab_size
            return [self._legacy_ids[i] if i >= base else to_piece(i) for i in self._checked(ids)]
        return [to_piece(i) for i in self.tokenizer.check_ids(ids)]

    def _checked(self, ids: Sequence[int]) -> list[int]:
        """The ids as check_ids reads them, the legacy special ids past the model included."""
        return check_ids(ids, self._size)

    def text_to_ids(self, text: str) -> list[int]:
        if not self.tokenizer.supports_encode:
            raise EncodeNotSupportedError(
                f"the {self._kind()} tokenizer is decode-only: text_to_ids/text_to_tokens are not available "
                "(ids_to_text, ids_to_tokens and tokens_to_ids work)"
            )
        if self._legacy:
            separator = self.tokenizer.processor.piece_to_id("\u2581")  # type: ignore[attr-defined]
            ids: list[int] = []
            for stretch, special in self._legacy_split(text):
                part = list(self.tokenizer.encode(stretch, split_special_tokens=True))
                if special is not None and ids and ids[-1] in self._legacy_ids and part and part[0] == separator:
                    part.pop(0)
                ids.extend(part)
                if special is not None:
                    ids.append(self._legacy[special])
            return ids
        if self._sentencepiece():
            # NeMo's SentencePieceTokenizer: encode_as_ids, which never matches a special
            # token's spelling in the text ("</s>" is spelled out piece by piece)
            return list(self.tokenizer.encode(text, split_special_tokens=True))
        return list(self.tokenizer.encode(text))

    def ids_to_text(self, ids: Sequence[int]) -> str:
        spec = self.tokenizer.spec
        if spec is not None and spec.kind == "aggregate":
            # NeMo's AggregateTokenizer.ids_to_text: every id's piece (specials and <unk> as
            # spelled), joined, "▁" as a space
            to_piece = self.tokenizer.id_to_piece
            return "".join([to_piece(i) for i in self.tokenizer.check_ids(ids)]).replace("\u2581", " ")
        if self._legacy_ids:
            # NeMo's legacy ids_to_text: the stretches between special ids decoded, each special
            # token written between spaces, the whole stripped
            checked = self._checked(ids)
            decode = self._every_id_view().decode
            text, last = "", 0
            for k, token_id in enumerate(checked):
                if token_id in self._legacy_ids:
                    text += decode(checked[last:k]) + " " + self._legacy_ids[token_id] + " "
                    last = k + 1
            return (text + decode(checked[last:])).strip()
        if self._sentencepiece():
            # NeMo's SentencePieceTokenizer: decode_ids of every id, so <unk> renders " ⁇ " and
            # user-defined symbols (<sos/eos>) print; only control pieces print nothing
            return self._every_id_view().decode(ids)
        return self.tokenizer.decode(ids)

    def _sentencepiece(self) -> bool:
        spec = self.tokenizer.spec
        return spec is not None and spec.kind == "sentencepiece" and hasattr(self.tokenizer, "processor")

    def _every_id_view(self) -> Tokenizer:
        """The wrapped SentencePiece model with no ids stripped (SentencePiece's own decode)."""
        view = self.__dict__.get("_view")
        if view is None:
            from ..loading.build import build_tokenizer
            from ..spec import TokenizerSpec

            spec = self.tokenizer.spec
            assert spec is not None  # _sentencepiece() said so
            view = build_tokenizer(TokenizerSpec("sentencepiece", dict(spec.files), {"special_ids": []}))
            self.__dict__["_view"] = view
        return view

    # -- vocabulary ------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """The model's ids, and the legacy special tokens added past them."""
        return self._size

    @property
    def vocab(self) -> list[str]:
        """Every piece, indexed by id (PiecesNotSupportedError for kinds without pieces)."""
        return self.ids_to_tokens(range(self.vocab_size))

    def token_to_id(self, token: str) -> int:
        return self.tokens_to_ids([token])[0]

    def id_to_token(self, token_id: int) -> str:
        return self.ids_to_tokens([token_id])[0]

    def _pieces(self) -> dict[str, int]:
        if self._piece_ids is None:
            table: dict[str, int] = {}
            to_piece = self.tokenizer.id_to_piece
            for token_id in range(self.tokenizer.vocab_size - 1, -1, -1):  # downward: the lowest id wins
                table[to_piece(token_id)] = token_id
            table.update(self._legacy)  # NeMo's token_to_id asks the legacy tokens first
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

    def _names(self) -> Mapping[str, int]:
        """Piece -> id for looking up special tokens by name (empty for kinds without pieces)."""
        if not self._has_pieces():
            return {}
        if self._legacy:
            return {**self.tokenizer.vocabulary, **self._legacy}
        return self.tokenizer.vocabulary

    def _kind(self) -> str:
        spec = self.tokenizer.spec
        return spec.kind if spec is not None else type(self.tokenizer).__name__

    # -- special ids -----------------------------------------------------------------------------

    def special_token_ids(self) -> dict[str, int | None]:
        """Every role's id (None when absent), resolved once (see the module docstring)."""
        if self._roles is None:
            roles: dict[str, int | None] = {}
            known = self.tokenizer.special_tokens
            pieces = self._names()
            for role in ROLES:
                if role in self._given:
                    roles[role] = self._lookup(self._given[role], pieces, role)
                elif role == "blank":
                    roles[role] = next((pieces[n] for n in ROLE_NAMES[role] if n in pieces), None)
                else:
                    roles[role] = known.id_of(role)
            # NeMo's AutoTokenizer fills a missing eos from sep (and back), bos from cls (and back).
            for one, other in (("eos", "sep"), ("sep", "eos"), ("bos", "cls"), ("cls", "bos")):
                if roles[one] is None and one not in self._given and roles[other] is not None:
                    roles[one] = roles[other]
            self._roles = roles
        return dict(self._roles)

    def _lookup(self, value: str | int | None, pieces: Mapping[str, int], role: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return self._checked([value])[0]
        if isinstance(value, str) and value in pieces:
            return pieces[value]
        raise SpecError(f"special token {value!r} for role {role!r} is not in the {self._kind()} vocabulary")

    @property
    def stop_ids(self) -> frozenset[int]:
        """The tokenizer's stop ids (eos plus the family's end-of-turn tokens)."""
        return self.tokenizer.special_tokens.stop_ids

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> Any:
        """The tokenizer's apply_chat_template (NeMo passes it through too)."""
        return self.tokenizer.apply_chat_template(*args, **kwargs)

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

    def __reduce__(self) -> tuple[Any, ...]:
        # Ship the tokenizer (pickled by its spec) and the overrides, not the caches.
        if self._legacy_given is not None:
            return (_legacy_adapter, (self.tokenizer, self._explicit or None, self._legacy_given))
        return (NeMoTokenizer, (self.tokenizer, self._explicit or None))

    def __repr__(self) -> str:
        return f"NeMoTokenizer({self.tokenizer!r})"


def _legacy_adapter(
    tokenizer: Tokenizer,
    special_tokens: Mapping[str, str | int] | None,
    legacy_special_tokens: Sequence[str] | Mapping[str, str],
) -> NeMoTokenizer:
    return NeMoTokenizer(tokenizer, special_tokens, legacy_special_tokens=legacy_special_tokens)


_NEMO_SPEC_CLASS: Any = None


def nemo_tokenizer_spec(
    tokenizer: Tokenizer,
    special_tokens: Mapping[str, str | int] | None = None,
    *,
    legacy_special_tokens: Sequence[str] | Mapping[str, str] | None = None,
) -> NeMoTokenizer:
    """The adapter as an instance of a subclass of NeMo's own ``TokenizerSpec``
    (nemo.collections.common.tokenizers.tokenizer_spec), so NeMo code that checks
    ``isinstance(tok, TokenizerSpec)`` takes it. BackendNotInstalledError without NeMo."""
    global _NEMO_SPEC_CLASS
    if _NEMO_SPEC_CLASS is None:
        try:
            from nemo.collections.common.tokenizers.tokenizer_spec import (  # type: ignore[import-not-found]
                TokenizerSpec as NeMoSpec,
            )
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"nemo_tokenizer_spec needs NeMo ({exc}); NeMoTokenizer works without it"
            ) from exc

        class NeMoTokenizerSpec(NeMoTokenizer, NeMoSpec):
            """NeMoTokenizer registered as NeMo's TokenizerSpec (our methods come first)."""

            def __reduce__(self) -> tuple[Any, ...]:
                return (_spec_adapter, (self.tokenizer, self._explicit or None, self._legacy_given))

        _NEMO_SPEC_CLASS = NeMoTokenizerSpec
    return _NEMO_SPEC_CLASS(tokenizer, special_tokens, legacy_special_tokens=legacy_special_tokens)  # type: ignore[no-any-return]


def _spec_adapter(
    tokenizer: Tokenizer,
    special_tokens: Mapping[str, str | int] | None,
    legacy_special_tokens: Sequence[str] | Mapping[str, str] | None,
) -> NeMoTokenizer:
    return nemo_tokenizer_spec(tokenizer, special_tokens, legacy_special_tokens=legacy_special_tokens)
