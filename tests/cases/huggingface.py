"""huggingface cases: every tokenizer.json in ../shared/fixtures/huggingface (Qwen3 and the
Qwen2-Audio-like pair with their tokenizer_config.json, Mistral-7B, Moonshine) and the
project's trained files (byte-level BPE, Metaspace first/always/byte-fallback, WordPiece).

Interesting ids are asked of the tokenizers runtime by token text: the byte tokens that split
中 / 😀 / é and an invalid 0xFF (byte-level alphabet or `<0xHH>` pieces), word-boundary
pieces, WordPiece continuation and clean-up pieces, specials and non-special added tokens."""

from __future__ import annotations

from oasr_tok import TokenizerSpec, build_tokenizer
from oasr_tok.kinds._bytelevel import BYTE_TO_CHAR

from cases import MULTISCRIPT, KindCase
from paths import own, shared

# 中 (E4 B8 AD), 😀 (F0 9F 98 80), é (C3 A9), an invalid byte (FF), a space, "A", a lone lead (E4).
SPLIT_BYTES = (0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0xFF, 0x20, 0x41)
CLEANUP_TEXTS = (".", ",", "?", "!", "'", "s", "m", "t", "n", "ve", "re", "do", "not", "##s", "##t", "##n")

SHARED = {
    "qwen3": lambda: {
        "tokenizer": shared("huggingface/qwen3/tokenizer.json"),
        "tokenizer_config": shared("huggingface/qwen3/tokenizer_config.json"),
    },
    "qwen2-audio-like": lambda: {
        "tokenizer": shared("huggingface/qwen2-audio-like/tokenizer.json"),
        "tokenizer_config": shared("huggingface/qwen2-audio-like/tokenizer_config.json"),
    },
    "mistral-7b": lambda: {
        "tokenizer": shared("huggingface/mistral-7b/tokenizer.json"),
        "tokenizer_config": shared("huggingface/mistral-7b/tokenizer_config.json"),
    },
    "moonshine": lambda: {"tokenizer": shared("huggingface/moonshine/tokenizer.json")},
}
OWN = (
    "bytelevel-bpe",
    "metaspace-first",
    "metaspace-always",
    "metaspace-bytefallback",
    "wordpiece-bert",
    "ctc-base-960h",
    "ctc-metaspace",
    "bpe-suffix",
)
FILES = {
    **SHARED,
    **{name: (lambda name=name: {"tokenizer": own(f"huggingface/{name}/tokenizer.json")}) for name in OWN},
}


def build(name: str):
    return lambda: build_tokenizer(TokenizerSpec("huggingface", FILES[name]()))


def reference(tok):
    """The `tokenizers` runtime of the same files (the kind's backend: built by tokenizers from
    them, the config's added tokens merged), its decode with special tokens skipped."""
    backend = tok.backend
    return lambda ids: backend.decode(ids, skip_special_tokens=True)


def interesting(tok) -> list[int]:
    backend = tok.backend
    found: list[int] = []

    def add(text: str) -> None:
        token_id = backend.token_to_id(text)
        if token_id is not None:
            found.append(token_id)

    for b in SPLIT_BYTES:
        add(BYTE_TO_CHAR[b])
        add(f"<0x{b:02X}>")
    for text in (
        "\u2581",
        "\u2581\u2581",
        "\u2581the",
        "\u2581a",
        "\u0120",
        "\u0120the",
        "Ġ",
        "ĠĠ",
        "|",
        "<pad>",
        "x|y",
        "E",
        "T",
        *CLEANUP_TEXTS,
    ):
        add(text)
    added = backend.get_added_tokens_decoder()
    found += [i for i, t in added.items() if not t.special][:6]
    found += sorted(tok.special_ids)[:3] + sorted(tok.special_ids)[-2:]
    found += [0, tok.vocab_size - 1]
    return found


CASES = [
    KindCase(f"huggingface/{name}", build(name), interesting=interesting, texts=MULTISCRIPT, reference=reference)
    for name in FILES
]
