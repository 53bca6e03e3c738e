from collections.abc import Sequence
from typing import Any

from .base import Tokenizer
from .words import Word

WINDOW: int

def lean(stream: dict[str, Any]) -> dict[str, Any]: ...
def decode_hypothesis(
    tok: Tokenizer,
    hypothesis_ids: Sequence[int],
    state: dict[str, Any],
    final: bool = False,
    agreement: int = 2,
    times: Sequence[float] | None = None,
) -> tuple[str, str] | tuple[str, str, list[Word]]: ...
