"""Every kind plugs into the contract suite by adding a module here that defines
``CASES: list[KindCase]``. The contract suite (oasr_tok.testing, run by tests/testing/test_every_kind.py)
discovers them all, and so do the suites that run on every kind."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

from oasr_tok import Tokenizer

#: The built-in kinds the project was made with: every one has a contract case and demo files.
#: A kind added later joins the registry without a change here (tests/house/test_adding_a_kind.py).
FIRST_KINDS = frozenset(
    {"symbol_table", "sentencepiece", "bbpe", "huggingface", "whisper", "funasr_char", "gguf", "tekken", "wav2vec2"}
    | {"wordpiece", "aggregate"}
)


@dataclass(frozen=True)
class KindCase:
    """One tokenizer the contract suite runs on.

    name: test id, "<kind>/<which file>".
    build: makes the tokenizer (called once per test session).
    interesting: ids the generated streams should use often — byte pieces, specials,
      word-boundary pieces, timestamps, ids that end or keep a leading rule...
    texts: strings whose encode() (or a case-specific id list) gives realistic streams.
    realistic: optional callable tok -> list of id lists for realistic hypotheses (used when
      the kind cannot encode, e.g. symbol tables fed with SentencePiece ids).
    reference: optional callable tok -> (ids -> str): the reference library's own decode of
      the same files, which tok.decode must equal (decode is the compiled join for several
      kinds, so the contract suite needs an oracle outside the package); reference_note says
      why a case has none and which test compares the kind with its reference instead.
    """

    name: str
    build: Callable[[], Tokenizer]
    interesting: Callable[[Tokenizer], list[int]] = lambda tok: []
    texts: tuple[str, ...] = ()
    realistic: Callable[[Tokenizer], list[list[int]]] | None = None
    extra: dict = field(default_factory=dict)
    reference: Callable[[Tokenizer], Callable[[list[int]], str]] | None = None
    reference_note: str = ""

    def tokenizer(self) -> Tokenizer:
        return _built(self)

    def inputs(self) -> tuple[Tokenizer, list[int], list[list[int]]]:
        """The tokenizer, its interesting ids and realistic streams, computed once per case
        (shared between tests: do not mutate them)."""
        return _inputs(self)

    def __hash__(self) -> int:
        return hash(self.name)


def vocabulary(tok: Tokenizer) -> list[str]:
    """Every id's piece, through the public id_to_piece (what tests index by piece)."""
    return [tok.id_to_piece(i) for i in range(tok.vocab_size)]


@functools.cache
def _built(case: KindCase) -> Tokenizer:
    return case.build()


@functools.cache
def _inputs(case: KindCase) -> tuple[Tokenizer, list[int], list[list[int]]]:
    tok = case.tokenizer()
    if case.realistic is not None:
        realistic = case.realistic(tok)
    elif tok.supports_encode:
        realistic = [tok.encode(text) for text in case.texts]
    else:
        realistic = []
    return tok, case.interesting(tok), realistic


def all_cases() -> list[KindCase]:
    cases: list[KindCase] = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        cases.extend(importlib.import_module(f"{__name__}.{module.name}").CASES)
    return cases


# Shared text samples in several scripts, for cases that can encode.
MULTISCRIPT = (
    "the quick brown fox jumps over the lazy dog",
    "I'll tell you: don't stop, it's fine.",
    "今天天气很好，我们去公园散步吧。",
    "東京は晴れです。カタカナとひらがな",
    "สวัสดีครับ ยินดีต้อนรับ",
    "مرحبا بالعالم",
    "emoji 😀🎉👍🏽 and café naïve résumé",
    "hello 世界 mixed 中英文 text 123 4.5%",
)
