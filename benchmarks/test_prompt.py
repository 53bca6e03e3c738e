"""The prompt side (docs/prompts.md), side by side with transformers on the same inputs:
apply_chat_template (render, and render + tokenize) and encode(add_special_tokens=True) on the
Qwen3 directory, and the with_specials() view streaming one id per call against the plain
tokenizer (the view runs on the same compiled engine, so the two should be close).
transformers' side is skipped where it is not installed.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench_cases import shared
from conftest import timed

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

MESSAGES = [
    {"role": "system", "content": "You transcribe and answer questions about audio."},
    {"role": "user", "content": "What did the speaker say about the weather in Paris tomorrow?"},
    {"role": "assistant", "content": "They said it will rain in the morning and clear up by noon."},
    {"role": "user", "content": "和明天的北京呢？"},
]
TEXT = "<|im_start|>user\nThe quick brown fox jumps over the lazy dog. 今天天气很好。<|im_end|>\n" * 8


def _qwen3_dir() -> str:
    return str(Path(shared("huggingface/qwen3/tokenizer.json")).parent)


def _ours():
    import oasr_tok

    return oasr_tok.load(_qwen3_dir())


def _theirs():
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        pytest.skip(f"transformers is not installed here ({exc}); `tox -e bench` installs it")
    return AutoTokenizer.from_pretrained(_qwen3_dir())


OPS = ("apply_chat_template", "apply_chat_template+tokenize", "encode+specials")
PARAMS = [pytest.param(op, "oasr_tok", id=f"{op}|oasr_tok") for op in OPS] + [
    pytest.param(op, "transformers", id=f"{op}|transformers", marks=pytest.mark.peer) for op in OPS
]


@pytest.mark.parametrize("op,impl", PARAMS)
def test_prompt(benchmark, op: str, impl: str) -> None:
    if impl == "oasr_tok":
        tok = _ours()
        calls = {
            "apply_chat_template": lambda _: tok.apply_chat_template(MESSAGES, add_generation_prompt=True),
            "apply_chat_template+tokenize": lambda _: tok.apply_chat_template(MESSAGES, add_generation_prompt=True,
                                                                             tokenize=True),
            "encode+specials": lambda _: tok.encode(TEXT, add_special_tokens=True),
        }
    else:
        ref = _theirs()
        calls = {
            "apply_chat_template": lambda _: ref.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False),
            "apply_chat_template+tokenize": lambda _: ref.apply_chat_template(MESSAGES, add_generation_prompt=True,
                                                                             tokenize=True, return_dict=False),
            "encode+specials": lambda _: ref(TEXT).input_ids,
        }
    run = calls[op]
    run(None)  # compile / warm the template cache on both sides
    benchmark.group = f"prompt qwen3 {op}"
    timed(benchmark, run, per=1, info={"suite": "prompt", "case": "qwen3", "op": op, "impl": impl, "n": 1})


@pytest.mark.parametrize("view", ["plain", "with_specials"])
def test_stream_with_specials(benchmark, view: str) -> None:
    tok = _ours()
    if view == "with_specials":
        tok = tok.with_specials()
    ids = tok.encode(TEXT * 20)
    singles = [[i] for i in ids]

    def run(_):
        state: dict = {}
        step = tok.decode_incremental
        for one in singles:
            step(one, state)

    benchmark.group = "prompt qwen3 stream, one id per call"
    timed(benchmark, run, per=len(ids), info={"suite": "prompt", "case": "qwen3", "op": "stream",
                                              "impl": f"oasr_tok {view}", "n": len(ids)})
