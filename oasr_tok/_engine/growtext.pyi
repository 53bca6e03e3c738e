# Types of oasr_tok/_engine/growtext.pyx; tests/house/test_typing.py checks them with mypy's stubtest.
from typing import Any

from typing_extensions import disjoint_base

@disjoint_base
class GrowText:
    def __len__(self) -> int: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def _from_text(text: str) -> GrowText: ...
