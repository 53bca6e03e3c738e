"""Cold load (issue 33): a server restarts. Each round is a fresh process that imports the
library untimed, then times the load call alone and measures the RSS it added
(benchmarks/cold_probe.py); ours against `tokenizers.Tokenizer.from_file` of the same
vocabulary (for a .gguf: Qwen3's tokenizer.json, Qwen2's vocabulary), for tekken against
mistral-common's `Tekkenizer.from_file`, and for Meta's tokenizer.model against Meta's Tokenizer
(tiktoken's Encoding of the ranks it reads) and against tiktoken's Encoding alone. A warm-up process runs first, so the operating
system's file cache is warm and Python's bytecode cache written (as an installed wheel has it).

The row's own timing is the whole process; the report reads the load call's time (the
minimum over rounds, as the issue measures) and RSS from extra_info.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench_cases import Unavailable, _located

PROBE = str(Path(__file__).resolve().parent / "cold_probe.py")
ROUNDS = 5

#: label -> (our file, the peer, the peer's file)
FILES = {
    "huggingface/qwen3": ("huggingface/qwen3/tokenizer.json", "tokenizers", "huggingface/qwen3/tokenizer.json"),
    "huggingface/mistral-7b": (
        "huggingface/mistral-7b/tokenizer.json",
        "tokenizers",
        "huggingface/mistral-7b/tokenizer.json",
    ),
    "whisper/faster-whisper-base": (
        "whisper/faster-whisper-base/tokenizer.json",
        "tokenizers",
        "whisper/faster-whisper-base/tokenizer.json",
    ),
    "gguf/qwen2": ("gguf/ggml-vocab-qwen2.gguf", "tokenizers", "huggingface/qwen3/tokenizer.json"),
    "tekken/tekken_240911": (
        "mistral-common:tekken_240911.json",
        "mistral-common",
        "mistral-common:tekken_240911.json",
    ),
    # Meta's tokenizer.model files (llama-models): against Meta's own Tokenizer (its ranks read,
    # tiktoken's Encoding built), and against the Encoding alone, built from ranks read untimed
    "tiktoken/llama3": ("llama-models:llama3/tokenizer.model", "tiktoken", "llama-models:llama3/tokenizer.model"),
    "tiktoken/llama3 (Encoding alone)": (
        "llama-models:llama3/tokenizer.model",
        "tiktoken-encoding",
        "llama-models:llama3/tokenizer.model",
    ),
    "tiktoken/llama4": ("llama-models:llama4/tokenizer.model", "tiktoken", "llama-models:llama4/tokenizer.model"),
}


def _probe(impl: str, path: str) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, PROBE, impl, path], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise Unavailable(f"{impl} could not load {path}: {done.stderr.strip().splitlines()[-1:]}")
    ms, rss = done.stdout.split()[:2]  # (then the CPU milliseconds, which test_travel.py reads)
    return float(ms), float(rss)


@pytest.mark.parametrize("label", sorted(FILES))
@pytest.mark.parametrize("side", ["oasr_tok", "peer"])
def test_cold_load(benchmark, label: str, side: str) -> None:
    ours, peer, peer_file = FILES[label]
    impl, rel = ("oasr_tok", ours) if side == "oasr_tok" else (peer, peer_file)
    try:
        path = _located(rel)
        _probe(impl, path)  # the warm-up
    except (Unavailable, FileNotFoundError) as exc:
        pytest.skip(str(exc))
    figures: list[tuple[float, float]] = []
    benchmark.group = f"cold load {label}"
    benchmark.pedantic(lambda: figures.append(_probe(impl, path)), rounds=ROUNDS, iterations=1)
    load_ms = sorted(ms for ms, _ in figures)
    benchmark.extra_info.update(
        {
            "suite": "cold_load",
            "case": label,
            "op": "load",
            "impl": impl,
            "n": 1,
            "per": 1,
            "load_ms_min": load_ms[0],
            "load_ms_median": load_ms[len(load_ms) // 2],
            "rss_added_mb": min(rss for _, rss in figures),
            "file": os.path.basename(path),
        }
    )
