from collections.abc import Sequence
from typing import Any

from ._wordtypes import Words

def char_class(ch: str) -> int: ...
def group_words(pieces: Sequence[str], starts: Any, ends: Any = ...) -> Words: ...
