"""What the benchmarks run on: one Case per real tokenizer file in ../shared/fixtures, the
tokenizer built from it through the public API, and the peers that read the same ids.

A kind whose module has not landed yet (or a backend that is not installed) raises
`Unavailable`, which the tests turn into a skip with that reason, so the suite runs with
whatever kinds exist and the report names the ones that are missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from bench_corpus import PASSAGES

import oasr_tok

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures"


class Unavailable(Exception):
    """This case cannot run here (kind not landed, backend or peer not installed)."""


def shared(relative: str) -> str:
    path = SHARED / relative
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the benchmarks read ../shared/fixtures beside the checkout")
    return str(path)


@dataclass(frozen=True)
class Case:
    label: str
    kind: str
    files: dict[str, str]  # role -> path under ../shared/fixtures
    passages: str  # key of bench_corpus.PASSAGES
    #: how the hypothesis ids are made: ("tokenizers", json) / ("sentencepiece", model) / ("self", None)
    #: / ("encode", None): the kind's own encode (tekken and .tiktoken: tiktoken, tested equal to
    #: mistral-common's / openai-whisper's encode)
    encoder: tuple[str, str | None]
    #: peers that read the very same ids
    hf_peer: str | None = None  # a tokenizer.json: DecodeStream, re-decode, vLLM window, decode
    sp_peer: str | None = None  # a SentencePiece model: decode per partial, decode
    options: dict[str, Any] = field(default_factory=dict)
    load_only: bool = False


QWEN3 = "huggingface/qwen3/tokenizer.json"
MISTRAL_JSON = "huggingface/mistral-7b/tokenizer.json"
MOONSHINE = "huggingface/moonshine/tokenizer.json"
WHISPER = "whisper/faster-whisper-base/tokenizer.json"
ICEFALL_MODEL = "sentencepiece/icefall-librispeech-bpe500.model"
MISTRAL_MODEL = "sentencepiece/mistral-v1.model"

CASES: list[Case] = [
    # The icefall table shares its ids with the icefall SentencePiece model, piece for piece.
    Case(
        "symbol_table/icefall-bpe500",
        "symbol_table",
        {"units": "symbol_table/icefall-librispeech-bpe500.tokens.txt"},
        "en_upper",
        ("sentencepiece", ICEFALL_MODEL),
        sp_peer=ICEFALL_MODEL,
    ),
    # mistral-v1.model and the Mistral-7B tokenizer.json have the same vocabulary.
    Case(
        "sentencepiece/mistral-v1",
        "sentencepiece",
        {"model": MISTRAL_MODEL},
        "multi",
        ("sentencepiece", MISTRAL_MODEL),
        hf_peer=MISTRAL_JSON,
        sp_peer=MISTRAL_MODEL,
    ),
    Case(
        "huggingface/qwen3",
        "huggingface",
        {"tokenizer": QWEN3, "tokenizer_config": "huggingface/qwen3/tokenizer_config.json"},
        "multi",
        ("tokenizers", QWEN3),
        hf_peer=QWEN3,
    ),
    Case(
        "huggingface/mistral-7b",
        "huggingface",
        {"tokenizer": MISTRAL_JSON, "tokenizer_config": "huggingface/mistral-7b/tokenizer_config.json"},
        "multi",
        ("tokenizers", MISTRAL_JSON),
        hf_peer=MISTRAL_JSON,
    ),
    Case(
        "huggingface/moonshine",
        "huggingface",
        {"tokenizer": MOONSHINE},
        "multi",
        ("tokenizers", MOONSHINE),
        hf_peer=MOONSHINE,
    ),
    Case(
        "whisper/faster-whisper-base",
        "whisper",
        {"tokenizer": WHISPER},
        "multi",
        ("tokenizers", WHISPER),
        hf_peer=WHISPER,
    ),
    Case(
        "funasr_char/paraformer-zh",
        "funasr_char",
        {"tokens": "funasr_char/paraformer-zh-vocab8404/tokens.json"},
        "zh_en",
        ("self", None),
    ),
    # llama.cpp's Qwen2 vocabulary in a GGUF: the ids Qwen3's tokenizer.json encodes are the
    # same tokens (the base vocabulary is shared), so it streams side by side with huggingface/qwen3.
    Case("gguf/qwen2", "gguf", {"gguf": "gguf/ggml-vocab-qwen2.gguf"}, "multi", ("tokenizers", QWEN3), hf_peer=QWEN3),
    # Mistral's tekken.json ships in mistral-common's data/ folder, not in ../shared/fixtures.
    Case("tekken/tekken_240911", "tekken", {"tekken": "mistral-common:tekken_240911.json"}, "multi", ("encode", None)),
    Case(
        "whisper/multilingual.tiktoken",
        "whisper",
        {"tiktoken": "whisper-tiktoken/multilingual.tiktoken"},
        "multi",
        ("encode", None),
        options={"num_languages": 99},
    ),
    # Loaded only: the 3,288-token tokenizer_config merge is what is being timed.
    Case(
        "huggingface/qwen2-audio-like",
        "huggingface",
        {
            "tokenizer": "huggingface/qwen2-audio-like/tokenizer.json",
            "tokenizer_config": "huggingface/qwen2-audio-like/tokenizer_config.json",
        },
        "multi",
        ("tokenizers", "huggingface/qwen2-audio-like/tokenizer.json"),
        load_only=True,
    ),
]

STREAM_CASES = [c for c in CASES if not c.load_only]
BY_LABEL = {c.label: c for c in CASES}


def _located(rel: str) -> str:
    """A case file: under ../shared/fixtures, "mistral-common:<name>" in that package's data/, or
    "llama-models:<path>" in that package (Meta's tokenizer.model files)."""
    if rel.startswith("llama-models:"):
        try:
            import llama_models
        except ImportError:
            raise Unavailable("llama-models (which ships Meta's tokenizer.model files) is not installed") from None
        return str(Path(llama_models.__file__).resolve().parent / rel.split(":", 1)[1])
    if rel.startswith("mistral-common:"):
        try:
            import mistral_common
        except ImportError:
            raise Unavailable("mistral-common (which ships the tekken files) is not installed") from None
        return str(Path(mistral_common.__file__).resolve().parent / "data" / rel.split(":", 1)[1])
    return shared(rel)


def spec_of(case: Case) -> oasr_tok.TokenizerSpec:
    return oasr_tok.TokenizerSpec(
        case.kind, {role: _located(rel) for role, rel in case.files.items()}, dict(case.options)
    )


def build(case: Case) -> oasr_tok.Tokenizer:
    """Build the case's tokenizer through the registry, as a user would."""
    try:
        return oasr_tok.build_tokenizer(spec_of(case))
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("oasr_tok"):
            raise Unavailable(f"kind {case.kind!r} has not landed yet ({exc.name} is missing)") from None
        raise
    except oasr_tok.BackendNotInstalledError as exc:
        raise Unavailable(str(exc)) from None


@cache
def tokenizer(label: str) -> oasr_tok.Tokenizer:
    return build(BY_LABEL[label])


@cache
def hf_runtime(path: str):
    """A `tokenizers.Tokenizer` on a file (the peer runtime)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise Unavailable("tokenizers is not installed") from None
    return Tokenizer.from_file(shared(path))


@cache
def sp_runtime(path: str):
    try:
        import sentencepiece
    except ImportError:
        raise Unavailable("sentencepiece is not installed") from None
    return sentencepiece.SentencePieceProcessor(model_file=shared(path))


_CHUNK = re.compile(r"[A-Za-z']+|[0-9]+|[\u3400-\u9fff]")


def _self_encode(tok: oasr_tok.Tokenizer, text: str) -> list[int]:
    """A recogniser-like hypothesis for a kind that encodes itself (funasr_char): CJK
    characters and English words, no punctuation (Paraformer emits none). A chunk the
    vocabulary cannot spell is left out rather than failing the benchmark."""
    ids: list[int] = []
    for chunk in _CHUNK.findall(text):
        try:
            ids.extend(tok.encode(chunk.lower()))
        except oasr_tok.TokenizerError:
            continue
    return ids


@cache
def period(label: str) -> tuple[int, ...]:
    """The case's passage ids: one period of every hypothesis the benchmarks feed."""
    case = BY_LABEL[label]
    text = " ".join(PASSAGES[case.passages])
    how, path = case.encoder
    if how == "tokenizers":
        ids = hf_runtime(path).encode(text, add_special_tokens=False).ids
    elif how == "sentencepiece":
        ids = sp_runtime(path).encode(text)
    elif how == "encode":
        ids = tokenizer(label).encode(text)
    else:
        ids = _self_encode(tokenizer(label), text)
    if not ids:
        raise RuntimeError(f"{label}: the passages encoded to no ids")
    return tuple(ids)


def hypothesis(label: str, n: int) -> list[int]:
    """n realistic ids: the passage ids repeated to length."""
    p = list(period(label))
    return (p * (n // len(p) + 1))[:n]
