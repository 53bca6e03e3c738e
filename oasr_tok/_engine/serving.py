"""The rules a server adds to a stream (new_stream): a prompt it continues and stop strings it
ends at. A Stream (oasr_tok/_engine/stream.pyx) keeps them in C and steps them; this module states the
rules and holds what they share (StopMatch, the checks of new_stream's arguments, which part of
a prompt is read). The public face is streaming.py (docs/decoding.md § The server loop).

* A prompt (prefill) is read by its tail only: the last PREFILL_TAIL ids (more when they render
  nothing), read back further only as far as a rule of the kind needs (a ByteFallback byte run,
  valid or not as a whole, is read from its start; a Whisper prompt block, whose text is never
  printed, from its <|startofprev|>), so priming costs the same after any ordinary prompt. The
  deltas are then the continuation: what decode(prompt + generated) adds after the part of
  decode(prompt) it keeps. Text the prompt held back (a character it began) comes out only where
  the continuation changed it (completed it), never again as it was; unlike DecodeStream, which
  prints the prompt's text again when the prompt ends inside a character.
* Stop strings follow vLLM 0.34's `check_stop_strings`: after each generated token, of the stop
  strings that end in its new text, the one that ends earliest wins (ties: the order given); the
  stream ends there: state["stop"] says which, at which generated token and output offset; the
  output ends before it (after it with include_stop); more ids are refused. Without include_stop
  no delta holds text that a later token could complete into a stop string (that possible start
  is held back); with it nothing is held back, since nothing shown can be taken back.
* The usual step of a server's loop (ids that only append plain pieces; one id with nothing held
  back when stop strings or an envelope are watched; an envelope's non-special id) is one
  predicate, _engine/stream.pyx's Stream._plan, taken in compiled code; a batch of such steps runs in
  one compiled pass (_engine/batch.pyx; without the GIL from NOGIL_AT_LEAST of them up). Every other step follows these rules in _engine/stream.pyx's general step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import StreamStateError, short_repr, stream_closed_error

__all__ = ["PREFILL_TAIL", "StopMatch", "check_stops", "check_stream", "is_closed", "prefill_tail"]


@dataclass(frozen=True)
class StopMatch:
    """Where a stream stopped: the stop string, the index of the generated token that completed
    it (0 for the first id after the prompt), and the character offset at which it starts in
    the stream's output (the concatenation of its deltas)."""

    text: str
    token_index: int
    char_offset: int


#: How many of a prompt's last ids prime a stream (more when they render nothing, or when a rule
#: of the kind needs more: see prefill_tail): enough for every kind's ordinary look-back (a byte
#: run of a character, SentencePiece's first-piece rule, FunASR's abbreviation joins).
PREFILL_TAIL = 64


def check_stops(stop: Any) -> tuple[str, ...]:
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, (list, tuple)):
        raise StreamStateError(f"stop must be a list of strings, got {short_repr(stop)}")
    for s in stop:
        if not isinstance(s, str) or not s:
            raise StreamStateError(f"a stop string must be a non-empty str, got {short_repr(s)}")
    return tuple(stop)


def prefill_tail(tok: Any, prefill: Any, size: int) -> list[int]:
    """The last `size` ids of the prompt (checked), read back further where a rule of the kind's
    table needs it: to the start of a whole-run byte run the tail starts inside, and to the
    opener of a prompt block (Whisper's <|startofprev|>) the tail starts inside. O(size) for an
    ordinary prompt; O(the run or the block) otherwise."""
    total = len(prefill)
    start = max(0, total - size)
    tail: list[int] = tok.check_ids(prefill[start:])
    engine = getattr(tok, "_table", None)
    run_ids = getattr(engine, "run_ids", None)
    if start == 0 or run_ids is None:
        return tail
    whole_run = run_ids()
    if whole_run:
        while start > 0:
            chunk: list[int] = tok.check_ids(prefill[max(0, start - PREFILL_TAIL) : start])
            k = len(chunk)
            while k > 0 and chunk[k - 1] in whole_run:
                k -= 1
            if k == len(chunk):  # the id before the tail is no byte of a run
                break
            tail = chunk[k:] + tail
            start -= len(chunk) - k
            if k:
                break
    opener, closer = getattr(engine, "prompt_open", -1), getattr(engine, "prompt_close", -1)
    if opener >= 0:
        # Whether the tail starts inside a block: the nearest opener or closer before it says.
        back = start
        while back > 0:
            block: list[int] = tok.check_ids(prefill[max(0, back - 4 * PREFILL_TAIL) : back])
            back -= len(block)
            for k in range(len(block) - 1, -1, -1):
                if block[k] == closer:
                    return tail
                if block[k] == opener:
                    between: list[int] = tok.check_ids(prefill[back + len(block) : start])
                    return block[k:] + between + tail
    return tail


def check_stream(tok: Any, state: Any, has_ids: bool) -> None:
    """What a batch of plain dict states checks of one before any stream moves: a dict, not
    closed when it is given ids, and every part of it what a stream of `tok` holds (a dry step,
    with no ids, reads it all). A check writes nothing: the dry step runs on a copy (on the
    state itself it would start a new state's fields, and a refused batch must leave every
    state as it was)."""
    if type(state) is not dict:
        raise StreamStateError(f"a stream state is a dict ({{}} to start), got {type(state).__name__}")
    if has_ids and is_closed(state):
        raise stream_closed_error()
    tok.decode_incremental([], dict(state))


def is_closed(state: dict[str, Any]) -> bool:
    """Whether a plain dict state was closed (final=True): the engines' own closed flags."""
    if state.get("_closed") is True:
        return True
    for key, inner, at in (("_s", None, 4), ("_ctc", 0, 4), ("_w2v", None, 2)):
        value = state.get(key)
        if inner is not None and type(value) is tuple and value:
            value = value[inner]
        if type(value) is tuple and len(value) > at and value[at] is True:
            return True
    return False


def ids_sequence(tok: Any, prefill: Any) -> Sequence[int]:
    """The prompt as something that has a length and slices (an iterator is read whole)."""
    if isinstance(prefill, (str, bytes)) or not hasattr(prefill, "__len__") or not hasattr(prefill, "__getitem__"):
        return tok.check_ids(prefill)  # type: ignore[no-any-return]
    return prefill  # type: ignore[no-any-return]
