"""oasr_tok in vLLM's output step (docs/engines.md § vLLM): vLLM 0.33's own
OutputProcessor.process_outputs driven on CPU without a model, with tokenizer_mode "oasr" and
with vLLM's mode "hf" on the same Qwen3 tokenizer.json, side by side. Skipped without vLLM.

* **The output step**: 256 and 1,024 requests (a 48-id prompt each, two stop strings that never
  match, DELTA outputs), 48 generated ids each, one id per engine step and four ids per step
  (speculative decoding); per request-token. Each row is paired round by round with the same
  step run with no tokenizer (vLLM's skip_tokenizer_init: the step minus the detokenizer), so
  the two targets are ratios of paired ratios, which a drift of the machine's speed between rows
  does not move: the step with mode "oasr" over the step with mode "hf" (target ≤ 0.65×), and
  the detokenizer's share (the step less the step without a tokenizer), oasr over hf (≤ 0.1×).
* **Logprob strings**: 64 requests, top-20 (21 ids a position with the sampled one), 50 steps:
  vLLM's own per-request strings (convert_ids_list_to_tokens, then _verify_tokens with the
  request's context) on mode "hf", against mode "oasr"'s one lookup per step (the token table,
  then vLLM's _correct_decoded_token for the strings the table marks as ending in U+FFFD); per id, paired
  (target ≤ 0.05×).
"""

from __future__ import annotations

import gc
import logging

import numpy as np
import pytest
from bench_cases import Unavailable, hypothesis, shared
from conftest import timed

vllm = pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'oasr_tok[vllm]')")

from vllm.sampling_params import RequestOutputKind, SamplingParams  # noqa: E402
from vllm.tokenizers import get_tokenizer  # noqa: E402
from vllm.tokenizers.detokenizer_utils import convert_ids_list_to_tokens  # noqa: E402
from vllm.utils.gc_utils import freeze_gc_heap  # noqa: E402
from vllm.v1.engine import EngineCoreOutput, EngineCoreRequest  # noqa: E402
from vllm.v1.engine.logprobs import LogprobsProcessor  # noqa: E402
from vllm.v1.engine.output_processor import OutputProcessor  # noqa: E402

from oasr_tok.integrations.vllm import register  # noqa: E402
from oasr_tok.integrations.vllm.logprobs import OasrLogprobsProcessor  # noqa: E402

LABEL = "huggingface/qwen3"
TOKENS = 48  # generated ids per request
PREFILL = 48
STOPS = ["<|im_end|>", "\n\nUser:"]  # neither occurs in the passages


def _tokenizers():
    logging.getLogger("vllm").setLevel(logging.ERROR)
    register()
    try:
        folder = shared(LABEL)
    except FileNotFoundError as exc:
        raise Unavailable(str(exc)) from None
    return {
        "mode hf": get_tokenizer(folder, tokenizer_mode="hf"),
        "mode oasr": get_tokenizer(folder, tokenizer_mode="oasr"),
    }


_TOKENIZERS: dict = {}


def tokenizers():
    if not _TOKENIZERS:
        _TOKENIZERS.update(_tokenizers())
    return _TOKENIZERS


def _requests(n: int) -> tuple[list[list[int]], list[list[int]]]:
    ids = hypothesis(LABEL, 6_000)
    prompts = [ids[(k * 53) % 5_000 : (k * 53) % 5_000 + PREFILL] for k in range(n)]
    generated = [ids[(k * 37) % 5_000 + PREFILL : (k * 37) % 5_000 + PREFILL + TOKENS] for k in range(n)]
    return prompts, generated


def _processor(tok, prompts, generated, per_step: int):
    """A fresh OutputProcessor with the requests added, and the step's outputs (fresh objects:
    vLLM may cut an output's ids)."""
    op = OutputProcessor(tok, log_stats=False)
    for k, prompt in enumerate(prompts):
        op.add_request(
            EngineCoreRequest(
                request_id=f"r{k}",
                external_req_id=f"r{k}",
                prompt_token_ids=prompt,
                mm_features=None,
                sampling_params=SamplingParams(output_kind=RequestOutputKind.DELTA, stop=STOPS, max_tokens=None),
                pooling_params=None,
                arrival_time=0.0,
                lora_request=None,
                cache_salt=None,
                data_parallel_rank=None,
            ),
            None,
        )
    steps = [
        [EngineCoreOutput(request_id=f"r{k}", new_token_ids=g[at : at + per_step]) for k, g in enumerate(generated)]
        for at in range(0, TOKENS, per_step)
    ]
    return op, steps


def _run(live) -> None:
    op, steps = live
    for outputs in steps:
        op.process_outputs(outputs)


@pytest.mark.parametrize("n", [256, 1_024])
@pytest.mark.parametrize("per_step", [1, 4])
@pytest.mark.parametrize("impl", ["mode oasr", pytest.param("mode hf", marks=pytest.mark.peer), "no tokenizer"])
def test_output_step(benchmark, n: int, per_step: int, impl: str) -> None:
    try:
        toks = tokenizers()
    except Unavailable as exc:
        pytest.skip(str(exc))
    prompts, generated = _requests(n)
    tok = None if impl == "no tokenizer" else toks[impl]
    make = lambda: _processor(tok, prompts, generated, per_step)
    paired = impl != "no tokenizer"
    # vLLM's API server freezes its startup heap before it serves (server_utils.py: vLLM's own
    # freeze_gc_heap), so its output step's collections walk the requests' objects only. Here
    # the same: without it, a collection of the oldest generation walked everything the
    # benchmark session had loaded before this row, in some rounds and not others, whichever
    # mode's allocations happened to trigger it (the figures: benchmarks/measurements.md).
    freeze_gc_heap()
    try:
        timed(
            benchmark,
            _run,
            make,
            per=n * TOKENS,
            info={"suite": "vllm", "case": LABEL, "op": f"output step, {per_step} id(s) a step", "impl": impl, "n": n},
            reference=_run if paired else None,
            make_reference=(lambda: _processor(None, prompts, generated, per_step)) if paired else None,
            min_rounds=15,  # the paired ratios are medians of the rounds': more rounds, steadier on a busy machine
        )
    finally:
        gc.unfreeze()


# -- logprob strings ------------------------------------------------------------------------------

REQUESTS, TOP, LOGPROB_STEPS = 64, 20, 50


def _logprob_steps(size: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    ids = np.array(hypothesis(LABEL, 6_000), dtype=np.int64)
    steps = []
    for t in range(LOGPROB_STEPS):
        rows = []
        for k in range(REQUESTS):
            sampled = ids[(k * 37 + t) % 5_000]
            rows.append(np.concatenate([[sampled], rng.integers(0, size, TOP)]).reshape(1, -1))
        steps.append(rows)
    return steps


@pytest.mark.parametrize(
    "impl", ["oasr_tok one call a step", pytest.param("vLLM one id at a time", marks=pytest.mark.peer)]
)
def test_logprob_strings(benchmark, impl: str) -> None:
    try:
        toks = tokenizers()
    except Unavailable as exc:
        pytest.skip(str(exc))
    hf, oa = toks["mode hf"], toks["mode oasr"]
    steps = _logprob_steps(len(oa))
    oa.token_strings.strings(range(len(oa)))  # the table made once, as a server's first steps make it

    def processors(tok):
        kind = OasrLogprobsProcessor if tok is oa else LogprobsProcessor
        return [kind(tok, [], None, 0.0, TOP, None) for _ in range(REQUESTS)]

    def vllms(procs) -> None:
        for rows in steps:
            for proc, row in zip(procs, rows):
                ids = row[0].tolist()
                proc._verify_tokens(convert_ids_list_to_tokens(hf, ids), ids, [])

    def ours(procs) -> None:
        table = oa.token_strings
        for rows in steps:
            for proc, array, (strings, flags) in zip(procs, rows, table.rows(rows)):
                if flags[0]:
                    proc.corrected(strings[0], array[0].tolist(), [])

    run, tok = (ours, oa) if impl.startswith("oasr_tok") else (vllms, hf)
    timed(
        benchmark,
        run,
        lambda: processors(tok),
        per=LOGPROB_STEPS * REQUESTS * (TOP + 1),
        info={
            "suite": "vllm",
            "case": LABEL,
            "op": f"logprob strings, top-{TOP} x {REQUESTS}",
            "impl": impl,
            "n": REQUESTS,
        },
        reference=vllms if run is ours else None,
        make_reference=(lambda: processors(hf)) if run is ours else None,
    )
