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
    """Per-id renderings plus the rules that join them; see the module docstring.

    pieces: list of str (mode "text"; ignored for byte ids) or bytes (mode "bytes"), one per id.
    first_pieces: optional list like `pieces`, used while the first rule is in force.
    flags: bytes, one per id: FLAG_SKIP (renders nothing, changes nothing), FLAG_BYTE (a byte
      piece, mode "text" only; its value is in `byte_values`), FLAG_KEEP_FIRST (does not end
      the first rule), FLAG_BREAK (with FLAG_SKIP: renders nothing, but ends the byte run as
      the end of the ids would, so bytes never join across it; mistral-common's tekken),
      FLAG_END_FIRST (with FLAG_SKIP: renders nothing, but ends the first rule, which skipped
      ids otherwise leave in force; llama.cpp's rule is about the first id, whatever it is).
    byte_values: bytes, one per id (the byte of a FLAG_BYTE id; anything for the others).
    prompt: optional (open_id, close_id): the ids from an open_id up to the next close_id render
      nothing (Whisper's <|startofprev|> block, closed by <|startoftranscript|>); streams keep
      whether a block is open in state["_prompt"].

    Example:
        >>> from oasr_tok.kinds.api import FLAG_BYTE, FLAG_SKIP, PieceTable
        >>> table = PieceTable(
        ...     ["the", " caf", "", "", "<blank>"],
        ...     flags=bytes([0, 0, FLAG_BYTE, FLAG_BYTE, FLAG_SKIP]),
        ...     byte_values=bytes([0, 0, 0xC3, 0xA9, 0]),  # ids 2 and 3: the two bytes of "é"
        ... )
        >>> table.render([0, 1, 4, 2, 3])
        'the café'
        >>> state = {}
        >>> [table.decode_incremental([i], state) for i in [0, 1, 2, 3]]  # "é" once it is whole
        ['the', ' caf', '', 'é']
        >>> table.token_pieces([0, 1, 2, 3])
        ['the', ' caf', '', 'é']
    """
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
    """The streaming methods of a kind whose streaming and token pieces are one engine's.

    A kind class lists this first among its bases and sets `self._table`: a PieceTable, reached
    with a C call so the per-token path has no Python frame of ours, or another engine with the
    same two methods (a CTCStream, whose neighbour rules wrap a PieceTable), reached by them.
    These are real methods: a subclass that overrides one is honoured.

    Example:
        >>> from oasr_tok.kinds.api import PieceTable, TableMethods, Tokenizer
        >>> class Letters(TableMethods, Tokenizer):
        ...     vocab_size = 3
        ...     special_ids = frozenset()
        ...     def __init__(self, spec=None):
        ...         self.spec = spec
        ...         self._table = PieceTable(["a", "b", " "])
        ...     def decode(self, ids):  # the rules stated plainly: the oracle of the table
        ...         return "".join("ab "[i] for i in self.check_ids(ids))
        >>> tok, state = Letters(), {}
        >>> tok.decode_incremental([0, 2], state), tok.decode_incremental([1], state)
        ('a ', 'b')
        >>> tok.token_pieces([1, 2, 0])
        ['b', ' ', 'a']
    """

    _table: _Engine
    def decode_incremental(self, new_ids: Sequence[int], state: Any, final: bool = False) -> str: ...
    def token_pieces(self, ids: Sequence[int]) -> list[str]: ...
