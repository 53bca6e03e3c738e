"""vLLM's own output step, driven on CPU without a model, for the tests of
oasr_tok.integrations.vllm (tests/integrations, tests/peers) and benchmarks/test_vllm.py.

`require_vllm()` at the top of a test module: the module is skipped, saying why, where vLLM is
not installed (the README's test run has none), and fails instead where OASR_TOK_REQUIRE_VLLM=1
(CI's vllm tier). `drive(tokenizer, requests)` runs vLLM's OutputProcessor over requests built
by hand (EngineCoreRequest, EngineCoreOutput with real ids of the fixtures, as vLLM's own
tests/v1/engine/test_output_processor.py does) and returns everything a client sees; running it
with mode "hf" and mode "oasr" on the same tokenizer.json is the comparison.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from paths import shared

REQUIRE = os.environ.get("OASR_TOK_REQUIRE_VLLM") == "1"
WHY = (
    "vLLM is not installed (pip install 'oasr_tok[vllm]'); CI's vllm tier installs vllm==0.33.0 "
    "and runs these tests with OASR_TOK_REQUIRE_VLLM=1"
)


def require_vllm() -> Any:
    """vllm, imported; a skip naming why where it is not installed (a failure where
    OASR_TOK_REQUIRE_VLLM=1)."""
    if REQUIRE:
        import vllm

        return vllm
    return pytest.importorskip("vllm", reason=WHY)


#: The tokenizer.json checkpoints that vLLM's mode "hf" reads too (folder -> files beside it).
HF_FOLDERS = {
    "qwen3": "huggingface/qwen3",
    "mistral-7b": "huggingface/mistral-7b",
    "moonshine": "huggingface/moonshine",
    "qwen2-audio-like": "huggingface/qwen2-audio-like",
}
#: Every kind's checkpoint file or folder, as `vllm serve` would be pointed at it.
KIND_PATHS = {
    "huggingface": "huggingface/qwen3",
    "whisper": "whisper/faster-whisper-base",
    "whisper-tiktoken": "whisper-tiktoken/multilingual.tiktoken",
    "gguf-llama": "gguf/ggml-vocab-llama-spm.gguf",
    "gguf-qwen2": "gguf/ggml-vocab-qwen2.gguf",
    "sentencepiece": "sentencepiece/mistral-v1.model",
    "symbol_table": "symbol_table/icefall-librispeech-bpe500.tokens.txt",
    "funasr_char": "funasr_char/paraformer-zh-vocab8404/tokens.json",
}


def quiet_vllm() -> None:
    # vLLM logs a warning per tokenizer folder without a config.json (the fixtures have none).
    logging.getLogger("vllm").setLevel(logging.ERROR)


@functools.cache
def tokenizer(path: str, mode: str) -> Any:
    """vLLM's get_tokenizer(path, tokenizer_mode=mode) of a fixture (relative to ../shared/fixtures
    or absolute), loaded once per process; mode "oasr" after oasr_tok's plug-in registered it."""
    from vllm.tokenizers import get_tokenizer

    from oasr_tok.integrations.vllm import register

    quiet_vllm()
    register()
    full = path if os.path.isabs(path) else shared(path)
    return get_tokenizer(full, tokenizer_mode=mode)


@dataclass
class Request:
    """One request of a drive: its prompt ids, the ids the engine emits per step (a list of id
    lists; an empty one is a step without ids), how the last step finishes (vLLM's
    FinishReason name: "length", "stop" for the engine's own stop id, ...), its sampling
    parameters, and top-k logprob ids per generated id when logprobs are asked for."""

    prompt: list[int]
    steps: list[list[int]]
    finish: str | None = "length"
    stop_reason: int | str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    top_k: list[list[int]] | None = None
    prompt_top_k: list[list[int]] | None = None


@dataclass
class Seen:
    """What the client of one request saw, output by output."""

    texts: list[str] = field(default_factory=list)
    token_ids: list[list[int]] = field(default_factory=list)
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    finished: bool = False
    logprobs: list[list[tuple[int, str | None, int]]] = field(default_factory=list)
    prompt_logprobs: list[list[tuple[int, str | None]] | None] | None = None
    aborted: bool = False

    def as_tuple(self) -> tuple[Any, ...]:
        return (
            self.texts,
            self.token_ids,
            self.finish_reason,
            self.stop_reason,
            self.finished,
            self.logprobs,
            self.prompt_logprobs,
            self.aborted,
        )


def engine_request(k: int, request: Request) -> Any:
    from vllm import SamplingParams
    from vllm.v1.engine import EngineCoreRequest

    params = dict(request.params)
    if request.top_k is not None:
        params.setdefault("logprobs", len(request.top_k[0]) - 1 if request.top_k else 0)
    if request.prompt_top_k is not None:
        params.setdefault("prompt_logprobs", len(request.prompt_top_k[0]) - 1 if request.prompt_top_k else 0)
    return EngineCoreRequest(
        request_id=f"req-{k}-int",
        external_req_id=f"req-{k}",
        prompt_token_ids=list(request.prompt),
        mm_features=None,
        sampling_params=SamplingParams(**params),
        pooling_params=None,
        arrival_time=0.0,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )


def _logprobs_lists(rows: list[list[int]]) -> Any:
    import numpy as np
    from vllm.v1.outputs import LogprobsLists

    ids = np.array(rows, dtype=np.int64)
    values = -np.arange(ids.size, dtype=np.float32).reshape(ids.shape) / 10
    return LogprobsLists(ids, values, np.ones(len(rows), dtype=np.int64), None)


def _prompt_tensors(rows: list[list[int]]) -> Any:
    import torch
    from vllm.v1.outputs import LogprobsTensors

    ids = torch.tensor(rows, dtype=torch.int64)
    values = -torch.arange(ids.numel(), dtype=torch.float32).reshape(ids.shape) / 10
    return LogprobsTensors(ids, values, torch.ones(len(rows), dtype=torch.int64))


def outputs_of_step(requests: list[Request], step: int, done: set[int]) -> list[Any]:
    """The EngineCoreOutputs of engine step `step` (requests still running)."""
    from vllm.v1.engine import EngineCoreOutput, FinishReason

    outs = []
    for k, request in enumerate(requests):
        if k in done or step >= len(request.steps):
            continue
        ids = list(request.steps[step])
        out = EngineCoreOutput(request_id=f"req-{k}-int", new_token_ids=ids)
        if request.top_k is not None and ids:
            first = sum(len(s) for s in request.steps[:step])
            out.new_logprobs = _logprobs_lists(request.top_k[first : first + len(ids)])
        if step == 0 and request.prompt_top_k is not None:
            out.new_prompt_logprobs_tensors = _prompt_tensors(request.prompt_top_k)
        if step == len(request.steps) - 1 and request.finish is not None:
            out.finish_reason = FinishReason[request.finish.upper()]
            out.stop_reason = request.stop_reason
        outs.append(out)
    return outs


def drive(tok: Any, requests: list[Request], kind: str = "DELTA", processor: Any = None) -> list[Seen]:
    """vLLM's OutputProcessor over `requests`, all in one engine loop (the requests of a step
    in one process_outputs call), with output kind `kind` ("DELTA", "CUMULATIVE",
    "FINAL_ONLY"): what each request's client saw."""
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine.output_processor import OutputProcessor

    op = processor if processor is not None else OutputProcessor(tok, log_stats=False)
    output_kind = RequestOutputKind[kind]
    for k, request in enumerate(requests):
        request = Request(**{**request.__dict__, "params": {**request.params, "output_kind": output_kind}})
        op.add_request(engine_request(k, request), None)
    seen = [Seen() for _ in requests]
    done: set[int] = set()
    for step in range(max((len(r.steps) for r in requests), default=0)):
        outs = outputs_of_step(requests, step, done)
        if not outs:
            break
        result = op.process_outputs(outs)
        for request_output in result.request_outputs:
            k = int(request_output.request_id.split("-")[1])
            o = request_output.outputs[0]
            s = seen[k]
            s.texts.append(o.text)
            s.token_ids.append(list(o.token_ids))
            s.finish_reason, s.stop_reason, s.finished = o.finish_reason, o.stop_reason, request_output.finished
            if o.logprobs is not None:
                s.logprobs.extend(
                    [[(i, lp.decoded_token, lp.rank) for i, lp in position.items()] for position in o.logprobs]
                )
            if request_output.prompt_logprobs is not None and s.prompt_logprobs is None:
                s.prompt_logprobs = [
                    None if position is None else [(i, lp.decoded_token) for i, lp in position.items()]
                    for position in request_output.prompt_logprobs
                ]
            if request_output.finished:
                done.add(k)
        for internal in result.reqs_to_abort:
            k = int(internal.split("-")[1])
            seen[k].aborted = True
            done.add(k)
    return seen


def split_steps(ids: list[int], sizes: list[int]) -> list[list[int]]:
    """`ids` cut into steps of the given sizes (cycled; a size 0 is a step without ids)."""
    assert any(s > 0 for s in sizes) or not sizes, "a step size must be positive"
    out, at, k = [], 0, 0
    while at < len(ids):
        size = sizes[k % len(sizes)] if sizes else 1
        out.append(ids[at : at + size])
        at += size
        k += 1
    return out or [[]]
