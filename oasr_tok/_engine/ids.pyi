# Types of the compiled id intake (oasr_tok/_engine/ids.pyx); tests/house/test_typing.py checks these
# against the built module with mypy's stubtest.
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, final

# `ids` may be anything: a list or tuple of ints, an integer buffer (a NumPy array,
# array.array), any sequence of integers; all else raises NonIntegerIdError.
def check_ids(ids: object, vocab_size: int, skip: bytes | None = None) -> list[int]: ...

# check_ids for a reader that iterates once (the `tokenizers` runtime): a list already all
# checked ids comes back as it is, anything else as a CheckedIds.
def runtime_ids(ids: object, vocab_size: int, skip: bytes | None = None) -> list[int] | CheckedIds: ...

# The checked ids as ints, less the skipped ones, for one pass; len() is an upper bound.
@final
class CheckedIds:
    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> NoReturn: ...
    def __iter__(self) -> Iterator[int]: ...
    def __next__(self) -> int: ...

# What id_at raises at an item of a long list or buffer read in place that is not an id in
# range: the compiled callers then read the ids again with the copying read. Never escapes.
class ReadAgain(RuntimeError): ...

# `batch`: a sequence of id sequences or a 2-D integer array. Each row comes back as it was
# given (a list, a tuple, a NumPy row) or, read from a buffer or cut by `lengths` / `pad_id`,
# as a compact int64 memoryview: an id sequence of whatever type, for decode to check.
def batch_rows(batch: object, lengths: Sequence[int] | None = None, pad_id: int | None = None) -> list[Any]: ...
