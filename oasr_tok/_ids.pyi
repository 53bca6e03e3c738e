# Types of the compiled id intake (oasr_tok/_ids.pyx); tests/test_typing.py checks these
# against the built module with mypy's stubtest.
from collections.abc import Sequence
from typing import Any

# `ids` may be anything: a list or tuple of ints, an integer buffer (a NumPy array,
# array.array), any sequence of integers; all else raises NonIntegerIdError.
def check_ids(ids: object, vocab_size: int, skip: bytes | None = None) -> list[int]: ...

# `batch`: a sequence of id sequences or a 2-D integer array. Each row comes back as it was
# given (a list, a tuple, a NumPy row) or, read from a buffer or cut by `lengths` / `pad_id`,
# as a compact int64 memoryview: an id sequence of whatever type, for decode to check.
def batch_rows(batch: object, lengths: Sequence[int] | None = None, pad_id: int | None = None) -> list[Any]: ...
