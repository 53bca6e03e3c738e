"""gguf cases: the two shared llama.cpp vocabularies (llama-spm: SPM with byte tokens;
qwen2: byte-level BPE with user-defined fillers) and the project's own small GGUFs (bert WPM,
gemma4 BPE with escaped whitespace and byte tokens, gpt2 with clean_spaces on, t5 UGM, and the
gpt2 one under a Phi-3 name, whose special tokens strip the whitespace after them in encode).

Realistic streams are llama.cpp's golden ids (`*.gguf.out`) where they exist; interesting ids
are the ones with a rule of their own: byte tokens, specials (BOS first keeps the space),
user-defined tokens, short pieces with a leading space, and the punctuation and apostrophe
pieces clean_spaces rewrites across tokens."""

from __future__ import annotations

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import MULTISCRIPT, KindCase
from paths import own, shared

SHARED = ("ggml-vocab-llama-spm", "ggml-vocab-qwen2")
OWN = ("bert-wpm", "gemma4-bpe", "gpt2-cleanspaces", "t5-ugm", "phi3-rstrip")
CLEANUP = {b"?", b"!", b".", b",", b"'", b"s", b"m", b"re", b"ve", b"e", b"r", b"v", b"t", b"d", b" ", b" '", b"'s"}


def _path(name: str) -> str:
    return shared(f"gguf/{name}.gguf") if name in SHARED else own(f"gguf/{name}.gguf")


def build(name: str):
    return lambda: build_tokenizer(TokenizerSpec("gguf", {"gguf": _path(name)}))


def interesting(tok) -> list[int]:
    pieces = tok._pieces
    byte_like = [i for i, p in enumerate(pieces) if len(p) == 1 and p[0] >= 0x80][:40]
    cleanup = [i for i, p in enumerate(pieces) if p in CLEANUP or p.lstrip(b" ") in CLEANUP][:40]
    spaced = [i for i, p in enumerate(pieces) if p[:1] == b" " and len(p) <= 4][:20]
    user = [i for i, a in enumerate(tok.vocab.attrs) if a & 16][:8]
    special = sorted(tok.special_ids)
    return byte_like + cleanup + spaced + user + special[:6] + special[-3:] + [0, tok.vocab_size - 1]


def realistic(name: str):
    def streams(tok) -> list[list[int]]:
        if name in SHARED:
            with open(shared(f"gguf/{name}.gguf.out"), encoding="utf-8") as handle:
                return [[int(x) for x in line.split()] for line in handle if line.strip()]
        return [tok.encode(text) for text in MULTISCRIPT] if tok.supports_encode else []

    return streams


_REFERENCE_NOTE = "llama.cpp is not installed (never built in CI): tests/kinds/test_gguf.py compares with llama.cpp's detokenize goldens (fixtures/make_gguf_expected.py) and tests/llama_reference.py's line-by-line port"


CASES = [
    KindCase(
        f"gguf/{name}", build(name), interesting=interesting, realistic=realistic(name), reference_note=_REFERENCE_NOTE
    )
    for name in SHARED + OWN
]
