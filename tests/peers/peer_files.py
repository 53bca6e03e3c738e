"""Where the peers' own test files are: unpacked by fixtures/fetch_llama_cpp.py (and its
siblings) under $OASR_TOK_PEERS or ~/.cache/oasr_tok/peers, never committed. Absent, a test
that needs them is skipped naming the command that fetches them; CI's peers tier fetches them
and sets OASR_TOK_REQUIRE_PEERS=1, so that nothing hides behind the skip there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

LLAMA_CPP = "0.3.36"
NEMO = "3.0.0"


def root() -> Path:
    return Path(os.environ.get("OASR_TOK_PEERS") or Path.home() / ".cache" / "oasr_tok" / "peers")


def llama_cpp() -> Path:
    """The unpacked llama.cpp test files, or a skip (a failure under OASR_TOK_REQUIRE_PEERS=1)."""
    path = root() / f"llama.cpp-{LLAMA_CPP}"
    if not (path / "src" / "llama-vocab.cpp").exists():
        message = f"needs llama.cpp's test files in {path}: python fixtures/fetch_llama_cpp.py"
        if os.environ.get("OASR_TOK_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def llama_vocabularies() -> list[str]:
    """The names of the ggml-vocab-*.gguf that have goldens (collected even when absent, so the
    test ids are stable: the list llama-cpp-python 0.3.36 ships)."""
    return [
        "bert-bge", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2", "llama-bpe",
        "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder",
    ]  # fmt: skip


def nemo_tokenizers() -> Path:
    """NeMo's unpacked tokenizer modules (nemo/collections/common/tokenizers/), or a skip (a
    failure under OASR_TOK_REQUIRE_PEERS=1)."""
    path = root() / f"nemo-{NEMO}" / "nemo" / "collections" / "common" / "tokenizers"
    if not (path / "sentencepiece_tokenizer.py").exists():
        message = f"needs NeMo's tokenizer modules in {path}: python fixtures/fetch_nemo.py"
        if os.environ.get("OASR_TOK_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path
