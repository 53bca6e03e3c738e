# Types of the compiled word grouping (oasr_tok/_engine/words.pyx); tests/house/test_typing.py checks these
# against the built module with mypy's stubtest. Times are typed Any here: the engine checks
# them itself (token_times); the public functions that call it name oasr_tok.core.words.Times.
from collections.abc import Sequence
from typing import Any

from .wordtypes import Words

def char_class(ch: str) -> int: ...
def token_times(values: Any, name: str = "starts") -> Sequence[float]: ...
def group_words(pieces: Sequence[str], starts: Any, ends: Any = None) -> Words: ...
