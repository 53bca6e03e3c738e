"""Transcripts per second for 100,000 n-best hypotheses: through the Ray Data recipe
of docs/scale.md on a local Ray with every CPU of the machine, against the same work in one
process (decode_batch). Reported, not a target: on a 2-core machine Ray's scheduling and
serialisation dominate. Ray's start-up is outside the timing; the dataset is built untimed.
"""

from __future__ import annotations

import pytest
from bench_cases import hypothesis, tokenizer
from conftest import timed

LABEL = "huggingface/qwen3"
N = 100_000


def _nbest() -> list[list[int]]:
    ids = hypothesis(LABEL, 4_000)
    return [ids[(k * 37) % 3_900 : (k * 37) % 3_900 + 8 + k % 40] for k in range(N)]


@pytest.mark.parametrize("impl", ["one process", "ray map_batches"])
def test_nbest_throughput(benchmark, impl: str) -> None:
    tok = tokenizer(LABEL)
    hyps = _nbest()
    if impl == "one process":

        def run(_):
            tok.decode_batch(hyps)

        make = None
    else:
        pytest.importorskip("ray.data", reason="the Ray row needs the distributed extra")
        import ray
        import ray.data

        from oasr_tok.toolkits.batch import Transcriber

        if not ray.is_initialized():
            ray.init(include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        ds = ray.data.from_items([{"ids": h} for h in hyps]).materialize()

        def run(_):
            ds.map_batches(
                Transcriber,
                fn_constructor_args=(tok,),
                batch_size=2_000,
                concurrency=max(1, int(ray.cluster_resources().get("CPU", 1))),
                batch_format="default",
            ).materialize()

        make = None
    benchmark.group = "scale: 100,000 n-best hypotheses"
    timed(
        benchmark,
        run,
        make,
        per=N,
        min_rounds=1,
        info={"suite": "scale", "case": LABEL, "kind": "huggingface", "impl": impl, "n": N},
    )
