# Types of oasr_tok/_engine/sglang_step.pyx; tests/house/test_typing.py checks them with mypy's stubtest.
from typing import Any

from typing_extensions import disjoint_base

from oasr_tok._engine.stream import Stream

@disjoint_base
class Request:
    @property
    def stream(self) -> Stream: ...
    @property
    def keeps_specials(self) -> bool: ...
    seen: int
    def __init__(self, stream: Stream, keeps_specials: bool, seen: int = 0) -> None: ...
    @property
    def rule(self) -> tuple[str, int, int] | None: ...

def step_requests(owner: Any, states: dict[Any, Request], recv_obj: Any, batch_no: int, tok: Any) -> list[str]: ...
