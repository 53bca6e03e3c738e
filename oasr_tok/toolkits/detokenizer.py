"""The adapter the engine used before the tokenizer axis existed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .._engine.stream import Stream
from ..core.tokenizer import Tokenizer
from ..errors import SpecError
from ..spec import TokenizerSpec

__all__ = ["Detokenizer"]


class Detokenizer:
    """Given a tokenizer, use it. Given the old sniffed paths, build the symbol_table tokenizer
    they always meant (from a unit table, or from a SentencePiece model's pieces) and decode
    exactly as it does. ``detok.tokenizer`` is the tokenizer underneath."""

    def __init__(
        self,
        unit_table: str | os.PathLike[str] | None = None,
        sentencepiece_model: str | os.PathLike[str] | None = None,
        tokenizer: Tokenizer | None = None,
        special_ids: Sequence[int] | None = None,
    ) -> None:
        given = [x is not None for x in (unit_table, sentencepiece_model, tokenizer)]
        if sum(given) != 1:
            raise SpecError("Detokenizer takes exactly one of unit_table=, sentencepiece_model= or tokenizer=")
        if tokenizer is not None:
            if not isinstance(tokenizer, Tokenizer):
                raise SpecError(f"tokenizer= must be an oasr_tok.Tokenizer, got {type(tokenizer).__name__}")
            self.tokenizer = tokenizer
            return
        from ..kinds.symbol_table import SymbolTableTokenizer

        options: dict[str, Any] = {} if special_ids is None else {"special_ids": list(special_ids)}
        if unit_table is not None:
            spec = TokenizerSpec("symbol_table", {"units": os.fspath(unit_table)}, options)
            self.tokenizer = SymbolTableTokenizer.from_spec(spec)
        else:
            assert sentencepiece_model is not None  # exactly one of the three was given
            self.tokenizer = SymbolTableTokenizer.from_sentencepiece_model(os.fspath(sentencepiece_model), options)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """Detokenize an n-best list through the same tokenizer."""
        return self.tokenizer.decode_batch(batch)

    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any] | Stream, final: bool = False) -> str:
        return self.tokenizer.decode_incremental(new_ids, state, final)

    def __call__(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)
