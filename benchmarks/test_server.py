"""The server loop (docs/decoding.md § The server loop): many streams advanced by one token
each per step, stop strings, streams primed from a prompt.

* **Batch** (issue 43's targets): 256 and 1,024 concurrent streams made by
  `new_stream(prefill=48 ids, stop=2 strings)`, one id each per step, 200 steps, Qwen3 and
  Whisper ids (each stream its own offset into the passages: every script, emoji, characters
  split across tokens): `decode_incremental_batch` with the step as a 1-D int64 array, against
  the same streams each fed by `stream.feed([id])` (our per-stream loop, paired round by round)
  and against one `DecodeStream.step` per stream (primed with the same prompt). Per
  stream-token. Rows beside them: a batch and a loop of `{}` states (the dict contract), and a
  batch of streams with the model's envelope (qwen3_asr, whisper).
* **Two threads**: one thread stepping its batch of 1,024 such streams, against two threads each
  stepping a batch of its own at once (a server with two model replicas): per stream-token, so
  the two-thread row at half the one-thread row would be perfect scaling.
* **Stop strings**: one stream fed one id per call through 4 stop strings that never match (the
  cost of watching for them), against a plain stream ({}) of the same ids.
* **Prefill**: `new_stream(prefill=...)` after a 100-token and a 100,000-token prompt ending with
  the same 100 ids (only the tail is read, so the two should cost the same).
"""

from __future__ import annotations

import numpy as np
import pytest
from bench_cases import Unavailable, hf_runtime, hypothesis, tokenizer
from conftest import in_threads, timed

BATCH_CASES = ["huggingface/qwen3", "whisper/faster-whisper-base"]
PEERS = {
    "huggingface/qwen3": "huggingface/qwen3/tokenizer.json",
    "whisper/faster-whisper-base": "whisper/faster-whisper-base/tokenizer.json",
}
STEPS = 200
PREFILL = 48
STOPS = ["<|im_end|>", "\n\nUser:", "###", "STOP HERE"]  # none occurs in the passages
SERVER_STOPS = STOPS[:2]
IMPLS = [
    "oasr_tok batch of Streams",
    "oasr_tok loop of Streams",
    "oasr_tok batch of dicts",
    "oasr_tok loop of dicts",
    "oasr_tok batch, new_stream(envelope)",
    "DecodeStream",
]
ENVELOPES = {"huggingface/qwen3": "qwen3_asr", "whisper/faster-whisper-base": "whisper"}


def _steps(label: str, n: int) -> list[np.ndarray]:
    ids = hypothesis(label, 6_000)
    return [np.array([ids[(k * 37 + t) % 5_000] for k in range(n)], dtype=np.int64) for t in range(STEPS)]


def _prompts(label: str, n: int) -> list[list[int]]:
    ids = hypothesis(label, 6_000)
    return [ids[(k * 53) % 5_000 : (k * 53) % 5_000 + PREFILL] for k in range(n)]


def _server_streams(tok, prompts):
    return lambda: [tok.new_stream(prefill=p, stop=SERVER_STOPS) for p in prompts]


@pytest.mark.parametrize("label", BATCH_CASES)
@pytest.mark.parametrize("n", [256, 1_024])
@pytest.mark.parametrize("impl", IMPLS)
def test_batch(benchmark, label: str, n: int, impl: str) -> None:
    try:
        tok = tokenizer(label)
        runtime = hf_runtime(PEERS[label])
    except Unavailable as exc:
        pytest.skip(str(exc))
    steps = _steps(label, n)
    prompts = _prompts(label, n)
    singles = [[[int(i)] for i in step] for step in steps]
    batch = tok.decode_incremental_batch

    def run_batch(states):
        for step in steps:
            batch(step, states)

    def run_streams_loop(streams):
        for step in singles:
            for ids, stream in zip(step, streams):
                stream.feed(ids)

    reference = make_reference = None
    if impl == "oasr_tok batch of Streams":
        run, make = run_batch, _server_streams(tok, prompts)
        reference, make_reference = run_streams_loop, make  # the paired ratio to our own loop
    elif impl == "oasr_tok loop of Streams":
        run, make = run_streams_loop, _server_streams(tok, prompts)
    elif impl == "oasr_tok batch of dicts":
        run, make = run_batch, lambda: [{} for _ in range(n)]
    elif impl == "oasr_tok batch, new_stream(envelope)":
        run, make = run_batch, lambda: [tok.new_stream(envelope=ENVELOPES[label]) for _ in range(n)]
    elif impl == "oasr_tok loop of dicts":
        step_one = tok.decode_incremental

        def run(states):
            for step in singles:
                for ids, state in zip(step, states):
                    step_one(ids, state)

        make = lambda: [{} for _ in range(n)]
    else:
        from tokenizers.decoders import DecodeStream

        def run(streams):
            for step in singles:
                for (token_id,), stream in zip(step, streams):
                    stream.step(runtime, token_id)

        def make():
            streams = [DecodeStream(skip_special_tokens=True) for _ in range(n)]
            for stream, prompt in zip(streams, prompts):  # primed with the same prompt
                for token_id in prompt:
                    stream.step(runtime, token_id)
            return streams

    timed(
        benchmark,
        run,
        make,
        per=n * STEPS,
        info={"suite": "server", "case": label, "op": f"batch of {n}", "impl": impl, "n": n},
        reference=reference,
        make_reference=make_reference,
    )


@pytest.mark.parametrize("label", BATCH_CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_two_threads_two_batches(benchmark, label: str, threads: int) -> None:
    try:
        tok = tokenizer(label)
    except Unavailable as exc:
        pytest.skip(str(exc))
    n = 1_024
    steps = _steps(label, n)
    prompts = _prompts(label, n)
    batch = tok.decode_incremental_batch
    make_one = _server_streams(tok, prompts)

    def work(streams) -> None:
        for step in steps:
            batch(step, streams)

    def run(lives) -> None:
        in_threads([lambda live=live: work(live) for live in lives])

    timed(
        benchmark,
        run,
        lambda: [make_one() for _ in range(threads)],
        per=threads * n * STEPS,
        info={
            "suite": "server",
            "case": label,
            "op": f"{threads} thread(s), batches of {n}",
            "impl": "threads",
            "n": n,
        },
    )


@pytest.mark.parametrize("impl", ["oasr_tok", "oasr_tok with 4 stop strings"])
def test_stop_strings(benchmark, impl: str) -> None:
    label = "huggingface/qwen3"
    try:
        tok = tokenizer(label)
    except Unavailable as exc:
        pytest.skip(str(exc))
    ids = [[i] for i in hypothesis(label, 2_000)]
    stops = STOPS if impl != "oasr_tok" else None
    _time_one_id_a_call(benchmark, tok, ids, (lambda: tok.new_stream(stop=stops)) if stops else dict, label, impl)


def _time_one_id_a_call(benchmark, tok, ids: list[list[int]], fresh, label: str, impl: str) -> None:
    """One stream fed `ids` one id per call, from a state `fresh()` makes before each round."""
    step = tok.decode_incremental

    def run(state):
        for one in ids:
            step(one, state)

    timed(
        benchmark,
        run,
        fresh,
        per=len(ids),
        info={"suite": "server", "case": label, "op": "stream, per token", "impl": impl, "n": len(ids)},
    )


@pytest.mark.parametrize("prompt", [100, 100_000])
def test_prefill(benchmark, prompt: int) -> None:
    label = "huggingface/qwen3"
    try:
        tok = tokenizer(label)
    except Unavailable as exc:
        pytest.skip(str(exc))
    # Both prompts end with the same 100 ids: the rows differ by the prompt's length alone (a
    # prompt's tail decides how much priming renders; only the tail is read).
    tail = hypothesis(label, 100)
    ids = hypothesis(label, prompt - 100) + tail if prompt > 100 else tail
    timed(
        benchmark,
        lambda _: tok.new_stream(prefill=ids),
        per=1,
        info={"suite": "server", "case": label, "op": "new_stream(prefill)", "impl": "oasr_tok", "n": prompt},
    )


@pytest.mark.parametrize("impl", ["oasr_tok", "oasr_tok new_stream()", "oasr_tok envelope qwen3_asr"])
def test_envelope(benchmark, impl: str) -> None:
    """What parsing Qwen3-ASR's envelope costs a stream: the same ids, after its header, one id
    per call, through a plain stream ({}), a new_stream() state, and new_stream(envelope=...)."""
    label = "huggingface/qwen3"
    try:
        tok = tokenizer(label)
    except Unavailable as exc:
        pytest.skip(str(exc))
    ids = [[i] for i in tok.encode("language English<asr_text>") + hypothesis(label, 2_000)]
    fresh = {
        "oasr_tok": dict,
        "oasr_tok new_stream()": tok.new_stream,
        "oasr_tok envelope qwen3_asr": lambda: tok.new_stream(envelope="qwen3_asr"),
    }[impl]
    _time_one_id_a_call(benchmark, tok, ids, fresh, label, impl)
