# Types of the compiled streaming engine (oasr_tok/_engine/piece_table.pyx); tests/house/test_typing.py checks
# these against the built module with mypy's stubtest.
from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias, type_check_only

from typing_extensions import disjoint_base

FLAG_SKIP: int
FLAG_BYTE: int
FLAG_KEEP_FIRST: int
FLAG_BREAK: int
FLAG_END_FIRST: int

# One rendering per id: str pieces (mode "text") or bytes (mode "bytes"); an id flagged
# FLAG_SKIP or FLAG_BYTE may hold None. A list or a tuple (the table keeps a copy).
_Pieces: TypeAlias = (
    list[str]
    | list[bytes]
    | list[str | None]
    | list[bytes | None]
    | tuple[str, ...]
    | tuple[bytes, ...]
    | tuple[str | None, ...]
    | tuple[bytes | None, ...]
)

@type_check_only
class _Engine(Protocol):
    # What TableMethods streams through: a PieceTable, a CTCStream, or a kind's own engine.
    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = ...) -> str: ...
    def token_pieces(self, ids: Sequence[int]) -> list[str]: ...

@disjoint_base
class PieceTable:
    @property
    def vocab_size(self) -> int: ...
    @property
    def prompt_open(self) -> int: ...
    @property
    def prompt_close(self) -> int: ...
    @property
    def tag(self) -> int: ...
    @property
    def fresh_snapshot(self) -> tuple[bool, bool, bytes, bool, bool, bool]: ...
    def __init__(
        self,
        pieces: _Pieces,
        *,
        first_pieces: _Pieces | None = None,
        flags: bytes | None = None,
        byte_values: bytes | None = None,
        mode: str = "text",
        byte_rule: str = "replace",
        lead: str = "none",
        prompt: tuple[int, int] | None = None,
    ) -> None: ...
    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str: ...
    def step_snapshot(
        self, new_ids: Sequence[int], snapshot: tuple[bool, bool, bytes, bool, bool, bool]
    ) -> tuple[list[str], tuple[bool, bool, bytes, bool, bool, bool], str]: ...
    def token_pieces(self, ids: Sequence[int]) -> list[str]: ...
    def joined_form(self) -> tuple[tuple[bytes, ...], str] | None: ...
    def piece_bytes(self) -> tuple[bytes, ...]: ...
    def pieces_and_carriers(self, ids: Sequence[int]) -> tuple[list[str], bytes]: ...
    def render(self, ids: Sequence[int]) -> str: ...
    def run_ids(self) -> frozenset[int]: ...

@disjoint_base
class TableCursor: ...

@disjoint_base
class TableMethods:
    _table: _Engine
    def decode_incremental(self, new_ids: Sequence[int], state: Any, final: bool = False) -> str: ...
    def token_pieces(self, ids: Sequence[int]) -> list[str]: ...
