"""Where mode "oasr"'s share of vLLM's output step goes (docs/engines.md § What it costs;
benchmarks/measurements.md): the rows of test_vllm.py's output step, split. Thread CPU time with
the garbage collector off in the timed parts (so another process's load and a collection that
happens to fall in one part do not move them), the minimum of the rounds, per request-token:

* the step with no tokenizer, with mode hf, with mode oasr (each on fresh requests);
* mode oasr's step_served alone and vLLM's own loop alone (timed apart in one step);
* the streams' decode_incremental_batch alone, on the same prompts and ids;
* step_served over vLLM's own no-tokenizer request states: it finds each request's detokenizer
  and skips it (none is ours), the least any batch step over vLLM's outputs reads.

    cd benchmarks && python vllm_split.py [requests=1024] [ids a step=1] [rounds=5]

Needs vLLM (the vLLM venv) and ../shared/fixtures; not part of `make bench`.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

import numpy as np
import test_vllm as tv
from vllm.v1.engine import FinishReason
from vllm.v1.engine.output_processor import OutputProcessor

from oasr_tok._engine.served import step_served
from oasr_tok.integrations.vllm.detokenizer import step


def _cpu(run: Callable[[], object]) -> float:
    """run()'s thread CPU time, the collector off."""
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        run()
        return time.thread_time() - start
    finally:
        gc.enable()


def _each(call: Callable[[object], object], items: list) -> Callable[[], None]:
    def run() -> None:
        for item in items:
            call(item)

    return run


def main(n: int, per_step: int, rounds: int) -> None:
    toks = tv.tokenizers()
    oasr = toks["mode oasr"]
    prompts, generated = tv._requests(n)
    wrapped = OutputProcessor.process_outputs
    original = wrapped.__wrapped__  # vLLM's own loop (patches.py keeps it)
    tokens = n * tv.TOKENS

    def whole(tok: object) -> float:
        op, steps = tv._processor(tok, prompts, generated, per_step)
        return _cpu(_each(lambda outputs: wrapped(op, outputs), steps))

    def apart() -> tuple[float, float]:
        op, steps = tv._processor(oasr, prompts, generated, per_step)
        spent = [0.0, 0.0]

        def run() -> None:
            for outputs in steps:
                a = time.thread_time()
                step(op.request_states, outputs)
                b = time.thread_time()
                original(op, outputs)
                spent[0] += b - a
                spent[1] += time.thread_time() - b

        _cpu(run)
        return spent[0], spent[1]

    def decode() -> float:
        view = oasr.view(True)
        streams = [view.new_stream(prefill=p) for p in prompts]
        columns = [np.array([g[t] for g in generated], dtype=np.int64) for t in range(tv.TOKENS)]
        return _cpu(_each(lambda column: view.decode_incremental_batch(column, streams), columns))

    def finding() -> float:
        op, steps = tv._processor(None, prompts, generated, per_step)
        return _cpu(_each(lambda outputs: step_served(outputs, op.request_states, FinishReason.STOP), steps))

    rows: dict[str, list[float]] = {}
    for _ in range(rounds):
        rows.setdefault("no tokenizer", []).append(whole(None))
        rows.setdefault("mode hf", []).append(whole(toks["mode hf"]))
        rows.setdefault("mode oasr", []).append(whole(oasr))
        batch, loop = apart()
        rows.setdefault("mode oasr: step_served alone", []).append(batch)
        rows.setdefault("mode oasr: vLLM's loop alone", []).append(loop)
        rows.setdefault("the streams' decode_incremental_batch alone", []).append(decode())
        rows.setdefault("step_served finding each request's detokenizer", []).append(finding())
    us = {name: min(values) / tokens * 1e6 for name, values in rows.items()}
    hf_share = us["mode hf"] - us["no tokenizer"]
    print(f"{n} requests, {per_step} id(s) a step: µs a request-token (thread CPU time, min of {rounds} rounds)")
    for name, value in us.items():
        print(f"  {name:50s} {value:7.3f}   {value / hf_share:6.3f}× mode hf's share")
    share = us["mode oasr"] - us["no tokenizer"]
    loop = us["mode oasr: vLLM's loop alone"] - us["no tokenizer"]
    print(f"  mode hf's share {hf_share:.3f}; mode oasr's {share:.3f} ({share / hf_share:.3f}×); vLLM's loop above")
    print(f"  the no-tokenizer step {loop:.3f}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    main(*(args + [1_024, 1, 5][len(args) :]))
