"""Mistakes a type checker must catch in a user's program: tests/house/test_typing.py runs mypy on
this file and expects exactly the error code written at the end of each marked line."""

from __future__ import annotations

from typing import Any

import oasr_tok


def mistakes(tok: oasr_tok.Tokenizer, ids: list[int]) -> None:
    tok.decode("hello")  # E: arg-type
    size: str = tok.vocab_size  # E: assignment
    state: list[str] = []
    tok.decode_incremental(ids, state)  # E: arg-type
    tok.token_pieces(ids)[0] + 1  # E: operator
    tok.word_timings(ids, "0 1 2")  # E: arg-type
    tok.word_timings(ids, [0.0] * len(ids))[0].start.upper()  # E: attr-defined
    oasr_tok.Words([1, 2])  # E: list-item
    committed, partial, words = tok.decode_hypothesis(ids, {})  # E: misc
    fresh: dict[str, Any] = {}
    text, partial, words = tok.decode_hypothesis(ids, fresh, times=[0.0] * len(ids))
    words[0].text.append("x")  # E: attr-defined
    tok.special_tokens.bos_id + 1  # E: operator
    oasr_tok.collapse_ctc([0, 1, 1], "0")  # E: call-overload
    oasr_tok.TokenizerSpec(kind=1)  # E: arg-type
    oasr_tok.KindRecord("shout", oasr_tok.build_tokenizer, precedence="5")  # E: arg-type
    oasr_tok.register_kind("shout")  # E: arg-type
    print(size, committed, partial, text)
