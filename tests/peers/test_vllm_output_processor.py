"""vLLM's output-processor tests (their detokenizer, stop and logprob parts), translated onto a
local file for tokenizer_mode="oasr".

Upstream: vllm-project/vllm v0.33.0 (the PyPI sdist vllm-0.33.0.tar.gz; git commit g4ba787ec9),
tests/v1/engine/test_output_processor.py with its conftest.py and utils.py (the dummy test
vectors and MockEngineCore, translated below). The cases kept, every parametrization:
test_incremental_detokenization, test_request_stream_interval_raises_but_not_below_engine_default,
test_logprobs_processor (with _validate_logprobs), test_stop_token, test_stop_string. The file's
other tests are about what mode "oasr" does not touch (LoRA tracking, iteration statistics,
collectors, aborts, pooling, routed experts, sampling masks, weight versions, and
test_delta_output_without_new_tokens_returns_empty_logprobs, whose detokenizer is a MagicMock).

TOKENIZER_NAME (meta-llama/Llama-3.2-1B, not reachable) is Qwen3's tokenizer.json, loaded with
get_tokenizer(..., tokenizer_mode="oasr") (both byte-level BPE). test_stop_token's Llama-3 control
tokens are Qwen3's: EOS <|im_end|> (upstream <|end_of_text|>), the stop token <|endoftext|>
(upstream <|eot_id|>). The dummy logprobs are drawn as upstream draws them (torch.randperm over
the vocabulary), seeded.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from vllm_reference import require_vllm, tokenizer

require_vllm()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from vllm.sampling_params import RequestOutputKind, SamplingParams  # noqa: E402
from vllm.v1.engine import EngineCoreOutput, EngineCoreRequest, FinishReason  # noqa: E402
from vllm.v1.engine.output_processor import OutputProcessor  # noqa: E402
from vllm.v1.metrics.stats import PrefillStats  # noqa: E402
from vllm.v1.outputs import LogprobsLists, LogprobsTensors  # noqa: E402

NUM_SAMPLE_LOGPROBS_UNDER_TEST = 5
NUM_PROMPT_LOGPROBS_UNDER_TEST = 7
FULL_STRINGS = [
    "My name is Robert from Neural Magic and I love working on vLLM so much!",
    "Red Hat is the best open source company by far across Linux, K8s, and AI.",
    "Nick is the name of my brother in addition to my colleague from Red Hat.",
]
STOP_STRINGS = ["I love working on", "company by far", "brother in"]
PROMPT_LEN = 5
EOS = 151645  # <|im_end|>
STOP_TOKEN = 151643  # <|endoftext|>


# -- tests/v1/engine/utils.py and conftest.py ---------------------------------------------------


def _random_top_tokens(num_logprobs, lower, upper, sampled_token_id):
    total = num_logprobs + 1
    choice = torch.randperm(upper - lower)[:total] + lower
    choice[0] = sampled_token_id
    if sampled_token_id in choice[1:]:
        rank = (choice[1:] == sampled_token_id).nonzero(as_tuple=True)[0].item() + 1
    else:
        rank = random.randint(num_logprobs, 50700)
    return choice, rank


def _sample_logprobs(sampled_tokens, num_logprobs, tok):
    out = []
    size = len(tok.get_vocab())
    for sampled in sampled_tokens:
        ids, rank = _random_top_tokens(num_logprobs, 0, size - 1, sampled)
        values = torch.rand(num_logprobs + 1) * -100
        out.append((ids.tolist(), values.tolist(), rank))
    return out


def _prompt_logprobs(prompt_tokens, num_logprobs, tok):
    rows = len(prompt_tokens) - 1
    choice = torch.randperm(len(tok.get_vocab()) - 1)[: rows * num_logprobs]
    matrix = torch.cat(
        (torch.tensor(prompt_tokens[1:], dtype=torch.int).unsqueeze(-1), choice.view(rows, num_logprobs)), 1
    )
    ranks = torch.empty(rows, dtype=torch.int)
    for r in range(rows):
        found = (matrix[r, 1:] == prompt_tokens[1 + r]).nonzero(as_tuple=True)[0]
        ranks[r] = found.item() + 1 if found.numel() > 0 else random.randint(num_logprobs, 50700)
    return LogprobsTensors(matrix, torch.rand(rows, num_logprobs + 1) * -100, ranks)


@dataclass
class Vectors:
    tokenizer: object
    prompt_tokens: list
    generation_tokens: list
    prompt_strings: list
    generation_strings: list
    generation_logprobs: list
    prompt_logprobs: list


@pytest.fixture
def dummy_test_vectors() -> Vectors:
    random.seed(42)
    torch.manual_seed(0)
    tok = tokenizer("huggingface/qwen3", "oasr")
    prompt_tokens = [tok(text).input_ids[:PROMPT_LEN] for text in FULL_STRINGS]
    generation_tokens = [tok(text).input_ids[PROMPT_LEN:] for text in FULL_STRINGS]
    prompt_strings = [tok.decode(p, skip_special_tokens=True) for p in prompt_tokens]
    return Vectors(
        tok,
        prompt_tokens,
        generation_tokens,
        prompt_strings,
        [text[len(p) :] for text, p in zip(FULL_STRINGS, prompt_strings)],
        [_sample_logprobs(g, NUM_SAMPLE_LOGPROBS_UNDER_TEST, tok) for g in generation_tokens],
        [_prompt_logprobs(p, NUM_PROMPT_LOGPROBS_UNDER_TEST, tok) for p in prompt_tokens],
    )


class MockEngineCore:
    """Upstream's MockEngineCore: engine core outputs from premade token lists."""

    def __init__(self, tokens_list, prompts_list, generated_logprobs_raw=None, prompt_logprobs_raw=None,
                 eos_token_id=None, stop_token_ids=None, request_ids=None):  # fmt: skip
        self.tokens_list, self.prompts_list = tokens_list, prompts_list
        self.generated_logprobs_raw, self.prompt_logprobs_raw = generated_logprobs_raw, prompt_logprobs_raw
        self.request_finished = [False] * len(tokens_list)
        self.request_token_idx = [0] * len(tokens_list)
        self.eos_token_id, self.stop_token_ids = eos_token_id, stop_token_ids
        self.request_ids = request_ids or [f"request-{i}" for i in range(len(tokens_list))]

    def get_outputs(self, num_active: int = -1) -> list[EngineCoreOutput]:
        outputs = []
        for req_idx, (token_ids, prompt_token_ids) in enumerate(zip(self.tokens_list, self.prompts_list)):
            if num_active != -1 and req_idx >= num_active:
                break
            if self.request_finished[req_idx]:
                continue
            token_idx = self.request_token_idx[req_idx]
            logprobs = None
            if self.generated_logprobs_raw is not None:
                ids, values, rank = self.generated_logprobs_raw[req_idx][token_idx]
                logprobs = LogprobsLists(np.array([ids]), np.array([values]), np.array([rank]))
            prompt_logprobs = None
            if self.prompt_logprobs_raw is not None and token_idx == 0:
                prompt_logprobs = self.prompt_logprobs_raw[req_idx]
            prefill_stats = None
            if token_idx == 0:
                prefill_stats = PrefillStats()
                prefill_stats.set(
                    num_prompt_tokens=len(prompt_token_ids), num_local_cached_tokens=0, num_external_cached_tokens=0
                )
            new_token_id = token_ids[token_idx]
            output = EngineCoreOutput(
                request_id=self.request_ids[req_idx],
                new_token_ids=[new_token_id],
                new_logprobs=logprobs,
                new_prompt_logprobs_tensors=prompt_logprobs,
                prefill_stats=prefill_stats,
            )
            if token_idx == len(token_ids) - 1:
                output.finish_reason = FinishReason.LENGTH
                self.request_finished[req_idx] = True
            if new_token_id == self.eos_token_id:
                output.finish_reason = FinishReason.STOP
                self.request_finished[req_idx] = True
            if new_token_id in (self.stop_token_ids or ()):
                output.finish_reason = FinishReason.STOP
                output.stop_reason = new_token_id
                self.request_finished[req_idx] = True
            outputs.append(output)
            self.request_token_idx[req_idx] += 1
        return outputs


def _request(idx, prompt_tokens, **params) -> EngineCoreRequest:
    return EngineCoreRequest(
        request_id=f"request-{idx}-int",
        external_req_id=f"request-{idx}",
        prompt_token_ids=prompt_tokens,
        mm_features=None,
        arrival_time=0,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
        sampling_params=SamplingParams(**params),
        pooling_params=None,
    )


def _ref_convert_id_to_token(tok, token_id: int) -> str:
    return tok.decode([token_id]) or ""


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("request_output_kind", [RequestOutputKind.DELTA, RequestOutputKind.FINAL_ONLY])
@pytest.mark.parametrize("stream_interval", [1, 5, 10])
def test_incremental_detokenization(request_output_kind, stream_interval, dummy_test_vectors):
    dtv = dummy_test_vectors
    output_processor = OutputProcessor(dtv.tokenizer, log_stats=False, stream_interval=stream_interval)
    requests = [
        _request(
            idx,
            p,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            output_kind=request_output_kind,
            stop=[],
            include_stop_str_in_output=False,
        )  # fmt: skip
        for idx, p in enumerate(dtv.prompt_tokens)
    ]
    engine_core = MockEngineCore(dtv.generation_tokens, dtv.prompt_tokens, request_ids=[r.request_id for r in requests])
    for request, prompt in zip(requests, dtv.prompt_strings):
        output_processor.add_request(request, prompt)
    gen_strings, gen_tokens = {}, {}
    while outputs := engine_core.get_outputs():
        processed = output_processor.process_outputs(outputs)
        assert len(processed.reqs_to_abort) == 0
        for request_output in processed.request_outputs:
            request_id = request_output.request_id
            new_text = request_output.outputs[0].text
            new_tokens = request_output.outputs[0].token_ids
            if request_id not in gen_strings:
                gen_strings[request_id] = new_text
                gen_tokens[request_id] = new_tokens
                if request_output_kind == RequestOutputKind.DELTA:
                    assert len(new_tokens) == 1
            else:
                gen_strings[request_id] += new_text
                gen_tokens[request_id].extend(new_tokens)
                if request_output_kind == RequestOutputKind.DELTA and not request_output.finished:
                    assert len(new_tokens) >= stream_interval
    for idx, (ref_gen_str, ref_gen_toks) in enumerate(zip(dtv.generation_strings, dtv.generation_tokens)):
        assert gen_strings[f"request-{idx}"] == ref_gen_str
        assert gen_tokens[f"request-{idx}"] == ref_gen_toks
    assert output_processor.get_num_unfinished_requests() == 0
    assert not output_processor.has_unfinished_requests()


def test_request_stream_interval_raises_but_not_below_engine_default(dummy_test_vectors):
    dtv = dummy_test_vectors
    engine_stream_interval = 5
    intervals = [1, 10]
    output_processor = OutputProcessor(dtv.tokenizer, log_stats=False, stream_interval=engine_stream_interval)
    requests = [
        _request(
            idx,
            p,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            output_kind=RequestOutputKind.DELTA,
            stop=[],
            include_stop_str_in_output=False,
            stream_interval=intervals[idx],
        )  # fmt: skip
        for idx, p in enumerate(dtv.prompt_tokens[: len(intervals)])
    ]
    engine_core = MockEngineCore(
        dtv.generation_tokens[:2], dtv.prompt_tokens[:2], request_ids=[r.request_id for r in requests]
    )
    for request, prompt in zip(requests, dtv.prompt_strings):
        output_processor.add_request(request, prompt)
    gen_strings, gen_tokens = {}, {}
    while outputs := engine_core.get_outputs():
        for request_output in output_processor.process_outputs(outputs).request_outputs:
            request_id = request_output.request_id
            new_tokens = request_output.outputs[0].token_ids
            if request_id not in gen_strings:
                gen_strings[request_id] = request_output.outputs[0].text
                gen_tokens[request_id] = list(new_tokens)
                assert len(new_tokens) == 1
                continue
            gen_strings[request_id] += request_output.outputs[0].text
            gen_tokens[request_id].extend(new_tokens)
            if not request_output.finished:
                interval = max(intervals[int(request_id.split("-")[1])], engine_stream_interval)
                assert len(new_tokens) == interval
    for idx in range(2):
        assert gen_strings[f"request-{idx}"] == dtv.generation_strings[idx]
        assert gen_tokens[f"request-{idx}"] == dtv.generation_tokens[idx]
    assert not output_processor.has_unfinished_requests()


def _validate_logprobs(gen_tokens, gen_logprobs, gen_prompt_logprobs, gen_cumulative_logprob, dtv,
                       request_id_list, num_sample_logprobs, num_prompt_logprobs):  # fmt: skip
    for req_idx, req_id in enumerate(request_id_list):
        new_tokens = gen_tokens[req_id]
        logprobs = gen_logprobs[req_id]
        prompt_logprobs = gen_prompt_logprobs[req_id]
        cumulative_logprob = gen_cumulative_logprob[req_id]
        prompt_token_ids = dtv.prompt_tokens[req_idx]
        ref_logprobs = dtv.generation_logprobs[req_idx]
        ref_prompt_logprobs = dtv.prompt_logprobs[req_idx]
        if num_sample_logprobs is not None:
            assert logprobs is not None
            assert len(new_tokens) == len(logprobs)
            ref_cumulative_logprob = 0.0
            for idx, (sampled_token, pos_logprob_dict) in enumerate(zip(new_tokens, logprobs)):
                ref_pos_logprob_toks, ref_pos_logprob_vals, ref_sampled_token_rank = ref_logprobs[idx]
                assert sampled_token in pos_logprob_dict
                assert len(pos_logprob_dict) in (num_sample_logprobs, num_sample_logprobs + 1)
                assert pos_logprob_dict[sampled_token].rank == ref_sampled_token_rank
                rank_one_appears = False
                for jdx in range(1, len(ref_pos_logprob_toks)):
                    ref_tok_id = ref_pos_logprob_toks[jdx]
                    assert ref_tok_id in pos_logprob_dict
                    lp = pos_logprob_dict[ref_tok_id]
                    rank_one_appears = True if lp.rank == 1 else rank_one_appears
                    assert lp.rank >= 1
                    assert math.isclose(lp.logprob, ref_pos_logprob_vals[jdx])
                assert rank_one_appears
                for lp_tok in pos_logprob_dict:
                    decoded_token = pos_logprob_dict[lp_tok].decoded_token
                    ref_decoded_token = _ref_convert_id_to_token(dtv.tokenizer, lp_tok)
                    if ref_decoded_token.endswith("\ufffd"):
                        assert not decoded_token.endswith("\ufffd")
                    else:
                        assert decoded_token == ref_decoded_token
                ref_cumulative_logprob += pos_logprob_dict[sampled_token].logprob
            assert math.isclose(cumulative_logprob, ref_cumulative_logprob)
        else:
            assert logprobs is None
            assert cumulative_logprob is None
        if num_prompt_logprobs is not None:
            assert prompt_logprobs is not None
            assert len(prompt_token_ids) == len(prompt_logprobs)
            assert prompt_logprobs[0] is None
            ref_toks, ref_vals, ref_ranks, *_ = ref_prompt_logprobs
            for idx, (prompt_token, pos_logprob_dict) in enumerate(zip(prompt_token_ids[1:], prompt_logprobs[1:])):
                ref_pos_toks, ref_pos_vals, ref_pos_rank = ref_toks[idx, :], ref_vals[idx, :], ref_ranks[idx]
                assert prompt_token in pos_logprob_dict
                assert len(pos_logprob_dict) in (num_prompt_logprobs, num_prompt_logprobs + 1)
                assert pos_logprob_dict[prompt_token].rank == ref_pos_rank
                rank_one_appears = False
                for jdx in range(1, len(ref_pos_toks)):
                    ref_tok_id = int(ref_pos_toks[jdx])
                    assert ref_tok_id in pos_logprob_dict
                    plp = pos_logprob_dict[ref_tok_id]
                    rank_one_appears = True if plp.rank == 1 else rank_one_appears
                    assert plp.rank >= 1
                    assert math.isclose(plp.logprob, float(ref_pos_vals[jdx]))
                assert rank_one_appears
                for plp_tok in pos_logprob_dict:
                    decoded_token = pos_logprob_dict[plp_tok].decoded_token
                    ref_decoded_token = _ref_convert_id_to_token(dtv.tokenizer, plp_tok)
                    if ref_decoded_token.endswith("\ufffd"):
                        assert not decoded_token.endswith("\ufffd")
                    else:
                        assert decoded_token == ref_decoded_token
        else:
            assert prompt_logprobs is None


@pytest.mark.parametrize("request_output_kind", [RequestOutputKind.DELTA, RequestOutputKind.FINAL_ONLY])
@pytest.mark.parametrize("num_sample_logprobs", [None, NUM_SAMPLE_LOGPROBS_UNDER_TEST])
@pytest.mark.parametrize("num_prompt_logprobs", [None, NUM_PROMPT_LOGPROBS_UNDER_TEST])
def test_logprobs_processor(request_output_kind, num_sample_logprobs, num_prompt_logprobs, dummy_test_vectors):
    dtv = dummy_test_vectors
    output_processor = OutputProcessor(dtv.tokenizer, log_stats=False)
    request_id_list = [f"request-{idx}" for idx in range(len(dtv.prompt_strings))]
    requests = [
        _request(
            idx,
            p,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            output_kind=request_output_kind,
            stop=[],
            include_stop_str_in_output=False,
            logprobs=num_sample_logprobs,
            prompt_logprobs=num_prompt_logprobs,
        )  # fmt: skip
        for idx, p in enumerate(dtv.prompt_tokens)
    ]
    engine_core = MockEngineCore(
        dtv.generation_tokens,
        dtv.prompt_tokens,
        generated_logprobs_raw=None if num_sample_logprobs is None else dtv.generation_logprobs,
        prompt_logprobs_raw=None if num_prompt_logprobs is None else dtv.prompt_logprobs,
        request_ids=[r.request_id for r in requests],
    )
    for request, prompt in zip(requests, dtv.prompt_strings):
        output_processor.add_request(request, prompt)
    gen_tokens, gen_logprobs, gen_prompt_logprobs, gen_cumulative = {}, {}, {}, {}
    while outputs := engine_core.get_outputs():
        processed = output_processor.process_outputs(outputs)
        assert len(processed.reqs_to_abort) == 0
        for request_output in processed.request_outputs:
            request_id = request_output.request_id
            new_tokens = request_output.outputs[0].token_ids
            prompt_logprobs = request_output.prompt_logprobs
            logprobs = request_output.outputs[0].logprobs
            gen_cumulative[request_id] = request_output.outputs[0].cumulative_logprob
            if request_id not in gen_logprobs:
                gen_tokens[request_id] = new_tokens
                gen_logprobs[request_id] = logprobs
                gen_prompt_logprobs[request_id] = prompt_logprobs
            else:
                gen_tokens[request_id].extend(new_tokens)
                if gen_logprobs[request_id]:
                    gen_logprobs[request_id].extend(logprobs)
                if gen_prompt_logprobs[request_id]:
                    gen_prompt_logprobs[request_id].extend(prompt_logprobs)
    _validate_logprobs(gen_tokens, gen_logprobs, gen_prompt_logprobs, gen_cumulative, dtv, request_id_list,
                       num_sample_logprobs, num_prompt_logprobs)  # fmt: skip
    assert output_processor.get_num_unfinished_requests() == 0
    assert not output_processor.has_unfinished_requests()


@pytest.mark.parametrize(
    "include_stop_str_in_output,stop_token_type,ignore_eos,num_sample_logprobs",
    [
        (False, "stop_token_ids", False, None),
        (True, "stop_token_ids", False, None),
        (False, "stop_token_ids", False, NUM_SAMPLE_LOGPROBS_UNDER_TEST),
        (True, "stop_token_ids", False, NUM_SAMPLE_LOGPROBS_UNDER_TEST),
        (False, "eos_token_id", False, None),
        (True, "eos_token_id", False, None),
        (False, "eos_token_id", True, None),
    ],
)
def test_stop_token(include_stop_str_in_output, num_sample_logprobs, stop_token_type, ignore_eos, dummy_test_vectors):
    dtv = dummy_test_vectors
    assert dtv.tokenizer.eos_token_id == EOS
    do_logprobs = num_sample_logprobs is not None
    is_eos_test = stop_token_type == "eos_token_id"
    is_eos_ignore_test = is_eos_test and ignore_eos
    eos_token_id = EOS if is_eos_test else None
    stop_token_ids = [STOP_TOKEN] if not is_eos_test else None
    output_processor = OutputProcessor(dtv.tokenizer, log_stats=False)
    suffix_token = [eos_token_id] if is_eos_test else stop_token_ids
    generation_string = dtv.generation_strings[0]
    generation_tokens = dtv.generation_tokens[0] + 2 * suffix_token
    generation_logprobs = None
    if do_logprobs:
        generation_logprobs = dtv.generation_logprobs[0] + 2 * [dtv.generation_logprobs[0][-1]]
    sampling_params = SamplingParams(
        skip_special_tokens=False, spaces_between_special_tokens=False, output_kind=RequestOutputKind.DELTA,
        stop=[], stop_token_ids=stop_token_ids, include_stop_str_in_output=include_stop_str_in_output,
        logprobs=num_sample_logprobs, prompt_logprobs=None, ignore_eos=ignore_eos,
    )  # fmt: skip
    sampling_params.update_from_generation_config({}, eos_token_id)
    request = EngineCoreRequest(
        request_id="request-0", external_req_id="request-0-ext", prompt_token_ids=dtv.prompt_tokens[0],
        mm_features=None, arrival_time=0, lora_request=None, cache_salt=None, data_parallel_rank=None,
        sampling_params=sampling_params, pooling_params=None,
    )  # fmt: skip
    engine_core = MockEngineCore(
        tokens_list=[generation_tokens],
        prompts_list=dtv.prompt_tokens,
        generated_logprobs_raw=[generation_logprobs] if do_logprobs else None,
        eos_token_id=sampling_params.eos_token_id,
        stop_token_ids=sampling_params.stop_token_ids,
        request_ids=[request.request_id],
    )
    output_processor.add_request(request, dtv.prompt_strings[0])
    gen_string, gen_tokens, gen_logprobs = "", [], []
    while outputs := engine_core.get_outputs():
        processed = output_processor.process_outputs(outputs)
        assert len(processed.request_outputs) == 1
        assert not processed.reqs_to_abort
        request_output = processed.request_outputs[0]
        if request_output.finished:
            assert request_output.outputs[0].finish_reason == ("length" if is_eos_ignore_test else "stop")
        gen_string += request_output.outputs[0].text
        gen_tokens.extend(request_output.outputs[0].token_ids)
        if do_logprobs:
            gen_logprobs.extend(request_output.outputs[0].logprobs)
    control_token = "<|im_end|>" if is_eos_test else "<|endoftext|>"
    if is_eos_ignore_test:
        ref_str = generation_string + 2 * control_token
    elif include_stop_str_in_output:
        ref_str = generation_string + control_token
    else:
        ref_str = generation_string
    assert gen_string == ref_str
    if do_logprobs:
        assert len(gen_tokens) == len(gen_logprobs)
    assert output_processor.get_num_unfinished_requests() == 0


@pytest.mark.parametrize("include_stop_str_in_output", [True, False])
@pytest.mark.parametrize("num_sample_logprobs", [None, NUM_SAMPLE_LOGPROBS_UNDER_TEST])
def test_stop_string(include_stop_str_in_output, num_sample_logprobs, dummy_test_vectors):
    dtv = dummy_test_vectors
    output_processor = OutputProcessor(dtv.tokenizer, log_stats=False)
    request_id_list = [f"request-{idx}" for idx in range(len(dtv.prompt_strings))]
    requests = [
        _request(
            idx,
            p,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            output_kind=RequestOutputKind.DELTA,
            stop=STOP_STRINGS,
            include_stop_str_in_output=include_stop_str_in_output,
            logprobs=num_sample_logprobs,
            prompt_logprobs=None,
        )  # fmt: skip
        for idx, p in enumerate(dtv.prompt_tokens)
    ]
    engine_core = MockEngineCore(
        dtv.generation_tokens,
        dtv.prompt_tokens,
        generated_logprobs_raw=dtv.generation_logprobs if num_sample_logprobs else None,
        request_ids=[r.request_id for r in requests],
    )
    for request, prompt in zip(requests, dtv.prompt_strings):
        output_processor.add_request(request, prompt)
    gen_strings, gen_tokens, gen_logprobs, gen_prompt_logprobs, gen_cumulative = {}, {}, {}, {}, {}
    aborted = []
    while outputs := engine_core.get_outputs():
        processed = output_processor.process_outputs(outputs)
        for request_output in processed.request_outputs:
            assert request_output.request_id not in aborted
        aborted.extend(processed.reqs_to_abort)
        for request_output in processed.request_outputs:
            if request_output.finished:
                assert request_output.outputs[0].finish_reason == "stop"
            request_id = request_output.request_id
            new_text = request_output.outputs[0].text
            new_tokens = request_output.outputs[0].token_ids
            logprobs = request_output.outputs[0].logprobs
            gen_cumulative[request_id] = request_output.outputs[0].cumulative_logprob
            if request_id not in gen_strings:
                gen_strings[request_id] = new_text
                gen_tokens[request_id] = new_tokens
                gen_logprobs[request_id] = logprobs
                gen_prompt_logprobs[request_id] = request_output.prompt_logprobs
            else:
                gen_strings[request_id] += new_text
                gen_tokens[request_id].extend(new_tokens)
                if gen_logprobs[request_id]:
                    gen_logprobs[request_id].extend(logprobs)
    for idx, (ref_gen_str, stop_str) in enumerate(zip(dtv.generation_strings, STOP_STRINGS)):
        assert f"request-{idx}-int" in aborted
        gen_str = gen_strings[f"request-{idx}"]
        stop_str_idx = ref_gen_str.find(stop_str)
        if include_stop_str_in_output:
            assert gen_str == ref_gen_str[:stop_str_idx] + stop_str
        else:
            assert gen_str == ref_gen_str[:stop_str_idx]
    _validate_logprobs(gen_tokens, gen_logprobs, gen_prompt_logprobs, gen_cumulative, dtv, request_id_list,
                       num_sample_logprobs, None)  # fmt: skip
    assert output_processor.get_num_unfinished_requests() == 0
    assert not output_processor.has_unfinished_requests()
