"""Two threads (docs/architecture.md § Threads and free-threaded Python): a long decode of a kind
that joins pieces by id lets go of the GIL while it gathers them. One thread decoding one
transcript of 200,000 ids ten times over, against two threads each doing the same at once (a
server's sustained load: starting the threads is a small part of a round): per decode, so 0.5x
the one-thread row would be perfect scaling and 1.0x none. Qwen3's byte-level decode is a join
too; Mistral-7B's (a text-mode table, decoded by the stream engine, which holds the GIL
throughout) is the control."""

from __future__ import annotations

import pytest
from bench_cases import Unavailable, hypothesis, tokenizer
from conftest import in_threads, timed

CASES = [
    "symbol_table/icefall-bpe500",
    "whisper/faster-whisper-base",
    "gguf/qwen2",
    "huggingface/qwen3",
    "huggingface/mistral-7b",
]
N = 200_000
REPEATS = 10


@pytest.mark.parametrize("label", CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_decode_in_threads(benchmark, label: str, threads: int) -> None:
    try:
        tok = tokenizer(label)
    except Unavailable as exc:
        pytest.skip(str(exc))
    ids = hypothesis(label, N)
    decode = tok.decode

    def work() -> None:
        for _ in range(REPEATS):
            decode(ids)

    def run(_: object) -> None:
        in_threads([work] * threads)

    timed(
        benchmark,
        run,
        per=threads * REPEATS,
        info={"suite": "threads", "case": label, "op": f"decode of {N:,} ids", "impl": f"{threads} thread(s)", "n": N},
    )
