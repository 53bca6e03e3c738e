"""The example plug-in kind (tests/example_kind.py) in the contract suite, registered as a
third-party package would register it."""

from __future__ import annotations

import tempfile

import oasr_tok

import example_kind
from cases import KindCase


def _build():
    folder = tempfile.mkdtemp(prefix="oasr_tok-letters-")
    example_kind.write_letters(folder)
    oasr_tok.register_kind(example_kind.KIND, replace=True)
    return oasr_tok.load(folder)


def _realistic(tok) -> list[list[int]]:
    """What a CTC model emits through this table: words of letters, blanks between frames,
    the delimiter between words."""
    ids = {s: i for i, s in enumerate(example_kind.SYMBOLS)}
    streams = []
    for sentence in ("the café opens at nine", "中 and 😀 too", "it's late"):
        stream = []
        for k, symbol in enumerate(sentence):
            stream.append(ids["|"] if symbol == " " else ids[symbol])
            if k % 3 == 0:
                stream.append(ids["<blank>"])
        streams.append(stream)
    return streams


def _reference(tok):
    """The letters table's definition, written apart from the kind: `<blank>` renders nothing,
    `|` a space, every other symbol itself."""
    symbols = example_kind.SYMBOLS
    return lambda ids: "".join("" if symbols[i] == "<blank>" else " " if symbols[i] == "|" else symbols[i] for i in ids)


CASES = [
    KindCase(
        "letters/example-plugin",
        _build,
        interesting=lambda tok: [0, 1, 2, tok.vocab_size - 1],
        realistic=_realistic,
        reference=_reference,
    )
]
