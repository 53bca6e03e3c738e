# Types of the compiled word grouping (oasr_tok/_words.pyx); tests/test_typing.py checks these
# against the built module with mypy's stubtest.
from collections.abc import Sequence

from ..core.words import Times
from .wordtypes import Words

def char_class(ch: str) -> int: ...
def token_times(values: Times, name: str = "starts") -> Sequence[float]: ...
def group_words(pieces: Sequence[str], starts: Times, ends: Times | None = None) -> Words: ...
