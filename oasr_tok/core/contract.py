"""The contract every tokenizer kind implements: the three promises and their reference
implementation (docs/decoding.md).

1. ``"".join(tok.token_pieces(ids)) == tok.decode(ids)``, one piece per id, "" for special ids.
2. Feeding any split of ``ids`` through ``decode_incremental`` keeps ``state["text"] ==
   tok.decode(ids so far)``; the deltas plus the ``final=True`` flush concatenate to the decode.
3. No retraction: an emitted delta is a prefix of the decode of every continuation.

A kind provides ``vocab_size``, ``special_ids`` and ``decode``; the defaults here re-render the
whole prefix (Θ(n²) in tokens) and kinds override them for speed, never for behaviour. The
public ``oasr_tok.Tokenizer`` (tokenizer.py) is this contract with the streaming driver, the
prompt side, timed output and pickling by value added, each from the module that owns it.
"""

from __future__ import annotations

import abc
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._engine.ids import batch_rows, check_ids
from .._engine.revisions import use_reference_decode
from .._engine.stream import Stream, feed_for
from .._engine.textbuf import check_owner, commit_text, table_tag
from ..errors import AssetError, StreamStateError, stream_closed_error
from .identity import built_from, fingerprint

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

__all__ = ["TokenizerContract"]


class TokenizerContract(abc.ABC):
    """Turns recogniser token ids into text: the part of `oasr_tok.Tokenizer` every kind must
    get right (decode, streaming, token pieces), with reference implementations of the last two."""

    @property
    def spec(self) -> TokenizerSpec | None:
        """The spec this tokenizer was built from (set by build_tokenizer / from_spec; setting
        it notes its files and counts the tokenizer among this process's: identity.py)."""
        spec: TokenizerSpec | None = self.__dict__.get("_oasr_spec")
        return spec

    @spec.setter
    def spec(self, spec: TokenizerSpec | None) -> None:
        built_from(self, spec)

    @property
    def fingerprint(self) -> str:
        """What names this tokenizer in every process that loads the same files: the SHA-256 of
        its kind, options and files' names and bytes (never their paths). Computed the first
        time it is asked for, then kept (docs/scale.md § Streams that travel).

        Example:
            >>> from oasr_tok.demo import DATA
            >>> import oasr_tok
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> tok.fingerprint == oasr_tok.load(DATA / "sentencepiece").fingerprint
            True
            >>> tok.fingerprint != tok.with_specials().fingerprint
            True
        """
        return fingerprint(self)

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

    def check_ids(self, ids: Sequence[int]) -> list[int]:
        """`ids` as a list of ints in range; InvalidIdError naming the first bad one."""
        return check_ids(ids, self.vocab_size)

    def settled_length(self, ids: list[int], text: str) -> int:
        """How much of `text` (the decode of `ids`) no continuation can change. The default
        says all of it: right for kinds whose rendering only ever appends. Kinds that may
        rewrite the end of their text override this (or decode_incremental)."""
        return len(text)

    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any] | Stream, final: bool = False) -> str:
        """Feed `new_ids` to the stream whose state is `state` (a dict the caller owns, {} at
        the start, or a Stream new_stream made) and return the text that is now settled.
        state["text"] is the decode of all ids so far. final=True flushes what was held back
        and closes the stream. A failed call leaves `state` as it was.

        Args:
            new_ids: the ids that arrived (a list, a NumPy array, any integer buffer).
            state: {} at the start of a stream (then the same dict each call), or a Stream.
            final: flush what was held back (a character not finished yet) and close.

        Returns:
            The text these ids settled: never taken back; the deltas plus the flush are
            decode(all ids).

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> ids = tok.encode("the café opens at 9 😀")
            >>> state = {}
            >>> [tok.decode_incremental(chunk, state) for chunk in (ids[:3], ids[3:9], ids[9:])]
            ['the café o', 'pens at 9 ', '😀']
            >>> tok.decode_incremental([], state, final=True), state["text"] == tok.decode(ids)
            ('', True)
        """
        if type(state) is Stream:  # a stream new_stream made (_engine/stream.pyx)
            return feed_for(self, state, new_ids, final)
        new = self.check_ids(new_ids)
        tag = self._stream_tag()
        check_owner(state, tag)
        closed = state.get("_closed", False)
        old_ids = state.get("ids", [])
        old_text = state.get("text", "")
        tail = state.get("_tail", 0)
        if (
            type(closed) is not bool
            or type(old_ids) is not list
            or type(old_text) is not str
            or type(tail) is not int
            or not 0 <= tail <= len(old_text)
            or ("_tok" in state and "ids" not in state)
        ):
            raise StreamStateError(f"this stream state is not a {type(self).__name__} stream state; start from {{}}")
        old_ids = self.check_ids(old_ids)
        # The default keeps every id (it is the quadratic reference, not the fast path), so the
        # whole state can be checked: its text must be the decode of its ids.
        if "text" in state and old_text != self.decode(old_ids):
            raise StreamStateError("this stream state's text is not the decode of its ids; start from {}")
        if closed:
            if new:
                raise stream_closed_error()
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

    def _stream_tag(self) -> int:
        """What this tokenizer records in its stream states (see textbuf.h): made from its
        fingerprint (its kind, options and file contents, not their paths), so an equal
        tokenizer rebuilt from the same files anywhere (a worker's copy) continues a stream and
        any other refuses it. Without a readable spec, this instance alone."""
        tag = self.__dict__.get("_oasr_stream_tag")
        if tag is None:
            described = None
            if self.spec is not None:
                try:
                    described = fingerprint(self)
                except (AssetError, OSError, ValueError, TypeError):  # files gone, changed or too big
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

    def decode_batch(
        self, batch: Sequence[Sequence[int]] | Any, lengths: Sequence[int] | None = None, pad_id: int | None = None
    ) -> list[str]:
        """decode() for each hypothesis of an n-best list, or each row of a padded 2-D batch:
        `lengths` cuts row i to its first lengths[i] ids, then `pad_id` strips each row's
        trailing run of that id (see docs/decoding.md § Id inputs)."""
        return [self.decode(ids) for ids in batch_rows(batch, lengths, pad_id)]

    def __repr__(self) -> str:
        kind = self.spec.kind if self.spec is not None else type(self).__name__
        return f"<{type(self).__name__} kind={kind!r} vocab_size={self.vocab_size}>"


# The revisions engine streams a kind that keeps this reference decode_incremental differently
# (it reads all of state["text"]); it learns which function that is here, not by importing up.
use_reference_decode(TokenizerContract.decode_incremental)
