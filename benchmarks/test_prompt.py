"""The prompt side (docs/prompts.md), side by side with transformers on the same inputs:
apply_chat_template (render, and render + tokenize) and encode(add_special_tokens=True) on the
Qwen3 directory, and the with_specials() view streaming one id per call against the plain
tokenizer (the view runs on the same compiled engine, so the two should be close).
transformers' side is skipped where it is not installed.

The gguf (llama.cpp's qwen2 vocabulary) and tekken (mistral-common's tekken_240911.json) kinds:
apply_chat_template from the GGUF's own template, encode with special-token text matched and
bos added, against mistral-common's encode(bos=True) for tekken, and their with_specials()
views streaming one id per call against the plain tokenizer.
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
            "apply_chat_template+tokenize": lambda _: tok.apply_chat_template(
                MESSAGES, add_generation_prompt=True, tokenize=True
            ),
            "encode+specials": lambda _: tok.encode(TEXT, add_special_tokens=True),
        }
    else:
        ref = _theirs()
        calls = {
            "apply_chat_template": lambda _: ref.apply_chat_template(
                MESSAGES, add_generation_prompt=True, tokenize=False
            ),
            "apply_chat_template+tokenize": lambda _: ref.apply_chat_template(
                MESSAGES, add_generation_prompt=True, tokenize=True, return_dict=False
            ),
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
    timed(
        benchmark,
        run,
        per=len(ids),
        info={"suite": "prompt", "case": "qwen3", "op": "stream", "impl": f"oasr_tok {view}", "n": len(ids)},
    )


def _gguf():
    import oasr_tok

    return oasr_tok.load(shared("gguf/ggml-vocab-qwen2.gguf"))


def _tekken_path() -> str:
    import mistral_common

    path = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
    if not path.exists():
        pytest.skip(f"mistral-common does not ship {path}")
    return str(path)


def _tekken():
    import oasr_tok
    from oasr_tok import TokenizerSpec

    return oasr_tok.build_tokenizer(TokenizerSpec("tekken", {"tekken": _tekken_path()}))


TEKKEN_TEXT = "[INST]The quick brown fox jumps over the lazy dog. 今天天气很好。[/INST]" * 8
KIND_PARAMS = [
    pytest.param("gguf", "apply_chat_template", "oasr_tok", id="gguf|apply_chat_template|oasr_tok"),
    pytest.param("gguf", "encode+specials", "oasr_tok", id="gguf|encode+specials|oasr_tok"),
    pytest.param("tekken", "encode+specials", "oasr_tok", id="tekken|encode+specials|oasr_tok"),
    pytest.param(
        "tekken",
        "encode+specials",
        "mistral-common",
        id="tekken|encode+specials|mistral-common",
        marks=pytest.mark.peer,
    ),
]


@pytest.mark.parametrize("kind,op,impl", KIND_PARAMS)
def test_prompt_kinds(benchmark, kind: str, op: str, impl: str) -> None:
    if kind == "gguf":
        tok = _gguf()
        calls = {
            "apply_chat_template": lambda _: tok.apply_chat_template(MESSAGES, add_generation_prompt=True),
            "encode+specials": lambda _: tok.encode(TEXT, add_special_tokens=True),
        }
    elif impl == "oasr_tok":
        tok = _tekken()
        # split_special_tokens=True: the same work as mistral-common, which never matches names
        calls = {
            "encode+specials": lambda _: tok.encode(TEKKEN_TEXT, add_special_tokens=True, split_special_tokens=True)
        }
    else:
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        ref = Tekkenizer.from_file(_tekken_path())
        calls = {"encode+specials": lambda _: ref.encode(TEKKEN_TEXT, bos=True, eos=False)}
    run = calls[op]
    run(None)
    benchmark.group = f"prompt {kind} {op}"
    timed(benchmark, run, per=1, info={"suite": "prompt", "case": kind, "op": op, "impl": impl, "n": 1})


@pytest.mark.parametrize("kind", ["gguf", "tekken"])
@pytest.mark.parametrize("view", ["plain", "with_specials"])
def test_stream_kinds_with_specials(benchmark, kind: str, view: str) -> None:
    tok = _gguf() if kind == "gguf" else _tekken()
    text = TEXT if kind == "gguf" else TEKKEN_TEXT
    ids = tok.encode(text * 20, add_special_tokens=True)
    if view == "with_specials":
        tok = tok.with_specials()
    singles = [[i] for i in ids]

    def run(_):
        state: dict = {}
        step = tok.decode_incremental
        for one in singles:
            step(one, state)

    benchmark.group = f"prompt {kind} stream, one id per call"
    timed(
        benchmark,
        run,
        per=len(ids),
        info={"suite": "prompt", "case": kind, "op": "stream", "impl": f"oasr_tok {view}", "n": len(ids)},
    )
