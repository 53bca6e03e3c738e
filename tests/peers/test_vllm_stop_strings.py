"""vLLM's stop-string and min_tokens tests, translated onto local files for tokenizer_mode="oasr".

Upstream: vllm-project/vllm v0.33.0 (the PyPI sdist vllm-0.33.0.tar.gz; git commit g4ba787ec9):
tests/detokenizer/test_check_stop_strings.py, test_stop_string_while_stop_model_terminates.py,
test_min_tokens.py, test_stop_strings.py, test_stop_reason.py, test_disable_detokenization.py.
Every case is kept:

* check_stop_strings(text, new_char_count, stop, include) is a pure function upstream; here the
  text comes to a request of mode "oasr" in two engine steps, the last one bringing the
  new_char_count characters, one id per character (Qwen3's single-character tokens): the stop
  string it returns and the text it keeps are the upstream literals;
* the dummy detokenizer of test_stop_string_while_stop_model_terminates (id = a character) is
  the same Qwen3 single-character ids; its decode_next monkeypatch (tokens decoding to "ab",
  "cdx", "" ...) is real tokens decoding to those texts ("" is a special token, skipped);
* test_min_tokens's facebook/opt-125m prompt is encoded by Qwen3 (both byte-level BPE; the
  truths are upstream's literals);
* test_stop_strings and test_stop_reason generate with a model (llama-2-7b, distilgpt2) that
  is not here: the output step is driven with the ids of upstream's expected text
  ("VLLM is a 100% volunteer organization. We are a group of people ...", encoded by Mistral-7B's
  Llama-style vocabulary), and the expected outputs and stop reasons are upstream's literals;
  _stop_token_id is commented out upstream (a FIXME), and stays a skip saying so;
* test_disable_detokenization: detokenize=False gives "" and the same ids.
"""

from __future__ import annotations

import numpy as np
import pytest

from vllm_reference import Request, drive, engine_request, require_vllm, split_steps, tokenizer

require_vllm()

from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.engine import EngineCoreOutput, EngineCoreRequest, FinishReason  # noqa: E402
from vllm.v1.engine.output_processor import OutputProcessor  # noqa: E402
from vllm.v1.outputs import LogprobsLists, SamplingMaskLists  # noqa: E402

from oasr_tok.integrations.vllm.detokenizer import OasrDetokenizer  # noqa: E402


def qwen3():
    return tokenizer("huggingface/qwen3", "oasr")


def char_ids(text: str) -> list[int]:
    """One id per character (Qwen3 spells every ASCII character alone)."""
    tok = qwen3()
    ids = [tok.encode(c, add_special_tokens=False) for c in text]
    assert all(len(i) == 1 for i in ids)
    return [i[0] for i in ids]


def _request(stop, include, min_tokens=0, prompt=()) -> EngineCoreRequest:
    return EngineCoreRequest(
        request_id="test",
        prompt_token_ids=list(prompt),
        mm_features=None,
        sampling_params=SamplingParams(stop=stop, include_stop_str_in_output=include, min_tokens=min_tokens),
        pooling_params=None,
        arrival_time=0.0,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )


def check_stop_strings(text: str, new_char_count: int, stop: list[str], include: bool):
    """Upstream's check_stop_strings(text, new_char_count, stop, include), as a request of mode
    "oasr" sees it: (stop string, truncation offset or -1) or None."""
    detok = OasrDetokenizer(qwen3(), _request(stop, include))
    ids = char_ids(text)
    cut = len(ids) - new_char_count
    if cut:
        assert detok.update(ids[:cut], False) is None or new_char_count == 0
    found = detok.update(ids[cut:], False) if new_char_count else None
    if found is None:
        return None
    kept = detok.output_text
    return found, (-1 if kept == text else len(kept))


# -- tests/detokenizer/test_check_stop_strings.py ---------------------------------------------


@pytest.mark.parametrize("stop", [["a", "is"], ["is", "a"]])
def test_earliest_completing_stop_wins_regardless_of_list_order(stop):
    text = " The user is a"
    assert check_stop_strings(text, len(" is a"), stop, include=False) == ("is", 10)


@pytest.mark.parametrize("stop", [["a", "is"], ["is", "a"]])
def test_earliest_completing_stop_include_in_output(stop):
    text = " The user is a"
    assert check_stop_strings(text, len(" is a"), stop, include=True) == ("is", 12)


def test_completion_position_not_start_position():
    assert check_stop_strings("abc", 3, ["abc", "b"], include=False) == ("b", 1)


@pytest.mark.parametrize("stop,expected", [(["ab", "b"], ("ab", 0)), (["b", "ab"], ("b", 1))])
def test_ties_broken_by_list_order(stop, expected):
    assert check_stop_strings("ab", 2, stop, include=False) == expected


def test_single_stop_in_window_unchanged():
    text = "hello world."
    assert check_stop_strings(text, 1, ["."], include=False) == (".", 11)
    assert check_stop_strings(text, 1, ["."], include=True) == (".", -1)


def test_no_match_and_empty_inputs_return_none():
    assert check_stop_strings("hello", 5, ["zzz"], include=False) is None
    assert check_stop_strings("hello", 0, ["h"], include=False) is None
    assert check_stop_strings("hello", 5, [], include=False) is None


# -- tests/detokenizer/test_stop_string_while_stop_model_terminates.py --------------------------


@pytest.fixture(params=[True, False])
def include_stop_str_in_output(request):
    return request.param


def test_stop_string_while_stop_token_terminates(include_stop_str_in_output):
    """ "abcdeZ" generated, "Z" the engine's own stop id, "cd" the stop string."""
    token_ids = char_ids("abcdeZ")
    detok = OasrDetokenizer(qwen3(), _request(["cd"], include_stop_str_in_output))
    assert detok.update(new_token_ids=token_ids, stop_terminated=True) == "cd"
    expected_text = "abcd" if include_stop_str_in_output else "ab"
    assert detok.output_text == expected_text
    assert detok.output_token_ids == token_ids[:4]
    assert detok.get_next_output_text(finished=True, delta=False) == expected_text


@pytest.mark.parametrize("min_tokens,num_kept", [(0, 2), (1, 2), (2, 4), (3, 4), (4, None)])
@pytest.mark.parametrize("num_prev_tokens", [0, 1])
def test_stop_string_min_tokens_within_step(include_stop_str_in_output, min_tokens, num_kept, num_prev_tokens):
    token_ids = char_ids("cdcdx")
    detok = OasrDetokenizer(qwen3(), _request(["cd"], include_stop_str_in_output, min_tokens))
    if num_prev_tokens:
        assert detok.update(token_ids[:num_prev_tokens], False) is None
    result = detok.update(token_ids[num_prev_tokens:], False)
    if num_kept is None:
        assert result is None
        assert detok.output_text == "cdcdx"
        assert detok.output_token_ids == token_ids
        return
    assert result == "cd"
    text_len = num_kept if include_stop_str_in_output else num_kept - 2
    assert detok.output_text == "cdcdx"[:text_len]
    assert detok.output_token_ids == token_ids[:num_kept]


def _tokens_decoding_to(texts: list[str]) -> list[int]:
    """Real Qwen3 ids whose texts are `texts` ("" is a special token, skipped)."""
    tok = qwen3()
    out = []
    for text in texts:
        if not text:
            out.append(151644)  # <|im_start|>: renders nothing with skip_special_tokens
            continue
        ids = tok.encode(text, add_special_tokens=False)
        assert len(ids) == 1, text
        out.append(ids[0])
    return out


@pytest.mark.parametrize(
    "decoded_tokens,keep",
    [
        (["a", "b", "c", "d", "e", "f"], 4),
        (["ab", "cdn", "ef"], 2),  # upstream "cdx": Qwen3 has no such token; "cdn" is one
        (["ab", "", "c", "", "d", "", "ef"], 5),
    ],
)
@pytest.mark.parametrize("stop_terminated", [False, True])
def test_stop_string_trims_speculative_overflow(include_stop_str_in_output, decoded_tokens, keep, stop_terminated):
    token_ids = _tokens_decoding_to(decoded_tokens)
    if stop_terminated:
        token_ids = token_ids + [151645]  # the engine's own stop at the end of the batch
    expected_token_ids = token_ids[:keep]
    request = _request(["cd"], include_stop_str_in_output)
    request.external_req_id = request.request_id
    request.sampling_params.logprobs = 0
    processor = OutputProcessor(qwen3(), log_stats=False)
    processor.add_request(request, prompt=None)
    detok = processor.request_states[request.request_id].detokenizer
    assert isinstance(detok, OasrDetokenizer)
    outputs = processor.process_outputs(
        [
            EngineCoreOutput(
                request_id=request.request_id,
                new_token_ids=token_ids,
                finish_reason=FinishReason.STOP if stop_terminated else None,
                new_logprobs=LogprobsLists(
                    np.array(token_ids).reshape(-1, 1),
                    np.zeros((len(token_ids), 1)),
                    np.ones(len(token_ids), dtype=int),
                    None,
                ),
                new_sampling_mask=SamplingMaskLists(np.array(token_ids), np.arange(len(token_ids) + 1)),
                routed_experts=np.array(token_ids).reshape(-1, 1, 1),
            )
        ]
    )
    result = outputs.request_outputs[0].outputs[0]
    assert result.stop_reason == "cd"
    expected_text = "abcd" if include_stop_str_in_output else "ab"
    assert detok.output_text == expected_text
    assert detok.output_token_ids == expected_token_ids
    assert result.token_ids == expected_token_ids
    assert result.logprobs is not None
    assert len(result.logprobs) == len(expected_token_ids)
    assert result.sampling_mask is not None
    assert result.sampling_mask.token_ids == [[token] for token in expected_token_ids]
    assert result.routed_experts is not None
    assert result.routed_experts.ravel().tolist() == expected_token_ids


# -- tests/detokenizer/test_min_tokens.py -------------------------------------------------------

PROMPT = "Hello, my name is Lee, and I'm a student in the " + "college of engineering"


@pytest.mark.parametrize(
    "min_tokens,stop,truth",
    [
        (0, None, " is Lee, and I'm a student in the college of engineering"),
        (0, "e", " is L"),
        (5, "e", " is Lee, and I'm a stud"),
    ],
)
def test_min_tokens_with_stop(min_tokens, stop, truth):
    tok = qwen3()
    all_prompt_ids = tok(PROMPT, add_special_tokens=False).input_ids
    assert tok.decode(all_prompt_ids[:4]) == "Hello, my name"  # upstream's opt-125m prompt is 4 ids too
    prompt_token_ids = all_prompt_ids[:4]
    detok = OasrDetokenizer(tok, _request(stop, False, min_tokens, prompt_token_ids))
    detok.update(all_prompt_ids[4:], False)
    assert detok.output_text == truth


# -- tests/detokenizer/test_stop_strings.py -----------------------------------------------------

# upstream's llama-2-7b generation (greedy) for "A story about vLLM:\n", as far as its tests read it
GENERATION = "VLLM is a 100% volunteer organization. We are a group of people who love short stories"


def _stopping(expected_output, expected_reason, stop=None, include_in_output=False):
    tok = tokenizer("huggingface/mistral-7b", "oasr")
    prompt = tok.encode("A story about vLLM:\n")
    full = tok.encode("A story about vLLM:\n" + GENERATION)
    assert full[: len(prompt)] == prompt  # the model's ids continue the prompt's
    ids = full[len(prompt) :]
    params = {"stop": stop, "include_stop_str_in_output": include_in_output, "max_tokens": 200}
    seen = drive(tok, [Request(prompt, split_steps(ids, [1]), params=params)], "FINAL_ONLY")[0]
    assert seen.texts[-1] == expected_output
    assert seen.stop_reason == expected_reason


def test_stop_basic():
    _stopping("VLLM is a 100% volunteer organization", ".", stop=["."])
    _stopping("VLLM is a 100% volunteer organization.", ".", stop=["."], include_in_output=True)


def test_stop_multi_tokens():
    _stopping("VLLM is a 100% volunteer organization. We are a ", "group of peo", stop=["group of peo", "short"])
    _stopping(
        "VLLM is a 100% volunteer organization. We are a group of peo",
        "group of peo",
        stop=["group of peo", "short"],
        include_in_output=True,
    )


def test_stop_partial_token():
    _stopping("VLLM is a 100% volunteer or", "gani", stop=["gani"])
    _stopping("VLLM is a 100% volunteer organi", "gani", stop=["gani"], include_in_output=True)


@pytest.mark.skip(reason="commented out upstream: 'FIXME: this does not respect include_in_output=False'")
def test_stop_token_id():
    pass


# -- tests/detokenizer/test_stop_reason.py ------------------------------------------------------


def test_stop_reason():
    """A stop token id (the finish reason "stop" and the id as stop reason, vLLM's engine core
    decides it), a stop string ("." as stop reason) and the EOS (no stop reason)."""
    tok = qwen3()
    ids = tok.encode("It was late. The end came soon after", add_special_tokens=False)
    stop_token_id = tok.convert_tokens_to_ids(".")
    upto = ids.index(stop_token_id) + 1
    by_token = Request([1, 2], split_steps(ids[:upto], [1]), finish="stop", stop_reason=stop_token_id)
    by_string = Request([1, 2], split_steps(ids, [1]), params={"stop": "."})
    by_eos = Request([1, 2], split_steps(ids + [tok.eos_token_id], [1]), finish="stop")
    for seen in drive(tok, [by_token, by_string, by_eos], "DELTA"):
        assert seen.finish_reason == "stop"
    token, string, eos = drive(tok, [by_token, by_string, by_eos], "FINAL_ONLY")
    assert token.stop_reason == stop_token_id
    assert string.stop_reason == "."
    assert eos.stop_reason is None


# -- tests/detokenizer/test_disable_detokenization.py -------------------------------------------


def test_computed_prefix_blocks():
    tok = qwen3()
    prompt = tok.encode(
        "You are a helpful assistant. How do I build a car from cardboard and paper clips? "
        "Is there an easy to follow video tutorial available online for free?"
    )
    ids = tok.encode(" First, gather cardboard and clips.", add_special_tokens=False)[:10]
    outputs = {}
    for detokenize in (False, True):
        request = Request(prompt, split_steps(ids, [1]), params={"max_tokens": 10, "detokenize": detokenize})
        outputs[detokenize] = drive(tok, [request], "FINAL_ONLY")[0]
    assert outputs[False].texts[-1] == ""
    assert outputs[True].texts[-1] != ""
    assert outputs[False].token_ids[-1] == outputs[True].token_ids[-1] == ids
    assert engine_request(0, Request(prompt, [ids])).sampling_params.detokenize
