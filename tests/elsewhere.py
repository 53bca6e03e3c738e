"""Unpickling as another process would: one that holds none of this process's tokenizers.

A process finds a pickled tokenizer (or a stream's) among the tokenizers it holds, by
fingerprint (docs/scale.md § Streams that travel), so in the test process, which holds the
sender and every contract case's tokenizer, a by-value pickle comes back as the very tokenizer
it was made from. A test of what a worker without them rebuilds unpickles inside
`holding_nothing()` (or with `loads`): the held tokenizers and the rebuilt-from-pickles cache are
set aside for the block and put back after it."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator
from typing import Any

from oasr_tok._engine import travel
from oasr_tok.core import pickling


@contextlib.contextmanager
def holding_nothing() -> Iterator[None]:
    held = travel._printed, travel._waiting
    built = dict(pickling._built)
    travel._printed, travel._waiting = {}, {}
    pickling._built.clear()
    try:
        yield
    finally:
        travel._printed, travel._waiting = held
        pickling._built.clear()
        pickling._built.update(built)


def loads(blob: bytes) -> Any:
    """pickle.loads(blob) in a process that holds no tokenizer."""
    with holding_nothing():
        return pickle.loads(blob)
