"""An example plug-in kind, written as a third-party package would write one (the kind
docs/architecture.md § Adding a kind walks through): a "letters" table.

Its file is ``letters.txt``: a first line ``# oasr-letters`` that says what it is, then one
symbol per line, the id being the line's index among them. ``<blank>`` is the CTC blank (a
special id, rendered as nothing); ``|`` is the word delimiter (rendered as a space); every
other symbol renders as itself. The rendering is context-free, so the kind gets the compiled
constant-cost engine by building a PieceTable; its `decode` is the plain statement of the rules
and the contract suite (tests/cases/letters.py) checks the engine against it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from oasr_tok.kinds.api import FLAG_SKIP, KindRecord, PieceTable, TableMethods, Tokenizer, TokenizerSpec

MAGIC = "# oasr-letters"
FILE_NAME = "letters.txt"


def read_letters(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    if not lines or lines[0] != MAGIC:
        raise ValueError(f"{path}: not a letters table (its first line is not {MAGIC!r})")
    return [line for line in lines[1:] if line]


class LettersTokenizer(TableMethods, Tokenizer):
    def __init__(self, spec: TokenizerSpec) -> None:
        self.spec = spec
        self._symbols = read_letters(spec.file("letters"))
        self._blank = frozenset(i for i, s in enumerate(self._symbols) if s == "<blank>")
        pieces = ["" if i in self._blank else (" " if s == "|" else s) for i, s in enumerate(self._symbols)]
        flags = bytes(FLAG_SKIP if i in self._blank else 0 for i in range(len(pieces)))
        self._table = PieceTable(pieces, flags=flags)

    @property
    def vocab_size(self) -> int:
        return len(self._symbols)

    @property
    def special_ids(self) -> frozenset[int]:
        return self._blank

    def decode(self, ids: Sequence[int]) -> str:
        symbols = self._symbols
        return "".join(" " if symbols[i] == "|" else symbols[i] for i in self.check_ids(ids) if i not in self._blank)

    def id_to_piece(self, token_id: int) -> str:
        return self._symbols[self.check_ids([token_id])[0]]


def factory(spec: TokenizerSpec) -> LettersTokenizer:
    return LettersTokenizer(spec)


def detect(path: str) -> dict[str, str] | None:
    """A letters.txt whose first line is '# oasr-letters' (in a folder, or given itself)."""
    candidate = os.path.join(path, FILE_NAME) if os.path.isdir(path) else path
    try:
        with open(candidate, encoding="utf-8") as handle:
            first = handle.readline().rstrip("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return {"letters": candidate} if first == MAGIC else None


# The kind's record: what register_kind takes, and what an entry point names
# (`letters = "example_kind:KIND"` in the group oasr_tok.kinds). No precedence: after the built-ins.
KIND = KindRecord("letters", factory, detect)

SYMBOLS = ["<blank>", "|", *"abcdefghijklmnopqrstuvwxyz'", "é", "中", "😀"]


def write_letters(folder: str) -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, FILE_NAME)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(MAGIC + "\n" + "\n".join(SYMBOLS) + "\n")
    return path
