"""The Tokenizer contract every kind implements.

Three promises, for every kind and every input (see docs/decoding.md):

1. ``"".join(tok.token_pieces(ids)) == tok.decode(ids)``, one piece per id, "" for special ids.
2. Feeding any split of ``ids`` through ``decode_incremental`` keeps ``state["text"] ==
   tok.decode(ids so far)``; the deltas plus the ``final=True`` flush concatenate to the decode.
3. No retraction: an emitted delta is a prefix of the decode of every continuation.

The defaults here re-render the whole prefix (Θ(n²) in tokens); kinds override them for speed,
never for behaviour.
"""
from __future__ import annotations

import abc
import json
import os
import time
from typing import TYPE_CHECKING, Any, Sequence

from ._ids import check_ids
from ._textbuf import check_owner, commit_text, table_tag
from .errors import EncodeNotSupportedError, PiecesNotSupportedError, StreamStateError

if TYPE_CHECKING:
    from .spec import TokenizerSpec
    from .words import Word

__all__ = ["Tokenizer"]


class Tokenizer(abc.ABC):
    """Turns recogniser token ids into text (whole, streamed, per token, as timed words) and,
    where `supports_encode` is true, text into ids."""

    #: The spec this tokenizer was built from (set by build_tokenizer / from_spec).
    spec: "TokenizerSpec | None" = None
    #: Whether encode() works. Test this, never hasattr(tok, "encode").
    supports_encode: bool = False

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of valid ids: 0 ... vocab_size - 1."""

    @property
    @abc.abstractmethod
    def special_ids(self) -> frozenset[int]:
        """Exactly the ids decode() strips."""

    @abc.abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """The transcript of `ids`."""

    def encode(self, text: str) -> list[int]:
        """Ids for `text` (prompts, hotwords). Decode-only kinds raise EncodeNotSupportedError."""
        raise EncodeNotSupportedError(
            f"{type(self).__name__} is decode-only: it cannot turn text into ids "
            "(check tok.supports_encode before calling encode)"
        )

    # -- vocabulary pieces: an optional capability -------------------------------------------

    def id_to_piece(self, token_id: int) -> str:
        """The vocabulary's own spelling of `token_id` (the table symbol, SentencePiece piece,
        `tokenizers` token string or token-list entry: "▁the", "Ġthe", "<0xE4>", "and@@"), not
        its rendered text. Used by the NeMo-style adapter and `describe`. Kinds with a piece
        vocabulary override this; the default raises PiecesNotSupportedError."""
        raise PiecesNotSupportedError(
            f"{type(self).__name__} does not spell ids as vocabulary pieces (it has no id_to_piece)"
        )

    # -- helpers kinds share ----------------------------------------------------------------

    def check_ids(self, ids: Sequence[int]) -> list[int]:
        """`ids` as a list of ints in range; InvalidIdError naming the first bad one."""
        return check_ids(ids, self.vocab_size)

    def settled_length(self, ids: list[int], text: str) -> int:
        """How much of `text` (the decode of `ids`) no continuation can change. The default
        says all of it: right for kinds whose rendering only ever appends. Kinds that may
        rewrite the end of their text override this (or decode_incremental)."""
        return len(text)

    # -- streaming ---------------------------------------------------------------------------

    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str:
        """Feed `new_ids` to the stream whose state is `state` (a dict the caller owns, {} at
        the start) and return the text that is now settled. state["text"] is the decode of all
        ids so far. final=True flushes what was held back and closes the stream.
        A failed call leaves `state` as it was."""
        new = self.check_ids(new_ids)
        tag = self._stream_tag()
        check_owner(state, tag)
        closed = state.get("_closed", False)
        old_ids = state.get("ids", [])
        old_text = state.get("text", "")
        tail = state.get("_tail", 0)
        if (type(closed) is not bool or type(old_ids) is not list or type(old_text) is not str
                or type(tail) is not int or not 0 <= tail <= len(old_text)
                or ("_tok" in state and "ids" not in state)):
            raise StreamStateError(f"this stream state is not a {type(self).__name__} stream state; start from {{}}")
        old_ids = self.check_ids(old_ids)
        # The default keeps every id (it is the quadratic reference, not the fast path), so the
        # whole state can be checked: its text must be the decode of its ids.
        if "text" in state and old_text != self.decode(old_ids):
            raise StreamStateError("this stream state's text is not the decode of its ids; start from {}")
        if closed:
            if new:
                raise StreamStateError("this stream was closed with final=True; start a new state ({}) to decode more")
            return ""
        ids = old_ids + new if new else old_ids
        text = self.decode(ids) if (new or "text" not in state) else old_text
        emitted = len(old_text) - tail
        if text[:emitted] != old_text[:emitted]:
            raise StreamStateError(
                f"{type(self).__name__}.settled_length let out text that a later token changed; "
                "this is a bug in the kind"
            )
        settled = len(text) if final else max(emitted, min(len(text), self.settled_length(ids, text)))
        delta = text[emitted:settled]
        commit_text(state, delta, text[settled:], tag)
        state["ids"] = ids
        state["_closed"] = bool(final)
        return delta

    def decode_hypothesis(
        self,
        hypothesis_ids: Sequence[int],
        state: dict[str, Any],
        final: bool = False,
        agreement: int = 2,
        times: Sequence[float] | None = None,
    ) -> "tuple[str, str] | tuple[str, str, list[Word]]":
        """Stream a hypothesis that the recogniser may rewrite: give its whole current best
        hypothesis each call; get `(committed_delta, partial)`. Committed text is never
        retracted and grows by whole words once the last `agreement` hypotheses agree on their
        ids; `partial` is the rest of this hypothesis's transcript. state["committed"] is all
        committed text; final=True commits everything. With `times` (a start per hypothesis
        id) the committed Words come third. docs/decoding.md § Revisions."""
        from .revisions import decode_hypothesis

        return decode_hypothesis(self, hypothesis_ids, state, final=final, agreement=agreement, times=times)

    def _stream_tag(self) -> int:
        """What this tokenizer records in its stream states (see _textbuf.h): a fingerprint of
        its kind and spec, so an equal tokenizer rebuilt from the same files continues a
        stream and any other refuses it. Without a spec, this instance alone."""
        tag = self.__dict__.get("_oasr_stream_tag")
        if tag is None:
            try:
                described = json.dumps(self.spec.to_dict(), sort_keys=True) if self.spec is not None else None
            except (TypeError, ValueError):
                described = None
            if described is None:
                described = f"instance {id(self)} {os.getpid()} {time.monotonic_ns()}"
            tag = table_tag([type(self).__module__, type(self).__qualname__, described])
            self.__dict__["_oasr_stream_tag"] = tag
        return tag

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        """One string per id, concatenating to decode(ids): what each token settled when
        streamed one at a time. Text held back at the end goes on the last non-special token."""
        ids = self.check_ids(ids)
        state: dict[str, Any] = {}
        pieces = [self.decode_incremental([i], state) for i in ids]
        rest = self.decode_incremental([], state, final=True)
        if rest:
            special = self.special_ids
            last = max((k for k, i in enumerate(ids) if i not in special), default=len(ids) - 1)
            pieces[last] += rest
        return pieces

    # -- convenience -------------------------------------------------------------------------

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """decode() for each hypothesis of an n-best list."""
        return [self.decode(ids) for ids in batch]

    def word_timings(self, ids: Sequence[int], starts: Sequence[float], ends: Sequence[float] | None = None) -> list["Word"]:
        """Timed words cut out of the transcript; see docs/decoding.md § Word timings."""
        from .words import group_words

        return group_words(self.token_pieces(ids), starts, ends)

    # -- pickling: by value (the files travel) or by spec (paths only); oasr_tok/pickling.py ---

    #: "value": a pickle carries the spec's files (for workers without the driver's file
    #: system); "spec": only the spec's paths (a shared file system). docs/scale.md.
    pickle_mode: str = "value"

    def __reduce__(self):  # type: ignore[override]
        if self.spec is None:
            raise TypeError(f"{type(self).__name__} was not built from a TokenizerSpec and cannot be pickled")
        from .pickling import MODES, reduce_by_value
        from .registry import build_tokenizer

        if self.pickle_mode not in MODES:
            raise TypeError(f"pickle_mode must be one of {MODES}, got {self.pickle_mode!r}")
        if self.pickle_mode == "spec":
            return (build_tokenizer, (self.spec,))
        return reduce_by_value(self)

    def __repr__(self) -> str:
        kind = self.spec.kind if self.spec is not None else type(self).__name__
        return f"<{type(self).__name__} kind={kind!r} vocab_size={self.vocab_size}>"
