# Types of oasr_tok/_engine/batch.pyx; tests/house/test_typing.py checks them with mypy's stubtest.
from typing import Any

NOGIL_STEPS: int  # a batch with this many free usual steps or more takes them without the GIL

def feed_batch(tok: Any, rows: Any, given: Any, final: bool, one_per_stream: bool) -> list[str]: ...
