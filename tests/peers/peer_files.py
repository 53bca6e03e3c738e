"""Where the peers' own test files are: unpacked by fixtures/fetch_llama_cpp.py (and its
siblings) under $OASR_TOK_PEERS or ~/.cache/oasr_tok/peers, never committed. Absent, a test
that needs them is skipped naming the command that fetches them; CI's peers tier fetches them
and sets OASR_TOK_REQUIRE_PEERS=1, so that nothing hides behind the skip there."""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path

import pytest

LLAMA_CPP = "0.3.36"
NEMO = "3.0.0"
FASTER_WHISPER = "1.2.1"
QWEN_ASR = "0.0.6"
OPENAI_WHISPER = "20250625"


def root() -> Path:
    return Path(os.environ.get("OASR_TOK_PEERS") or Path.home() / ".cache" / "oasr_tok" / "peers")


def _fetched(path: Path, probe: str, what: str, script: str) -> Path:
    """`path` when the fetch script unpacked `probe` in it; else a skip naming the script (a
    failure under OASR_TOK_REQUIRE_PEERS=1)."""
    if not (path / probe).exists():
        message = f"needs {what} in {path}: python fixtures/{script}"
        if os.environ.get("OASR_TOK_REQUIRE_PEERS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def llama_cpp() -> Path:
    """The unpacked llama.cpp test files."""
    return _fetched(
        root() / f"llama.cpp-{LLAMA_CPP}", "src/llama-vocab.cpp", "llama.cpp's test files", "fetch_llama_cpp.py"
    )


def llama_vocabularies() -> list[str]:
    """The names of the ggml-vocab-*.gguf that have goldens (collected even when absent, so the
    test ids are stable: the list llama-cpp-python 0.3.36 ships)."""
    return [
        "bert-bge", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2", "llama-bpe",
        "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder",
    ]  # fmt: skip


def nemo_tokenizers() -> Path:
    """NeMo's unpacked tokenizer modules (nemo/collections/common/tokenizers/)."""
    path = root() / f"nemo-{NEMO}" / "nemo" / "collections" / "common" / "tokenizers"
    return _fetched(path, "sentencepiece_tokenizer.py", "NeMo's tokenizer modules", "fetch_nemo.py")


def faster_whisper() -> Path:
    """faster-whisper's unpacked modules (faster_whisper/transcribe.py, tokenizer.py,
    feature_extractor.py)."""
    path = root() / f"faster-whisper-{FASTER_WHISPER}" / "faster_whisper"
    return _fetched(path, "transcribe.py", "faster-whisper's modules", "fetch_faster_whisper.py")


def qwen_asr() -> Path:
    """qwen-asr's unpacked streaming code (qwen_asr/inference/)."""
    path = root() / f"qwen-asr-{QWEN_ASR}" / "qwen_asr" / "inference"
    return _fetched(path, "qwen3_asr.py", "qwen-asr's streaming code", "fetch_qwen_asr.py")


def openai_whisper_gpt2() -> Path:
    """openai-whisper's English-only vocabulary (whisper/assets/gpt2.tiktoken)."""
    path = root() / f"openai-whisper-{OPENAI_WHISPER}" / "whisper" / "assets"
    return (
        _fetched(path, "gpt2.tiktoken", "openai-whisper's gpt2.tiktoken", "fetch_openai_whisper.py") / "gpt2.tiktoken"
    )


def load_modules(
    package: str, folder: Path, stems: Sequence[str], stand_ins: dict[str, types.ModuleType]
) -> dict[str, types.ModuleType]:
    """`package`.<stem> for each of `stems`, loaded by file path from a fetched `folder` (never
    installed, never built), with `stand_ins` in sys.modules while they import; sys.modules is
    left as it was."""
    saved = {name: sys.modules.get(name) for name in [*stand_ins, *(f"{package}.{stem}" for stem in stems)]}
    loaded: dict[str, types.ModuleType] = {}
    try:
        sys.modules.update(stand_ins)
        for stem in stems:
            name = f"{package}.{stem}"
            spec = importlib.util.spec_from_file_location(name, folder / f"{stem}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            loaded[stem] = module
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return loaded
