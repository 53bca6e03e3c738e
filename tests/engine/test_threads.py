"""One tokenizer shared by many threads gives every thread what a single thread gets
(docs/architecture.md § Threads and free-threaded Python). Each thread owns its stream
states; the tokenizer, its compiled tables and the module-level caches are shared."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from oasr_tok._engine.batch import NOGIL_STEPS

from cases import KindCase, all_cases

THREADS = 8
CASES = all_cases()
BY_NAME = {case.name: case for case in CASES}


def _workload(case: KindCase, seed: int) -> list[list[int]]:
    tok, interesting, realistic = case.inputs()
    rng = random.Random(seed)
    pool = interesting or list(range(min(tok.vocab_size, 500)))
    streams = [list(ids) for ids in realistic[:4]]
    for _ in range(6):
        streams.append(
            [
                rng.choice(pool) if rng.random() < 0.5 else rng.randrange(tok.vocab_size)
                for _ in range(rng.randrange(1, 80))
            ]
        )
    return streams


def _everything(tok, streams: list[list[int]]) -> list[object]:
    """Every decoding path on every stream, as comparable values."""
    results: list[object] = []
    for ids in streams:
        state: dict = {}
        deltas = [tok.decode_incremental(ids[i : i + 3], state) for i in range(0, len(ids), 3)]
        deltas.append(tok.decode_incremental([], state, final=True))
        words = tok.word_timings(ids, list(range(len(ids)))) if ids else []
        results.append(
            (
                tok.decode(ids),
                tok.token_pieces(ids),
                deltas,
                [(w.text, w.start, w.end, w.first_token, w.last_token) for w in words],
            )
        )
    results.append(tok.decode_batch(streams))
    return results


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_threads_sharing_one_tokenizer_get_what_one_thread_gets(case: KindCase) -> None:
    tok = case.tokenizer()
    workloads = [_workload(case, seed) for seed in range(THREADS)]
    expected = [_everything(tok, streams) for streams in workloads]
    assert _at_once(THREADS, lambda k: _everything(tok, workloads[k])) == expected


def _at_once(count: int, work) -> list[object]:
    """work(k) in `count` threads started together, three rounds each (so that the threads
    interleave inside the calls): the last result of each; the first error of any, raised."""
    got: list[object] = [None] * count
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def run(k: int) -> None:
        try:
            barrier.wait()
            for _ in range(3):
                got[k] = work(k)
        except BaseException as exc:  # raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return got


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_threads_decoding_long_transcripts_at_once_get_what_one_thread_gets(case: KindCase) -> None:
    """A decode of 40,000 ids or more lets go of the GIL while it gathers its pieces (_engine/join.pyx):
    four threads decoding long transcripts at once (lists and int32 arrays, the array written
    by no one) get what one thread gets."""
    tok = case.tokenizer()
    rng = random.Random(11)
    pool = list(range(tok.vocab_size))
    long = [[rng.choice(pool) for _ in range(40_000 + 997 * k)] for k in range(4)]
    inputs: list[object] = [long[0], np.array(long[1], dtype=np.int32), long[2], np.array(long[3])]
    expected = [tok.decode(ids) for ids in inputs]
    assert _at_once(4, lambda k: tok.decode(inputs[k])) == expected


def test_threads_that_first_encode_build_one_runtime_and_load_in_parallel(monkeypatch) -> None:
    """The huggingface kind builds its `tokenizers` runtime at the first encode, under a lock:
    threads that encode at once on a fresh tokenizer build it once and all get its ids; loads in
    parallel threads each parse their files in their own reading_once scope."""
    from tokenizers import Tokenizer as Backend

    import oasr_tok

    from paths import require_shared

    path = require_shared("huggingface/qwen3/tokenizer.json")  # (threads cannot turn a missing file into a skip)
    built: list[int] = []
    original = Backend.from_str

    def counted(text: str) -> Backend:
        built.append(1)
        return original(text)

    monkeypatch.setattr(Backend, "from_str", staticmethod(counted))
    loaded = _at_once(THREADS, lambda k: oasr_tok.load(path))
    assert built == [] and all(t is not None for t in loaded)
    tok = loaded[0]
    texts = [f"thread {k}: 今天 🎉 naïve" for k in range(THREADS)]
    got = _at_once(THREADS, lambda k: tok.encode(texts[k]))  # type: ignore[attr-defined]
    assert built == [1]
    runtime = original(open(path, encoding="utf-8").read())
    assert got == [runtime.encode(t, add_special_tokens=False).ids for t in texts]


@pytest.mark.parametrize("big", [False, True], ids=["GIL held", "GIL let go"])
def test_threads_stepping_batches_of_streams_at_once_get_each_streams_own_feed(big: bool) -> None:
    """A batch takes its streams' usual steps without the GIL only from NOGIL_STEPS of them up
    (_engine/batch.pyx: below that, letting it go made two threads hand it over on every call).
    Two threads each stepping a batch of their own Qwen3 streams, on either side of that size,
    give every stream what its own feed gives, id by id."""
    tok = BY_NAME["huggingface/qwen3"].tokenizer()
    n = NOGIL_STEPS + 3 if big else 300
    _, _, realistic = BY_NAME["huggingface/qwen3"].inputs()
    ids = [i for text_ids in realistic for i in text_ids]
    steps = [np.array([ids[(k * 7 + t) % len(ids)] for k in range(n)], dtype=np.int64) for t in range(6)]

    def run(k: int) -> list[list[str]]:
        streams = [tok.new_stream(stop=["\n\nUser:"]) for _ in range(n)]
        return [tok.decode_incremental_batch(step, streams) for step in steps]

    streams = [tok.new_stream(stop=["\n\nUser:"]) for _ in range(n)]
    fed = [[stream.feed([int(i)]) for i, stream in zip(step, streams)] for step in steps]
    assert _at_once(2, run) == [fed, fed]
