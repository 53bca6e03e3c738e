"""bbpe cases: the project's icefall byte-level BPE model (fixtures/make_bbpe.py trains it with
SentencePiece on icefall's byte alphabet), with icefall's default special ids and with none (so
<blk>, <sos/eos> and <unk>'s " ⁇ " reach the byte stream mid-stream)."""

from __future__ import annotations

import functools

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import MULTISCRIPT, KindCase
from paths import own


def _build(options: dict):
    return lambda: build_tokenizer(TokenizerSpec("bbpe", {"model": own("bbpe/bbpe.model")}, options))


@functools.cache
def interesting(tok) -> list[int]:
    """Pieces that are lone lead or continuation bytes (a character split across tokens, or
    never completed), pieces with a leading space, the specials and the vocabulary edges."""
    from oasr_tok.kinds.bbpe import BYTE_TO_CHAR

    lone = {BYTE_TO_CHAR[b] for b in (0xE4, 0xB8, 0xAD, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0xFF, 0xED, 0xA0)}
    pieces = [tok.id_to_piece(i) for i in range(tok.vocab_size)]
    ids = [i for i, p in enumerate(pieces) if p in lone or p.lstrip("\u2581") in lone]
    ids += [i for i, p in enumerate(pieces) if p.startswith("\u2581")][:6]
    return sorted(set(ids + [0, 1, 2, 3, tok.vocab_size - 1]))


TEXTS = (*MULTISCRIPT, "今 天 天 气 很 好", "我 们 用 PYTHON 写 代 码", "🎉 👍 😀 𠀀 𝐀")

_REFERENCE_NOTE = "icefall's byte_utils.py is not a package: tests/kinds/test_bbpe.py compares with expected values fixtures/make_bbpe.py made with icefall's own smart_byte_decode, loaded by path"


CASES = [
    KindCase("bbpe/bbpe.model", _build({}), interesting=interesting, texts=TEXTS, reference_note=_REFERENCE_NOTE),
    KindCase(
        "bbpe/bbpe.model[no specials]",
        _build({"special_ids": []}),
        interesting=interesting,
        texts=TEXTS,
        reference_note=_REFERENCE_NOTE,
    ),
]
