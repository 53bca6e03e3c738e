"""Load time of each kind from its files and of the qwen2-audio-like checkpoint
with its 3,288-token tokenizer_config merge, against transformers' AutoTokenizer loading the
same directory. transformers is installed only in the tox bench env (it imports without a
GPU framework); elsewhere its side is skipped with that reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench_cases import BY_LABEL, CASES, Unavailable, build, shared
from conftest import timed

# transformers must never reach for the network here.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _auto_dir(case) -> str | None:
    """The checkpoint directory AutoTokenizer would load for this case, if it has one."""
    if case.kind not in ("huggingface", "whisper") or "tokenizer" not in case.files:
        return None
    return str(Path(shared(case.files["tokenizer"])).parent)


PARAMS = (
    [pytest.param(c.label, "oasr_tok", id=f"{c.label}|oasr_tok") for c in CASES]
    + [
        pytest.param(c.label, "AutoTokenizer", id=f"{c.label}|AutoTokenizer", marks=pytest.mark.peer)
        for c in CASES
        if _auto_dir(c)
    ]
    + [
        # our GGUF reader + table build on Qwen2's vocabulary, beside the `tokenizers`
        # runtime reading Qwen3's tokenizer.json (the same vocabulary) from its file
        pytest.param(
            c.label, "tokenizers.from_file qwen3", id=f"{c.label}|tokenizers.from_file qwen3", marks=pytest.mark.peer
        )
        for c in CASES
        if c.kind == "gguf"
    ]
)


@pytest.mark.parametrize("label,impl", PARAMS)
def test_load(benchmark, label: str, impl: str) -> None:
    case = BY_LABEL[label]
    if impl == "oasr_tok":
        try:
            build(case)  # also warms the OS file cache for both sides
        except Unavailable as exc:
            pytest.skip(str(exc))

        def load(_):
            build(case)
    elif impl == "tokenizers.from_file qwen3":
        from tokenizers import Tokenizer

        path = shared("huggingface/qwen3/tokenizer.json")
        Tokenizer.from_file(path)

        def load(_):
            Tokenizer.from_file(path)
    else:
        try:
            import transformers  # noqa: F401
            from transformers import AutoTokenizer
        except ImportError as exc:
            pytest.skip(f"transformers is not installed here ({exc}); `tox -e bench` installs it")
        directory = _auto_dir(case)
        AutoTokenizer.from_pretrained(directory)

        def load(_):
            AutoTokenizer.from_pretrained(directory)

    benchmark.group = f"load {label}"
    timed(benchmark, load, per=1, info={"suite": "load", "case": label, "kind": case.kind, "impl": impl, "n": 1})
