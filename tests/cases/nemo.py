"""NeMo archive cases (fixtures/nemo/*.nemo), built through oasr_tok.load: the aggregate kind
(Canary-style: special-token model + English + Spanish), and sentencepiece / wordpiece /
symbol_table on archive members. Realistic streams: a Canary-2 prompt, timestamped words in
two languages, and the end of text."""

from __future__ import annotations

import oasr_tok

from cases import KindCase
from paths import own


def _load(name: str):
    return lambda: oasr_tok.load(own(f"nemo/{name}.nemo"))


def _canary_interesting(tok) -> list[int]:
    picks = ["<|endoftext|>", "<pad>", "<|0|>", "<|7|>", "<|en|>"]
    found = [tok.canary_tokens[p] for p in picks if p in tok.canary_tokens]
    return (
        found
        + [tok.offsets["en"], tok.offsets["es"], tok.offsets["es"] - 1, tok.vocab_size - 1]
        + tok.encode_language("hello", "en")
        + tok.encode_language("niño", "es")
    )


def _canary_realistic(tok) -> list[list[int]]:
    stamp = lambda n: tok.canary_tokens[f"<|{n}|>"]
    prompt = tok.canary_prompt("en", "es", timestamps=True)
    return [
        prompt + [stamp(1)] + tok.encode_language("hola mundo", "es") + [stamp(9), tok.canary_tokens["<|endoftext|>"]],
        tok.encode_language("the quick brown fox", "en") + tok.encode_language("el perro", "es"),
    ]


def _plain_interesting(tok) -> list[int]:
    return sorted(tok.special_ids)[:4] + [0, 1, tok.vocab_size - 1]


def _char_realistic(tok) -> list[list[int]]:
    labels = [tok.id_to_piece(i) for i in range(tok.vocab_size)]
    index = {p: i for i, p in enumerate(labels)}
    return [[index.get(c, index.get("\u2581", 0)) for c in " hello world it's fine "]]


_REFERENCE_NOTE = "NeMo is not installed (its wheel is unpacked for the peers tier only): tests/peers/test_nemo_canary.py and test_nemo_sentencepiece.py compare with NeMo 3.0's own classes"


CASES = [
    KindCase(
        "aggregate/canary.nemo",
        _load("canary"),
        interesting=_canary_interesting,
        realistic=_canary_realistic,
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "sentencepiece/bpe.nemo",
        _load("bpe"),
        interesting=_plain_interesting,
        texts=("hello world speech recognition", "the quick brown fox"),
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "wordpiece/wpe.nemo",
        _load("wpe"),
        interesting=_plain_interesting,
        texts=("hello world speech recognition", "good morning, canary!"),
        reference_note=_REFERENCE_NOTE,
    ),
    KindCase(
        "symbol_table/char.nemo",
        _load("char"),
        interesting=_plain_interesting,
        realistic=_char_realistic,
        reference_note=_REFERENCE_NOTE,
    ),
]
