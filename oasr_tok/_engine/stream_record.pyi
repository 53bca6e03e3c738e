# Types of oasr_tok/_engine/stream_record.pyx; tests/house/test_typing.py checks them with mypy's stubtest.
from typing import Any, ClassVar

from typing_extensions import disjoint_base

@disjoint_base
class StreamRecord:
    @property
    def stops(self) -> tuple[str, ...]: ...
    @property
    def keeps_stop(self) -> bool: ...
    pending: str
    emitted: int
    tokens: int
    prompt_rest: str
    closed: bool
    @property
    def ends(self) -> frozenset[str]: ...
    @property
    def firsts(self) -> frozenset[str]: ...
    stop: Any
    envelope: Any
    def __init__(self, stops: tuple[str, ...], keeps_stop: bool, prompt_rest: str, envelope: Any = None) -> None: ...
    def fields(self) -> tuple[Any, ...]: ...
    def copy(self) -> StreamRecord: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def _rebuilt(
    stops: tuple[str, ...],
    keeps_stop: bool,
    pending: str,
    emitted: int,
    tokens: int,
    prompt_rest: str,
    closed: bool,
    stop: Any,
    envelope: Any,
) -> StreamRecord: ...
