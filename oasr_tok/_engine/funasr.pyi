# Types of the compiled funasr_char rendering machine (oasr_tok/_engine/funasr.pyx); tests/house/test_typing.py
# checks these against the built module with mypy's stubtest.
from typing import TypeAlias

from typing_extensions import disjoint_base

# Token classes.
SKIP: int
CJK: int
PIECE: int
WORD: int
OTHER: int
DIGITS: int

# What Track.freeze makes: (word, blank, digit, pending elements, kind of the last two released
# elements, held whitespace, started).
_Frozen: TypeAlias = tuple[str, bool, bool, tuple[str, ...], int, int, str, bool]

@disjoint_base
class Track:
    word: str
    blank: bool
    digit: bool
    pend: list[str]
    c1: int
    c2: int
    ws: str
    started: bool
    at: int
    def __init__(self, data: _Frozen | None = None, owned: bool = False) -> None: ...
    def freeze(self) -> _Frozen: ...
    def copy(self) -> Track: ...
    def parity_step(self, cls: int, text: str) -> None: ...
    def clean_step(self, cls: int, text: str) -> None: ...
    def clean_close(self) -> None: ...
    def settle(self, out: list[str], final: bool = False) -> None: ...
    def rest(self, clean: bool) -> str: ...

# FunASR's abbr_dispose over a finished element list: each run of single ASCII letters joined
# by single spaces becomes one upper-cased element.
def abbreviate(elements: list[str]) -> list[str]: ...

# `info[id]`: (class, machine text, sentence-Chinese, sentence-alpha, divergent, branch text).
def attribute(ids: object, info: list[tuple[int, str, bool, bool, bool, str]], clean: bool) -> list[str]: ...
