"""The prompt side of a tokenizer: encode, special tokens by role, the vocabulary, and the
with_specials() view (docs/prompts.md). `PromptSide` is the part of `oasr_tok.Tokenizer` that
holds it; chat templates build on it in chat.py.

How a kind provides its data: override any of these (each is called once, then cached):

* ``_special_tokens() -> SpecialTokens``: roles and stop ids from the checkpoint's own files,
  built with SpecialTokensBuilder (set/stop with a provenance sentence, then
  build(self.vocabulary, self.special_ids) fills the rest by convention). Default: the
  conventional spellings (specials.ROLE_NAMES) found in the vocabulary.
* ``_vocabulary() -> dict[str, int]``: piece -> id. Default: id_to_piece over every id, the
  lowest id winning, "" (holes) left out.
* ``_keep_specials() -> Tokenizer``: the with_specials() view (special ids rendered as text,
  special_ids empty). Default: refused, unless the kind has no special ids.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

from ..errors import (
    EncodeError,
    EncodeNotSupportedError,
    KeepSpecialsNotSupportedError,
    PiecesNotSupportedError,
    UnknownPieceError,
    short_repr,
)
from .contract import TokenizerContract
from .specials import SpecialTokens, SpecialTokensBuilder, split_on_special_text

__all__ = ["PromptSide"]

T = TypeVar("T", bound="PromptSide")


def check_encode_flags(add_special_tokens: Any, split_special_tokens: Any) -> None:
    """encode's two flags are True, False (or None: the kind's default), never other values
    read by their truth ("no" would add the specials)."""
    if add_special_tokens is not None and type(add_special_tokens) is not bool:
        raise EncodeError(f"add_special_tokens must be True, False or None, got {short_repr(add_special_tokens)}")
    if type(split_special_tokens) is not bool:
        raise EncodeError(f"split_special_tokens must be True or False, got {short_repr(split_special_tokens)}")


class PromptSide(TokenizerContract):
    """Text into ids, special tokens by role, pieces and the vocabulary."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every kind's own encode gets the flags checked first: one rule, whatever the kind.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("encode")
        if own is None or getattr(own, "_oasr_flags_checked", False):
            return

        @functools.wraps(own)
        def encode(
            self: Any, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
        ) -> list[int]:
            check_encode_flags(add_special_tokens, split_special_tokens)
            result: list[int] = own(self, text, add_special_tokens, split_special_tokens=split_special_tokens)
            return result

        encode._oasr_flags_checked = True  # type: ignore[attr-defined]
        cls.encode = encode  # type: ignore[method-assign]

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """Ids for `text` (prompts, hotwords). Special-token text in `text` ("<|im_start|>")
        becomes its one id unless `split_special_tokens`; `add_special_tokens=True` adds
        bos/eos as the checkpoint says (None: the kind's default, False unless its spec says
        otherwise). Decode-only kinds raise EncodeNotSupportedError.

        A kind that encodes overrides this with the same signature; the helpers
        `encode_with_special_text` and `add_bos_eos` do the special-token part for kinds
        whose backend only encodes plain text."""
        raise EncodeNotSupportedError(
            f"{type(self).__name__} is decode-only: it cannot turn text into ids "
            "(check tok.supports_encode before calling encode)"
        )

    def encode_batch(
        self, texts: Sequence[str], add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[list[int]]:
        """encode() for each text."""
        if isinstance(texts, str):
            raise EncodeError("encode_batch takes a list of str, got one str (use encode)")
        return [self.encode(t, add_special_tokens, split_special_tokens=split_special_tokens) for t in texts]

    def id_to_piece(self, token_id: int) -> str:
        """The vocabulary's own spelling of `token_id` (the table symbol, SentencePiece piece,
        `tokenizers` token string or token-list entry: "▁the", "Ġthe", "<0xE4>", "and@@"), not
        its rendered text. Used by the NeMo-style adapter and `describe`. Kinds with a piece
        vocabulary override this; the default raises PiecesNotSupportedError."""
        raise PiecesNotSupportedError(
            f"{type(self).__name__} does not spell ids as vocabulary pieces (it has no id_to_piece)"
        )

    @property
    def special_tokens(self) -> SpecialTokens:
        """bos/eos/pad/unk/sep/cls/mask ids (None when absent) and stop_ids, with provenance."""
        cached = self.__dict__.get("_oasr_special_tokens")
        if cached is None:
            cached = self._special_tokens()
            self.__dict__["_oasr_special_tokens"] = cached
        return cached

    def _special_tokens(self) -> SpecialTokens:
        return SpecialTokensBuilder(self.vocab_size).build(self._vocabulary_or_none(), self.special_ids)

    @property
    def vocabulary(self) -> Mapping[str, int]:
        """A read-only piece -> id view of the vocabulary (PiecesNotSupportedError for kinds
        without pieces). A piece several ids spell maps to the lowest."""
        cached = self.__dict__.get("_oasr_vocabulary")
        if cached is None:
            cached = MappingProxyType(self._vocabulary())
            self.__dict__["_oasr_vocabulary"] = cached
        return cached

    def _vocabulary(self) -> dict[str, int]:
        to_piece = self.id_to_piece
        table: dict[str, int] = {}
        for token_id in range(self.vocab_size - 1, -1, -1):  # downward: the lowest id wins
            piece = to_piece(token_id)
            if piece:
                table[piece] = token_id
        return table

    def _vocabulary_or_none(self) -> Mapping[str, int] | None:
        try:
            return self.vocabulary
        except PiecesNotSupportedError:
            return None

    def piece_to_id(self, piece: str) -> int:
        """The id whose vocabulary piece is `piece` (the inverse of id_to_piece);
        UnknownPieceError when the vocabulary has no such piece."""
        token_id = self.vocabulary.get(piece) if isinstance(piece, str) else None
        if token_id is None:
            kind = self.spec.kind if self.spec is not None else type(self).__name__
            raise UnknownPieceError(f"piece {piece!r} is not in the {kind} vocabulary")
        return token_id

    def with_specials(self: T) -> T:
        """A view of this tokenizer that renders special tokens as their text instead of
        dropping them (its special_ids is empty; the three contracts hold on it). Cached: the
        same view every call; a view's own with_specials() is itself."""
        view = self.__dict__.get("_oasr_specials_view")
        if view is None:
            if not self.special_ids:
                return self
            view = self._keep_specials()
            view.__dict__["_oasr_specials_of"] = self
            view.__dict__["_oasr_specials_view"] = view
            view.__dict__["_oasr_special_tokens"] = self.special_tokens
            view.spec = self.spec
            self.__dict__["_oasr_specials_view"] = view
        return view  # type: ignore[no-any-return]

    def _keep_specials(self) -> Any:
        kind = self.spec.kind if self.spec is not None else type(self).__name__
        raise KeepSpecialsNotSupportedError(f"the {kind} tokenizer cannot render its special tokens as text")

    def encode_with_special_text(
        self, text: str, plain: Callable[[str], Sequence[int]], split_special_tokens: bool = False
    ) -> list[int]:
        """For kinds whose backend encodes plain text only: `text` cut at the spelling of
        every special id (longest first), each stretch between encoded by `plain(str)`, each
        special token its one id. With split_special_tokens, `plain(text)` alone."""
        if not isinstance(text, str):
            raise EncodeError(f"encode takes a str, got {type(text).__name__}")
        if split_special_tokens:
            return list(plain(text))
        table = self.__dict__.get("_oasr_special_text")
        if table is None:
            table = {}
            for token_id in sorted(self.special_ids, reverse=True):  # the lowest id wins a spelling
                try:
                    piece = self.id_to_piece(token_id)
                except PiecesNotSupportedError:
                    break
                if piece:
                    table[piece] = token_id
            self.__dict__["_oasr_special_text"] = table
        ids: list[int] = []
        for part in split_on_special_text(text, table):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids.extend(plain(part))
        return ids

    def add_bos_eos(self, ids: list[int]) -> list[int]:
        """`ids` with bos in front / eos at the end where special_tokens.add_bos / add_eos say."""
        specials = self.special_tokens
        if specials.add_bos and specials.bos_id is not None:
            ids = [specials.bos_id, *ids]
        if specials.add_eos and specials.eos_id is not None:
            ids = [*ids, specials.eos_id]
        return ids
