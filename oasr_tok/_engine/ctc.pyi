# Types of the compiled CTC module (oasr_tok/_engine/ctc.pyx); tests/house/test_typing.py checks these
# against the built module with mypy's stubtest. Times are typed Any here: the engine checks
# them itself (token_times); the public functions that call it name oasr_tok.core.words.Times.
from collections.abc import Sequence
from typing import Any, overload

import numpy
import numpy.typing
from typing_extensions import disjoint_base

from .piece_table import PieceTable
from .wordtypes import Words

__all__ = ["collapse_ctc", "CTCStream"]

_Int64Array = numpy.typing.NDArray[numpy.int64]

# Lists in, lists out; a NumPy array in, three int64 arrays out (no Python int per token).
@overload
def collapse_ctc(
    frame_ids: Sequence[int], blank_id: int, *, vocab_size: int | None = None
) -> tuple[list[int], list[int], list[int]]: ...
@overload
def collapse_ctc(
    frame_ids: numpy.ndarray[Any, Any], blank_id: int, *, vocab_size: int | None = None
) -> tuple[_Int64Array, _Int64Array, _Int64Array]: ...
def delimited_words(pieces: Sequence[str], starts: Any, ends: Any = None) -> Words: ...

@disjoint_base
class CTCStream:
    @property
    def table(self) -> PieceTable: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def tag(self) -> int: ...
    def __init__(
        self,
        table: PieceTable,
        classes: Sequence[int] | None = None,
        *,
        strip: bool = False,
        last_pieces: list[str | None] | None = None,
    ) -> None: ...
    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str: ...
    def token_pieces(self, ids: Sequence[int]) -> list[str]: ...
    def render(self, ids: Sequence[int]) -> str: ...
