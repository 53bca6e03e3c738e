"""Memory of stream states: the peak of 10,000 concurrent streams, and what one
state holds after 50,000 tokens besides its text (it must not grow with the ids).

Measured with tracemalloc, which sees every Python object allocation, the resizable text
buffer included. The time to feed the 10,000 streams is the benchmark's own figure.
"""

from __future__ import annotations

import sys
import tracemalloc

import pytest
from bench_cases import BY_LABEL, STREAM_CASES, Unavailable, hypothesis, period, tokenizer
from conftest import timed

STREAMS = 10_000
TOKENS_PER_STREAM = 64  # a few seconds of speech per live stream
LONG = 50_000


def deep_size(obj, seen: set[int] | None = None) -> int:
    """Bytes held by obj and everything it contains (each object counted once)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        size += sum(deep_size(x, seen) for x in obj)
    return size


def state_minus_text(state: dict) -> int:
    """Bytes of the state besides its text (ints and one-character strings are counted too:
    getsizeof does not know they are shared)."""
    return deep_size(state) - sys.getsizeof(state.get("text", ""))


def _feed_streams(decode_incremental, chunks: list[list[list[int]]]) -> list[dict]:
    states = [{} for _ in chunks]
    for state, singles in zip(states, chunks):
        for one in singles:
            decode_incremental(one, state)
    return states


@pytest.mark.parametrize("label", [c.label for c in STREAM_CASES])
def test_stream_memory(benchmark, label: str) -> None:
    case = BY_LABEL[label]
    try:
        tok = tokenizer(label)
        p = len(period(label))
    except Unavailable as exc:
        pytest.skip(str(exc))
    ids = hypothesis(label, p + TOKENS_PER_STREAM)
    # Each stream starts at another point of the passage, as concurrent speakers would.
    chunks = [[[i] for i in ids[s % p : s % p + TOKENS_PER_STREAM]] for s in range(0, STREAMS * 7, 7)]
    dec = tok.decode_incremental

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    states = _feed_streams(dec, chunks)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    texts = sum(sys.getsizeof(s.get("text", "")) for s in states)
    del states

    long_state: dict = {}
    long_ids = hypothesis(label, LONG)
    for token_id in long_ids[:1_000]:
        dec([token_id], long_state)
    at_1k = state_minus_text(long_state)
    for token_id in long_ids[1_000:]:
        dec([token_id], long_state)
    at_50k = state_minus_text(long_state)

    benchmark.group = "memory: 10,000 concurrent streams"
    timed(
        benchmark,
        lambda _: _feed_streams(dec, chunks),
        per=STREAMS * TOKENS_PER_STREAM,
        min_rounds=3,
        info={
            "suite": "memory",
            "case": label,
            "kind": case.kind,
            "impl": "oasr_tok",
            "n": STREAMS,
            "streams": STREAMS,
            "tokens_per_stream": TOKENS_PER_STREAM,
            "peak_bytes": peak - before,
            "retained_bytes": current - before,
            "text_bytes": texts,
            "state_minus_text_1k": at_1k,
            "state_minus_text_50k": at_50k,
            "text_chars_50k": len(long_state.get("text", "")),
            "state_keys_50k": sorted(k for k in long_state),
        },
    )
