"""sentencepiece cases: every real model in ../shared/fixtures/sentencepiece/, every model the
project trains (fixtures/sentencepiece/), and two with no special ids so that <unk>, <s>,
</s> and <pad> reach the renderer mid-stream."""

from __future__ import annotations

import functools

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import MULTISCRIPT, KindCase
from paths import own, shared

SHARED_MODELS = [
    "icefall-librispeech-bpe500.model",
    "mistral-v1.model",
    "sherpa-zh-en-mix.model",
    "wenet-librispeech-unigram5000.model",
]
OWN_MODELS = [  # the denormalizer fixture is refused by the kind (tested in test_sentencepiece.py)
    "bpe-bytefallback.model",
    "unigram-unksurface.model",
    "bpe-keepspaces.model",
    "unigram-nodummy.model",
    "bpe-nodummy-emptyunk.model",
]

# Byte values that make the UTF-8 assembly interesting: complete 2-, 3- and 4-byte characters
# (é, 中, 😀), lone lead and continuation bytes, overlong leads, a surrogate prefix, a prefix
# beyond U+10FFFF, bytes that are never valid, ASCII and space.
BYTES = [
    0xC3,
    0xA9,
    0xE4,
    0xB8,
    0xAD,
    0xF0,
    0x9F,
    0x98,
    0x80,
    0xFF,
    0xC0,
    0xE0,
    0xED,
    0xA0,
    0xF4,
    0x90,
    0xF5,
    0xEF,
    0xBF,
    0xBD,
    0x41,
    0x20,
    0x00,
]


def _path(name: str) -> str:
    return shared(f"sentencepiece/{name}") if name in SHARED_MODELS else own(f"sentencepiece/{name}")


def _build(name: str, options: dict | None = None):
    return lambda: build_tokenizer(TokenizerSpec("sentencepiece", {"model": _path(name)}, options or {}))


@functools.cache  # the suite asks once per example; a 32k-piece scan is slow
def interesting(tok) -> list[int]:
    """Byte pieces, control and unknown ids, whitespace-only pieces, pieces that start with
    `▁`, and the vocabulary edges: what the leading rule and the byte runs turn on."""
    sp = tok.processor
    size = sp.get_piece_size()
    ids = [sp.piece_to_id(f"<0x{value:02X}>") for value in BYTES]
    ids = [i for i in ids if sp.is_byte(i)]
    ids += [i for i in range(size) if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i)]
    spaces = [i for i in range(size) if set(sp.id_to_piece(i)) == {"\u2581"}]
    words = [i for i in range(size) if sp.id_to_piece(i).startswith("\u2581")][:6]
    plain = [i for i in range(size) if not sp.id_to_piece(i).startswith("\u2581") and not sp.is_byte(i)][-4:]
    return sorted(set(ids + spaces + words + plain + [0, size - 1]))


def reference(tok):
    """sentencepiece's own decode of the ids left after stripping special_ids (DESIGN)."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=tok.spec.file("model"))
    special = tok.special_ids
    return lambda ids: sp.decode([i for i in ids if i not in special])


CASES = [
    KindCase(f"sentencepiece/{name}", _build(name), interesting=interesting, texts=MULTISCRIPT, reference=reference)
    for name in SHARED_MODELS + OWN_MODELS
] + [
    KindCase(
        f"sentencepiece/{name}[no specials]",
        _build(name, {"special_ids": []}),
        interesting=interesting,
        texts=MULTISCRIPT,
        reference=reference,
    )
    for name in ("mistral-v1.model", "bpe-bytefallback.model", "bpe-nodummy-emptyunk.model")
]
