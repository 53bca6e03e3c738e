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
    """A PieceTable behind CTC's neighbour rules (see the module docstring).

    table: the PieceTable rendering each id (skipped ids flagged FLAG_SKIP there too).
    classes: None (no repeat collapse) or a list with one int per id: ids of equal class are
      repeats of each other; -1 marks an id that is dropped before the collapse (a special
      token), which therefore neither renders nor separates repeats.
    strip: hold back trailing whitespace (Wav2Vec2CTCTokenizer's strip); the table's lead rule
      must be "whitespace" and it must have no byte pieces (its tail is then always empty).
    last_pieces: None, or one str per id (None for ids that render nothing): how an id renders
      when it is the last visible token (the `tokenizers` BPEDecoder turns the `</w>` suffix
      into a space except on the last token). The last visible id is then held back, fed to the
      table only once another visible id follows it; until then the text shows its last form.
      What both its forms begin with ("m" of "m " and "m") is emitted at once, as DecodeStream
      does. The table must have no byte pieces and no lead or first-token rule.

    Example:
        >>> from oasr_tok.kinds.api import FLAG_SKIP, CTCStream, PieceTable
        >>> table = PieceTable(["", "h", "e", "l", "o"], flags=bytes([FLAG_SKIP, 0, 0, 0, 0]))
        >>> ctc = CTCStream(table, classes=[0, 1, 2, 3, 4])  # id 0 the blank
        >>> frames = [1, 1, 2, 3, 3, 0, 3, 4]  # h h e l l <blank> l o
        >>> ctc.render(frames)
        'hello'
        >>> state = {}
        >>> [ctc.decode_incremental([i], state) for i in frames]  # a repeat renders nothing
        ['h', '', 'e', 'l', '', '', 'l', 'o']
    """
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
