"""wordpiece cases: the project's BERT vocab.txt files (uncased and cased), built as
`tokenizers`' BertWordPieceTokenizer."""

from __future__ import annotations

from oasr_tok import TokenizerSpec, build_tokenizer

from cases import MULTISCRIPT, KindCase
from paths import own


def _build(name: str, options: dict):
    return lambda: build_tokenizer(TokenizerSpec("wordpiece", {"vocab": own(f"wordpiece/{name}/vocab.txt")}, options))


def _interesting(tok) -> list[int]:
    backend = tok.backend
    found = [
        backend.token_to_id(t) for t in (".", ",", "?", "!", "'", "s", "t", "m", "n", "do", "not", "##s", "##t", "##n")
    ]
    return [i for i in found if i is not None] + sorted(tok.special_ids) + [tok.vocab_size - 1]


_REFERENCE_NOTE = "tests/kinds/test_wordpiece.py compares with the tokenizers WordPiece decoder on the same vocabulary, its options mapped per case"


CASES = [
    KindCase(
        "wordpiece/uncased",
        _build("uncased", {}),
        interesting=_interesting,
        texts=MULTISCRIPT,
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "wordpiece/cased",
        _build("cased", {"lowercase": False}),
        interesting=_interesting,
        texts=MULTISCRIPT,
        reference_note=_REFERENCE_NOTE,
    ),
]
