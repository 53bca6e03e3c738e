# Types of the compiled clean_spaces engine (oasr_tok/_clean_spaces.pyx); tests/test_typing.py
# checks these against the built module with mypy's stubtest.
from collections.abc import Sequence
from typing import Any

from typing_extensions import disjoint_base

from oasr_tok._piece_table import PieceTable

# held: (pass 1's "" | " ", pass 2's "" | " " | " '", pass 3's "" | " " | " '" | " 'r" | " 'v")
def clean_feed(held: tuple[str, str, str], text: str, first: int = 0) -> tuple[str, tuple[str, str, str]]: ...
def clean_flush(held: tuple[str, str, str]) -> str: ...

@disjoint_base
class CleanSpacesStream:
    def __init__(self, table: PieceTable, special: frozenset[int]) -> None: ...
    @property
    def vocab_size(self) -> int: ...
    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str: ...
    def token_pieces(self, ids: Sequence[int]) -> list[str]: ...
