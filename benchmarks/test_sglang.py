"""SGLang's detokenizer step (docs/engines.md § SGLang): SGLang 0.5.23's own
DetokenizerManager.handle_batch_token_id_out, with its own decode and with oasr_tok's
(oasr_tok.integrations.sglang.install), side by side in one run on the same batches.

Both managers are SGLang's own code, loaded from the package index's wheel without installing
SGLang (tests/sglang_reference.py; `python fixtures/fetch_sglang.py` unpacks it, else these
rows skip naming it), on Qwen3's tokenizer.json folder, with the HF tokenizer SGLang loads there.

Continuous batching, as SGLang's scheduler sends it: 256 or 1,024 requests, each living 64
batches (a first batch with its last 5 prompt ids and its first ids, 62 batches of one or four
new ids, a last batch that finishes it: length), their lives staggered so that every batch
starts and finishes 1/64 of them; realistic ids (multi-script passages, every request its own
offset into them; benchmarks/bench_corpus.py). A round is 64 batches of that steady state, per
request-step: a round over (requests × 64). Our row is paired round by round with SGLang's
(conftest.timed(reference=...)); the target (issue 50): SGLang's step at least 20× slower.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench_cases import Unavailable, hypothesis, shared
from conftest import timed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # SGLang's code, as the tests load it
from oasr_tok.integrations import sglang as oasr_sglang

import sglang_reference as reference

CASE = "huggingface/qwen3"
LIFE = 64  # batches in a request's life: the first, 62 in between, the last
IMPLS = [pytest.param("SGLang 0.5.23", marks=pytest.mark.peer), "oasr_tok in SGLang 0.5.23"]


def _batches(n: int, width: int) -> tuple[list, list]:
    """(the warm-up batches that start the staggered lives, the 64 batches of a round): request
    k's life starts at batch k % 64; in a round, batch t carries each request's next place in
    its life, so the round repeats itself (a request finished at the end of its life starts
    again, same id, at the next batch)."""
    ids = hypothesis(CASE, 20_000)
    span = 5 + LIFE * width
    lives = [ids[(k * 97) % (len(ids) - span) :][:span] for k in range(n)]

    def piece(k: int, place: int) -> list[int]:
        life = lives[k]
        return life[: 5 + width] if place == 0 else life[5 + place * width :][:width]

    def make(entries: list[tuple[int, int]]):
        rids = [f"bench-{n}-{width}-{k}" for k, _ in entries]  # (each row's own requests)
        rows = [piece(k, place) for k, place in entries]
        ending = {"type": "length", "length": LIFE * width}
        finished = [ending if place == LIFE - 1 else None for _, place in entries]
        return reference.batch(rids, rows, [5] * len(entries), finished)

    warm_up = [make([(k, t - k % LIFE) for k in range(n) if k % LIFE <= t]) for t in range(LIFE)]
    rounds = [make([(k, (t - k % LIFE) % LIFE) for k in range(n)]) for t in range(LIFE)]
    return warm_up, rounds


_MANAGERS: dict[str, object] = {}


def _manager(impl: str):
    if impl not in _MANAGERS:
        made = reference.manager(shared(CASE))
        if impl != "SGLang 0.5.23":
            saved = oasr_sglang.sglang_version
            oasr_sglang.sglang_version = lambda: reference.VERSION  # (the unpacked files are 0.5.23's)
            try:
                oasr_sglang.install(made)
            finally:
                oasr_sglang.sglang_version = saved
        _MANAGERS[impl] = made
    return _MANAGERS[impl]


@pytest.mark.parametrize("width", [1, 4])
@pytest.mark.parametrize("n", [256, 1_024])
@pytest.mark.parametrize("impl", IMPLS)
def test_detokenizer_step(benchmark, impl: str, n: int, width: int) -> None:
    try:
        reference.files()
        warm_up, batches = _batches(n, width)
        ours, theirs = _manager(impl), _manager("SGLang 0.5.23")
    except (Unavailable, FileNotFoundError) as exc:
        pytest.skip(str(exc))
    for manager in {id(ours): ours, id(theirs): theirs}.values():
        if not getattr(manager, "_bench_started", set()) >= {(n, width)}:
            for batch in warm_up:
                manager.handle_batch_token_id_out(batch)
            manager._bench_started = getattr(manager, "_bench_started", set()) | {(n, width)}

    def steady(manager):
        def run(_):
            handle = manager.handle_batch_token_id_out
            for batch in batches:
                handle(batch)

        return run

    paired = impl != "SGLang 0.5.23"
    timed(
        benchmark,
        steady(ours),
        per=n * LIFE,
        info={"suite": "sglang", "case": CASE, "op": f"{width} id(s) per step", "impl": impl, "n": n},
        reference=steady(theirs) if paired else None,
    )
