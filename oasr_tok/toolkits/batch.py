"""A batch function for data engines (Ray Data's ``map_batches``, pandas UDFs...): a column of
token id lists in, transcripts, token pieces and timed words out. docs/scale.md has the recipe.

It imports no engine: a batch is a mapping of column name to a sequence (a list, a NumPy object
array of arrays as Ray Data's "numpy" format gives it, or a pandas Series)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer

__all__ = ["Transcriber"]


class Transcriber:
    """``Transcriber(tok)(batch)``: adds ``text`` (tok.decode_batch of the ``ids`` column) and,
    when asked, ``pieces`` (tok.token_pieces per row) and ``words`` (tok.word_timings of
    ``ids`` and the ``starts`` column, as lists of ``{"text", "start", "end", "first_token",
    "last_token"}``). The tokenizer is pickled with the Transcriber, by value unless its
    pickle_mode says "spec", and each worker process builds it once."""

    def __init__(
        self, tok: Tokenizer, ids: str = "ids", pieces: bool = False, words: bool = False, starts: str = "starts"
    ) -> None:
        self.tok = tok
        self.ids, self.starts = ids, starts
        self.pieces, self.words = pieces, words

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        # Ray hands a column of id lists as a 1-D object array: one row per element.
        rows: Sequence[Any] = list(batch[self.ids])
        out = dict(batch)
        out["text"] = self.tok.decode_batch(rows)
        if self.pieces:
            out["pieces"] = [self.tok.token_pieces(ids) for ids in rows]
        if self.words:
            out["words"] = [
                [w.to_dict() for w in self.tok.word_timings(ids, starts)]
                for ids, starts in zip(rows, batch[self.starts])
            ]
        return out
