"""The streaming driver: what a server calls on top of a kind's decode_incremental.

`Streaming` is the part of `oasr_tok.Tokenizer` that holds it: decode_hypothesis (a hypothesis
that the recogniser may rewrite; revisions.py) and, for many streams at once, the server loop
(docs/decoding.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from .contract import TokenizerContract
from .revisions import decode_hypothesis as _decode_hypothesis  # here, not per call: that import cost ~2 us a call

if TYPE_CHECKING:
    from .words import Word

__all__ = ["Streaming"]


class Streaming(TokenizerContract):
    """Streams beyond one decode_incremental call: revising hypotheses and the server loop."""

    if TYPE_CHECKING:
        # Without `times` a pair, with them a triple: the overloads tell a type checker which.
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            times: None = None,
        ) -> tuple[str, str]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            *,
            times: Sequence[float],
        ) -> tuple[str, str, list[Word]]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool,
            agreement: int,
            times: Sequence[float],
        ) -> tuple[str, str, list[Word]]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            times: Sequence[float] | None = None,
        ) -> tuple[str, str] | tuple[str, str, list[Word]]: ...
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            times: Sequence[float] | None = None,
        ) -> tuple[str, str] | tuple[str, str, list[Word]]:
            """Stream a hypothesis that the recogniser may rewrite: give its whole current best
            hypothesis each call; get `(committed_delta, partial)`. Committed text is never
            retracted and grows by whole words once the last `agreement` hypotheses agree on their
            ids; `partial` is the rest of this hypothesis's transcript. state["committed"] is all
            committed text; final=True commits everything. With `times` (a start per hypothesis
            id) the committed Words come third. docs/decoding.md § Revisions."""
            return _decode_hypothesis(self, hypothesis_ids, state, final, agreement, times)
    else:
        # The compiled function is the method itself (it binds as one): a Python frame that
        # only passed the arguments on cost a twentieth of a call.
        decode_hypothesis = _decode_hypothesis
