from collections.abc import Sequence
from typing import Any, final

from .contract import TokenizerContract
from .words import Word

WINDOW: int

@final
class HypothesisState:
    def __init__(
        self,
        n: int,
        window: tuple[int, ...],
        stream: tuple[Any, ...] | dict[str, Any],
        pending: tuple[str, ...],
        skip: int,
        history: tuple[tuple[int, ...], ...],
        searched: int,
        tag: int | None,
        closed: bool,
        starts: tuple[Any, ...] | None = None,
    ) -> None: ...
    def __reduce__(self) -> tuple[type[HypothesisState], tuple[Any, ...]]: ...

def lean(stream: dict[str, Any]) -> dict[str, Any]: ...
def decode_hypothesis(
    tok: TokenizerContract,
    hypothesis_ids: Sequence[int],
    state: dict[str, Any],
    final: bool = False,
    agreement: int = 2,
    times: Sequence[float] | None = None,
) -> tuple[str, str] | tuple[str, str, list[Word]]: ...
