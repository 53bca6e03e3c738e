"""The streaming driver: what a server calls on top of a kind's decode_incremental.

`Streaming` is the part of `oasr_tok.Tokenizer` that holds it: decode_hypothesis (a hypothesis
that the recogniser may rewrite; revisions.py) and, for many streams at once, the server loop
(docs/decoding.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from .._engine.batch import feed_batch
from .._engine.ids import batch_rows
from .._engine.session import Session
from .._engine.session import new_session as _new_session
from .._engine.stream import Stream
from .._engine.stream import new_stream as _new_stream
from ..errors import StreamStateError
from ..outputs.envelopes import AudioIds, Transcript, decode_envelope
from .contract import TokenizerContract
from .revisions import Revisions
from .revisions import decode_hypothesis as _decode_hypothesis  # imported once, not per call

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
            state: dict[str, Any] | Revisions,
            final: bool = False,
            agreement: int | None = None,
            times: None = None,
        ) -> tuple[str, str]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any] | Revisions,
            final: bool = False,
            agreement: int | None = None,
            *,
            times: Sequence[float],
        ) -> tuple[str, str, list[Word]]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any] | Revisions,
            final: bool,
            agreement: int | None,
            times: Sequence[float],
        ) -> tuple[str, str, list[Word]]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any] | Revisions,
            final: bool = False,
            agreement: int | None = None,
            times: Sequence[float] | None = None,
        ) -> tuple[str, str] | tuple[str, str, list[Word]]: ...
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any] | Revisions,
            final: bool = False,
            agreement: int | None = None,
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

    def new_revisions(self, agreement: int = 2) -> Revisions:
        """The state of a hypothesis stream for decode_hypothesis: its committed text in a growable
        buffer (a call costs the same at any length of committed text), revisions.committed all of
        it. docs/decoding.md § Revisions.

        Args:
            agreement: how many consecutive hypotheses must agree on ids before they commit.

        Returns:
            An oasr_tok Revisions (a read-only Mapping too: revisions["committed"]).

        Example:
            >>> from oasr_tok.demo import DATA
            >>> import oasr_tok
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> revisions = tok.new_revisions(agreement=2)
            >>> ids = tok.encode("the café opens")
            >>> tok.decode_hypothesis(ids, revisions, final=True)
            ('the café opens', '')
        """
        return Revisions(self, agreement)

    def new_session(
        self, unfixed_chunk_num: int = 2, unfixed_token_num: int = 5, envelope: str | None = None
    ) -> Session:
        """A re-decoding session (Qwen3-ASR's streaming): the text a recogniser that re-prompts
        itself with its own output has produced, rolled back before each chunk to the re-prompt
        prefix exactly as qwen-asr's `streaming_transcribe` computes it (the text so far minus its
        last k tokens, k widened while that would cut a character), at a cost that does not grow
        with the transcript. docs/decoding.md § Re-decoding sessions.

        Args:
            unfixed_chunk_num: qwen-asr's: the first chunks that are prompted with no prefix.
            unfixed_token_num: qwen-asr's k: how many tokens each later rollback drops.
            envelope: "qwen3_asr" to take the model's `language X<asr_text>` header apart (the
                session's `text` is then the words alone), or None.

        Returns:
            An oasr_tok.Session: session.rollback() before each chunk (session.prefix is then
            the prefix), session.feed(ids) with what the model generated, session.text.

        Raises:
            EncodeNotSupportedError: on a decode-only kind (a session re-encodes its text).

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "huggingface")
            >>> session = tok.new_session(unfixed_chunk_num=0, unfixed_token_num=2)
            >>> session.feed(tok.encode("the café opens at nine"))
            >>> session.rollback(), session.prefix
            (11, 'the café opens at n')
        """
        return _new_session(self, unfixed_chunk_num, unfixed_token_num, envelope)

    def new_stream(
        self,
        prefill: Sequence[int] | None = None,
        stop: Sequence[str] | None = None,
        include_stop: bool = False,
        envelope: str | AudioIds | None = None,
    ) -> Stream:
        """A stream that owns its state: feed it ids (`stream.feed(ids)`, or
        decode_incremental(ids, stream), or many streams at once with decode_incremental_batch),
        get the text they settle. docs/decoding.md § The server loop.

        Args:
            prefill: the prompt's ids. Only its tail is read (further back only as far as a rule
                of the kind needs: a ByteFallback byte run, a Whisper prompt block); the deltas
                are then the continuation: what decode(prefill + generated) adds after the part
                of decode(prefill) it keeps, a character the prompt began and the first generated
                token completed included.
            stop: stop strings. No delta holds text a later token could complete into one
                (unless include_stop); once one completes (vLLM's rule: of those ending at the
                same token, the one that ends earliest), stream.stop is a StopMatch, the output
                ends before it (after it with `include_stop`) and more ids are refused.
            include_stop: whether the output keeps the stop string.
            envelope: a format name ("qwen3_asr", "sensevoice", "whisper", "canary", "voxtral"):
                the deltas are the words alone and stream.envelope the fields said so far.
                "audio" (or an AudioIds): text and audio-codec ids in one generation; the deltas
                are the text alone, stream.take_audio() the audio ids (docs/envelopes.md § audio).

        Returns:
            An oasr_tok.Stream (a read-only Mapping too: stream["text"], stream["stop"]).

        Example:
            >>> from oasr_tok.demo import DATA
            >>> import oasr_tok
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> prompt = tok.encode("the café")
            >>> stream = tok.new_stream(prefill=prompt)
            >>> "".join(stream.feed([i]) for i in tok.encode(" opens")) + stream.feed([], final=True)
            ' opens'
        """
        return _new_stream(self, prefill, stop, include_stop, envelope)

    def decode_envelope(self, ids: Sequence[int], envelope: str | AudioIds) -> Transcript:
        """The ids' text with the envelope a speech model writes around it taken apart
        (`envelope`: "qwen3_asr", "sensevoice", "whisper", "canary", "voxtral", or one
        registered with oasr_tok.outputs.envelopes.register_envelope): a Transcript whose `text` is
        the words alone and whose fields say what the envelope said. A stream made with
        new_stream(envelope=...) gives the same words delta by delta. docs/envelopes.md.

        Args:
            ids: the ids the model generated (its prompt's special ids left out or in).
            envelope: the format's name.

        Returns:
            A Transcript: .text, .language, .task, .emotion, .event, .itn, .timestamps, .tags.

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "huggingface")
            >>> t = tok.decode_envelope(tok.encode("language English<asr_text>the café opens"), "qwen3_asr")
            >>> t.language, t.text
            ('English', 'the café opens')
        """
        return decode_envelope(self, ids, envelope)

    def decode_incremental_batch(
        self,
        new_ids: Any,
        states: Sequence[Stream] | Sequence[dict[str, Any]],
        final: bool = False,
        *,
        lengths: Sequence[int] | None = None,
    ) -> list[str]:
        """Advance N streams at once: N deltas, each exactly what decode_incremental(new_ids[i],
        states[i], final) gives. Every id and every stream is checked before any stream moves:
        a bad one raises a typed error naming the stream, and every stream is left as it was.
        A batch of Streams steps their usual steps in one compiled pass, without the GIL from
        8,192 of them up (docs/decoding.md § The server loop).

        Args:
            new_ids: a list of id lists, a 1-D integer array (one id per stream: a decode
                step), or a 2-D integer array with `lengths` (row i's first lengths[i] ids).
            states: the streams: Streams (tok.new_stream()), or dict states ({} to start).
            final: flush and close every stream.
            lengths: with a 2-D array, how many ids of each row are real.

        Returns:
            The N deltas, in the streams' order.

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> streams = [tok.new_stream(), tok.new_stream(stop=["op"])]
            >>> rows = [tok.encode("the café"), tok.encode("the café opens")]
            >>> for step in range(4):
            ...     print(tok.decode_incremental_batch([r[step : step + 1] for r in rows], streams))
            ['the', 'the']
            [' café', ' café']
            ['', ' ']
            ['', '']
            >>> streams[1].stop
            StopMatch(text='op', token_index=3, char_offset=9)
        """
        if type(states) is not list and (isinstance(states, (dict, Stream)) or not isinstance(states, Sequence)):
            raise StreamStateError(f"states must be a list of streams, got {type(states).__name__}")
        # (feed_batch steps its own copy of `states`: the caller's may change while it runs.)
        one_per_stream = lengths is None and not isinstance(new_ids, (list, tuple)) and getattr(new_ids, "ndim", 0) == 1
        rows = new_ids if one_per_stream else batch_id_rows(new_ids, len(states), lengths)
        return feed_batch(self, rows, states, final, one_per_stream)


def batch_id_rows(new_ids: Any, n: int, lengths: Sequence[int] | None) -> list[Any]:
    """The ids for each of n streams: a list of id lists as it is, a 1-D integer array as one
    id per stream, a 2-D array as rows (cut by `lengths`)."""
    if isinstance(new_ids, (list, tuple)):
        rows: list[Any] = list(new_ids)
        if lengths is not None:
            rows = batch_rows(rows, lengths)
    else:
        ndim = getattr(new_ids, "ndim", None)
        if ndim is None:
            try:
                ndim = memoryview(new_ids).ndim
            except TypeError:
                raise StreamStateError(
                    f"new_ids must be a list of id lists or a 1-D / 2-D integer array, got {type(new_ids).__name__}"
                ) from None
        if ndim == 1:
            if lengths is not None:
                raise StreamStateError("lengths goes with a 2-D array of ids, not a 1-D one (one id per stream)")
            rows = [[token_id] for token_id in batch_rows([new_ids])[0]]
        elif ndim == 2:
            rows = batch_rows(new_ids, lengths)
        else:
            raise StreamStateError(f"new_ids as an array has 1 or 2 dimensions, got {ndim}")
    if len(rows) != n:
        raise StreamStateError(f"{len(rows)} rows of ids for {n} streams; give one per stream")
    return rows
