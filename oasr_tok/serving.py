"""Streams made with what a server knows (new_stream): a prompt they continue and stop strings
they end at. The record such a stream keeps, and the step that every kind's decode_incremental
hands such a state to (contract.py, _piece_table.pyx's TableMethods, funasr_char), live here:
one home, below every kind. The public face is streaming.py (docs/decoding.md § The server loop).

* A prompt (prefill) is read by its tail only: the last PREFILL_TAIL ids (more when they render
  nothing) prime a fresh state, so priming costs the same after any prompt. The deltas are then
  the continuation: what decode(prompt + generated) adds after the part of decode(prompt) it
  keeps. Text the prompt held back (a character it began) comes out only where the continuation
  changed it (completed it), never again as it was; unlike DecodeStream, which prints the
  prompt's text again when the prompt ends inside a character.
* Stop strings: no delta holds text that a later token could complete into a stop string (that
  possible start is held back). The first stop string found, in the order given (vLLM's rule),
  ends the stream: state["stop"] says which, at which generated token and output offset; the
  output ends before it (after it with include_stop); more ids are refused.
* The usual step of a server's loop (one id; nothing held back; a delta that begins no stop
  string; an envelope's non-special id) is taken in compiled code without a Python frame
  (_piece_table.pyx's _server_usual_step, on the record of _stream_record.pyx); it follows
  these rules exactly and hands every other step to server_step.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from ._stream_record import StreamRecord
from .envelopes import EnvelopeParser, feed
from .errors import StreamStateError, short_repr, stream_closed_error

__all__ = [
    "PREFILL_TAIL",
    "StopMatch",
    "check_stops",
    "filter_delta",
    "is_closed",
    "new_server_record",
    "prefilled",
    "server_step",
]

_ABSENT = object()


@dataclass(frozen=True)
class StopMatch:
    """Where a stream stopped: the stop string, the index of the generated token that completed
    it (0 for the first id after the prompt), and the character offset at which it starts in
    the stream's output (the concatenation of its deltas)."""

    text: str
    token_index: int
    char_offset: int


_SERVER = "_srv"  # the record of a stream made by new_stream (a StreamRecord, _stream_record.pyx)
#: How many of a prompt's last ids prime a stream (more when they render nothing): enough for
#: every kind's look-back (a byte run of a character, SentencePiece's first-piece rule, FunASR's
#: abbreviation joins), never the whole prompt.
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


def _record(state: Any) -> StreamRecord | None:
    if type(state) is not dict:
        return None
    record = state.get(_SERVER)
    if record is None:
        return None
    if type(record) is not StreamRecord:
        raise StreamStateError(f"state[{_SERVER!r}] was not made by new_stream; start a new stream")
    return record


def filter_delta(record: StreamRecord, delta: str, token: int, final: bool) -> str:
    """The part of one token's delta that leaves the stream: the prompt's held text skipped,
    a possible stop string's start held back, the output cut at a stop string."""
    if record.prompt_rest:
        # The prompt's own held-back text comes out again only where the continuation did not
        # change it (a character the prompt began and this token completed is new text).
        rest, k = record.prompt_rest, 0
        limit = min(len(rest), len(delta))
        while k < limit and rest[k] == delta[k]:
            k += 1
        record.prompt_rest = rest[k:] if k == len(delta) else ""
        delta = delta[k:]
    if not record.stops:
        return delta
    text = record.pending + delta if record.pending else delta
    for stop in record.stops:  # vLLM's order: the first stop string (as given) found wins
        at = text.find(stop)
        if at >= 0:
            end = at + len(stop) if record.keeps_stop else at
            record.stop = StopMatch(stop, token, record.emitted + at)
            record.closed = True
            record.pending = ""
            record.emitted += end
            return text[:end]
    held = 0
    if not final and text and text[-1] in record.ends:
        for size in range(min(len(text), max(map(len, record.stops)) - 1), 0, -1):
            if text[-size:] in record.firsts:
                held = size
                break
    record.pending = text[len(text) - held :] if held else ""
    out = text[: len(text) - held] if held else text
    record.emitted += len(out)
    return out


def server_step(tok: Any, new_ids: Any, state: dict[str, Any], final: bool, table: Any = None) -> str:
    """decode_incremental of a stream new_stream made: the kind's own step, its deltas through
    the stream's prompt and stop rules. The state is left as it was on any error. `table`: the
    kind's compiled PieceTable, when its step is that table's (a stream with nothing to watch
    for then steps it directly: the table reads only its own keys of the state)."""
    record = _record(state)
    assert record is not None
    if (
        table is not None
        and not final
        and not (record.stops or record.prompt_rest or record.envelope is not None or record.closed)
    ):
        # (the token count only places a StopMatch: with no stop strings it is not kept)
        result: str = table.decode_incremental(new_ids, state)  # checks every id first
        return result
    # First: a bad id leaves the state as it was. One id in a list is checked by the kind's own
    # step below, before it changes anything (the usual call of a server's loop; an envelope's
    # parser moves only after that step).
    new = new_ids if type(new_ids) is list and len(new_ids) == 1 else tok.check_ids(new_ids)
    if record.closed:
        if new:
            stopped = record.stop
            raise StreamStateError(
                f"this stream stopped at {stopped.text!r}; it takes no more ids" if stopped else "this stream is closed"
            )
        return ""
    if sys.getrefcount(record) > 3:  # the state's, ours and the call's: else a fork (dict(state)) shares it
        record = record.copy()
    saved = (record.pending, record.emitted, record.tokens, record.prompt_rest, record.closed, record.stop)
    # The kind's own step sees the state it made: the record and the stop report step aside.
    stop_before = state.pop("stop", _ABSENT)
    del state[_SERVER]
    envelope = record.envelope
    try:
        if (record.stops or record.prompt_rest) and len(new) == 1 and not final:
            delta = tok.decode_incremental(new, state) if envelope is None else feed(tok, envelope, new, state, False)
            result = filter_delta(record, delta, record.tokens, False)
            record.tokens += 1
        elif record.stops or record.prompt_rest:
            out: list[str] = []
            # One id at a time: which token completes a stop string is part of the answer.
            for k, token_id in enumerate(new):
                if envelope is None:
                    delta = tok.decode_incremental([token_id], state)
                else:
                    delta = feed(tok, envelope, [token_id], state, False)
                out.append(filter_delta(record, delta, record.tokens + k, False))
                if record.closed:
                    break
            record.tokens += len(new)
            if final and not record.closed:
                if envelope is None:
                    rest = tok.decode_incremental([], state, final=True)
                else:
                    rest = feed(tok, envelope, [], state, True)
                out.append(filter_delta(record, rest, record.tokens - 1, True))
                out.append(record.pending)
                record.pending = ""
            result = "".join(out)
        elif envelope is not None:
            result = feed(tok, envelope, new, state, final)
            record.tokens += len(new)
        else:
            result = tok.decode_incremental(new, state, final)
            record.tokens += len(new)
        if final:
            record.closed = True
    except BaseException:
        record.pending, record.emitted, record.tokens, record.prompt_rest, record.closed, record.stop = saved
        state[_SERVER] = record
        if stop_before is not _ABSENT:
            state["stop"] = stop_before
        raise
    state[_SERVER] = record
    state["stop"] = record.stop
    if envelope is not None:
        state["envelope"] = envelope.known()
    return result


def prefilled(tok: Any, prefill: Any) -> tuple[dict[str, Any], str]:
    """A fresh state fed the prompt's tail, and the text it holds back (the prompt's own).
    Only the tail is read (and checked): O(tail), whatever the prompt's length."""
    if isinstance(prefill, (str, bytes)) or not hasattr(prefill, "__len__") or not hasattr(prefill, "__getitem__"):
        prefill = tok.check_ids(prefill)  # an iterator or the like: read as every call reads ids
    total = len(prefill)
    size = min(total, PREFILL_TAIL)
    while True:
        tail = tok.check_ids(prefill[total - size :])
        state: dict[str, Any] = {}
        settled = tok.decode_incremental(tail, state)
        if settled or size == total:
            break
        size = min(total, size * 4)  # it rendered nothing yet: look further back
    text = state.get("text", "")
    return state, text[len(settled) :] if isinstance(text, str) else ""


def new_server_record(
    stops: tuple[str, ...], include: bool, prompt_rest: str, envelope: EnvelopeParser | None = None
) -> StreamRecord:
    return StreamRecord(stops, include, prompt_rest, envelope)


def check_stream(tok: Any, state: Any, has_ids: bool) -> None:
    """What a batch checks of a stream before any stream of it moves (the per-stream rules'
    streams): a dict, not stopped or closed when it is given ids, and every part of it what a
    stream of `tok` holds (a dry step, with no ids, reads it all and changes nothing)."""
    if type(state) is not dict:
        raise StreamStateError(f"a stream state is a dict ({{}} to start), got {type(state).__name__}")
    if has_ids and is_closed(state):
        stopped = state.get("stop")
        if isinstance(stopped, StopMatch):
            raise StreamStateError(f"this stream stopped at {stopped.text!r}; it takes no more ids")
        raise stream_closed_error()
    tok.decode_incremental([], state)


def is_closed(state: dict[str, Any]) -> bool:
    """Whether a stream state was closed (final=True) or stopped: its record's flag, or the
    engines' own closed flags for a plain state."""
    record = _record(state)
    if record is not None:
        return record.closed
    if state.get("_closed") is True:
        return True
    for key, inner, at in (("_s", None, 4), ("_ctc", 0, 4), ("_w2v", None, 2)):
        value = state.get(key)
        if inner is not None and type(value) is tuple and value:
            value = value[inner]
        if type(value) is tuple and len(value) > at and value[at] is True:
            return True
    return False
