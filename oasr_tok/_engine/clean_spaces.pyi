# Types of the compiled clean_spaces engine (oasr_tok/_engine/clean_spaces.pyx); tests/house/test_typing.py
# checks these against the built module with mypy's stubtest.
from collections.abc import Sequence
from typing import Any

from typing_extensions import disjoint_base

from oasr_tok._engine.piece_table import PieceTable

# held: (pass 1's "" | " ", pass 2's "" | " " | " '", pass 3's "" | " " | " '" | " 'r" | " 'v")
def clean_feed(held: tuple[str, str, str], text: str, first: int = 0) -> tuple[str, tuple[str, str, str]]: ...
def clean_flush(held: tuple[str, str, str]) -> str: ...

@disjoint_base
class CleanSpacesStream:
    """The streaming engine of a vocabulary with clean_spaces: the raw stream (the table, in a
    state of its own under state["_gguf_raw"]) through the passes, whose held characters are
    kept in state["_gguf_clean"]. state["text"] is always the clean-up of everything so far as
    if the stream ended now; nothing emitted is taken back.

    Example:
        >>> from oasr_tok.kinds.api import CleanSpacesStream, PieceTable
        >>> stream = CleanSpacesStream(PieceTable(["Hello", " ,", " world", " it", " 's", " !"]), frozenset())
        >>> state = {}
        >>> [stream.decode_incremental([i], state) for i in range(6)]
        ['Hello', ',', ' world', ' it', "'s", '!']
        >>> state["text"]
        "Hello, world it's!"
    """
    def __init__(self, table: PieceTable, special: frozenset[int]) -> None: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def tag(self) -> int: ...
    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str: ...
    def token_pieces(self, ids: Sequence[int]) -> list[str]: ...
