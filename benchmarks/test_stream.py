"""decode_incremental cost per token at transcript positions 100 ... 100,000, fed one token
at a time, side by side with the peers on the same ids.

Methodology. A stream is prepared to position N once; each round forks it with
copy.deepcopy and feeds ids[N] outside the timing: the fork shares state["text"] with the
prototype, and the first commit after a fork pays one copy of the text (the buffer only
grows in place while the state dict holds the only reference). The timed loop then feeds the
next K ids one call per id, and the report divides by K. K is one whole period of the
repeated passage (capped at 512), so every position is timed over the same content. Peers
reach position N their own way (DecodeStream is streamed there; the re-decoders are handed
the prefix) and are timed over the same K ids; the Θ(N)-per-token re-decoders get K = 16.
"""

from __future__ import annotations

import copy

import pytest
from bench_cases import STREAM_CASES, Unavailable, hf_runtime, hypothesis, period, sp_runtime, tokenizer
from bench_peers import DecodeStreamPeer, RedecodePrefixPeer, SentencePiecePartialPeer, VllmWindowPeer, hf_special_ids
from conftest import probe_seconds, timed

POSITIONS = [100, 1_000, 10_000, 50_000, 100_000]
#: Kinds whose per-token cost has a target relative to the huggingface kind's on Qwen3 (the
#: same byte-level machine read from other files) get a second row, WITH_QWEN3: the same stream
#: paired with Qwen3's at the same position, timed in turn (conftest.timed), so a drift of the
#: host's speed between two rows minutes apart does not enter the ratio. A row of its own: two
#: streams taking turns also take turns growing their texts, and whether the allocator can
#: extend a text in place then differs from a stream run alone, which the growth rows measure.
AGAINST_QWEN3 = ("gguf/qwen2", "tekken/tekken_240911", "whisper/multilingual.tiktoken")
QWEN3 = "huggingface/qwen3"
WITH_QWEN3 = "oasr_tok[with Qwen3]"
QUADRATIC_POSITIONS = [100, 1_000, 10_000, 50_000]
K_MAX = 512
K_SLOW = 16  # for implementations whose per-token cost grows with N
SLOW_PER_TOKEN = 200e-6  # seconds: above this a K-token round would blow the budget


def _impls(case) -> list[tuple[str, list[int]]]:
    impls = [("oasr_tok", POSITIONS)]
    if case.label in AGAINST_QWEN3:
        impls.append((WITH_QWEN3, POSITIONS))
    if case.hf_peer:
        impls += [("DecodeStream", POSITIONS), ("vLLM window", POSITIONS), ("re-decode prefix", QUADRATIC_POSITIONS)]
    if case.sp_peer:
        impls += [("sentencepiece partial", QUADRATIC_POSITIONS)]
    return impls


PARAMS = [
    pytest.param(
        case.label, impl, n, id=f"{case.label}|{impl}|{n}", marks=[pytest.mark.peer] if impl != "oasr_tok" else []
    )
    for case in STREAM_CASES
    for impl, positions in _impls(case)
    for n in positions
]


def _our_stream(label: str, ids: list[int], n: int, k: int):
    tok = tokenizer(label)
    decode_incremental = tok.decode_incremental
    proto: dict = {}
    decode_incremental(ids[:n], proto)
    singles = [[i] for i in ids[n + 1 : n + 1 + k]]

    def make():
        state = copy.deepcopy(proto)
        decode_incremental([ids[n]], state)  # pays the one copy a fork costs, untimed
        return state

    def run(state):
        for one in singles:
            decode_incremental(one, state)

    return make, run


def _peer_stream(case, impl: str, ids: list[int], n: int, k: int):
    if impl == "sentencepiece partial":
        processor = sp_runtime(case.sp_peer)

        def make():
            return SentencePiecePartialPeer(processor, ids[: n + 1])
    else:
        runtime = hf_runtime(case.hf_peer)
        if impl == "DecodeStream":

            def make():
                return DecodeStreamPeer(runtime, ids[: n + 1])
        elif impl == "vLLM window":
            special = hf_special_ids(runtime)

            def make():
                peer = VllmWindowPeer(runtime, ids[:n], special)
                peer.step(ids[n])
                return peer
        else:

            def make():
                return RedecodePrefixPeer(runtime, ids[: n + 1])

    chunk = ids[n + 1 : n + 1 + k]

    if impl == "DecodeStream":
        # The native step straight from the loop, as ours is called: no wrapper frame.
        def run(peer):
            step, runtime = peer.stream.step, peer.runtime
            for token_id in chunk:
                step(runtime, token_id)
    else:
        # The Python-level peers are Python algorithms in their own projects too.
        def run(peer):
            step = peer.step
            for token_id in chunk:
                step(token_id)

    return make, run


@pytest.mark.parametrize("label,impl,n", PARAMS)
def test_decode_incremental(benchmark, label: str, impl: str, n: int) -> None:
    from bench_cases import BY_LABEL

    case = BY_LABEL[label]
    try:
        p = len(period(label))
        if impl in ("oasr_tok", WITH_QWEN3):
            tokenizer(label)
    except Unavailable as exc:
        pytest.skip(str(exc))
    quadratic = impl in ("re-decode prefix", "sentencepiece partial")
    k = K_SLOW if quadratic else min(p, K_MAX)
    ids = hypothesis(label, n + 1 + k)
    if impl in ("oasr_tok", WITH_QWEN3):
        make, run = _our_stream(label, ids, n, k)
        # A kind still on the quadratic default would take minutes over K tokens: probe.
        live = make()
        if probe_seconds(lambda: run(live)) / k > SLOW_PER_TOKEN and k > K_SLOW:
            k = K_SLOW
            make, run = _our_stream(label, ids, n, k)
    else:
        make, run = _peer_stream(case, impl, ids, n, k)
    paired: dict = {}
    if impl == WITH_QWEN3:
        try:
            qk = min(len(period(QWEN3)), K_MAX)
            make_q, run_q = _our_stream(QWEN3, hypothesis(QWEN3, n + 1 + qk), n, qk)
        except Unavailable as exc:
            pytest.skip(str(exc))
        paired = {"reference": run_q, "make_reference": make_q, "reference_per": qk}
    benchmark.group = f"stream {label} @{n}"
    timed(
        benchmark,
        run,
        make,
        per=k,
        info={"suite": "stream", "case": label, "kind": case.kind, "impl": impl, "n": n},
        **paired,
    )
