"""Streaming a hypothesis that changes: committed text that is never retracted, and a partial
tail (docs/decoding.md § Revisions).

A streaming recogniser rewrites its best hypothesis as audio arrives. Each call of
`decode_hypothesis` gets the whole current hypothesis and returns `(committed_delta, partial)`:

* the committed text grows only, and only by whole words: a prefix of the hypothesis is
  committed once the last `agreement` hypotheses agree on its ids (LocalAgreement-n), and only
  up to a word boundary that no later token can move;
* `partial` is the rest of the current hypothesis's transcript, replaced wholesale next call.

It is built on the kind's own exact streaming (`decode_incremental`): the committed ids live in
one stream state, which never sees an id that was not agreed, so committed text inherits the
kind's no-retraction contract (held-back characters, byte runs and FunASR's rewrites included).

Cost. Ids behind the commit point are never read again, except a bounded look-back window
(WINDOW ids) where a revision of committed ids is detected. The uncommitted tail is stepped one
id at a time from the committed stream state, and the steps of the previous hypothesis are kept,
so a call only steps the ids where the new hypothesis differs from the previous one. Grouping
into words (the compiled word rules of `oasr_tok.words`) runs over the agreed, uncommitted text
only. Nothing in a call is proportional to the transcript.

Where the commit point can be. Committed text ends at the end of a word `w` of the agreed text
only when the next word starts with its first letter (a word or solo-script character, not
punctuation) already settled by ids that are committed with it. Then no continuation can join
anything to `w`: punctuation between `w` and that letter is already there, and what follows
belongs to the next word or later. Those committed ids may have printed text after `w` (the
space and the next word's start); it is kept as "pending" text and committed with the next word.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._words import char_class, group_words
from .errors import StreamStateError, TimingError, TokenizerError, stream_closed_error

if TYPE_CHECKING:
    from .base import Tokenizer
    from .words import Word

__all__ = ["WINDOW", "decode_hypothesis"]

#: How many committed ids before the commit point each call compares with the hypothesis to
#: detect that the recogniser revised committed ids. Ids further back are never read.
WINDOW = 64

_STATE_KEY = "_hypothesis"
_PLACEHOLDER = "\u3007"  # IDEOGRAPHIC NUMBER ZERO: a solo-script character, a word by itself
_WORD_CLASSES = (2, 3)  # _words.pyx: C_WORD, C_SOLO (a letter that starts a word)

# state[_STATE_KEY] is a tuple with these fields (plain data, so copy.deepcopy forks a stream):
#   n        ids committed (fed to `stream`)
#   window   the last <= WINDOW committed ids, as a tuple
#   stream   the kind's decode_incremental state after the n committed ids (its "text" cut to
#            the held-back tail: the committed text is state["committed"])
#   pending  ((text, token index, start), ...): text the committed ids printed after the
#            committed text, one entry per token
#   skip     1 when pending's first piece starts with the placeholder for committed text
#   history  the uncommitted tails (ids after the commit point) of the previous hypotheses
#   steps    ((id, delta, stream state after it), ...) for the previous hypothesis's tail
#   closed   final=True was given
_FIELDS = 9


Pending = tuple[tuple[str, int, Any], ...]
Step = tuple[int, str, dict[str, Any]]


class _Hyp:
    """state[_STATE_KEY], unpacked."""

    __slots__ = ("closed", "history", "lean", "n", "pending", "skip", "steps", "stream", "window")
    n: int
    window: tuple[int, ...]
    stream: dict[str, Any]
    pending: Pending
    skip: int
    history: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]
    closed: bool
    lean: bool

    def __init__(self, data: Any, lean: bool) -> None:
        self.lean = lean
        if data is None:
            self.n, self.window, self.stream, self.pending, self.skip = 0, (), {}, (), 0
            self.history, self.steps, self.closed = (), (), False
            return
        try:
            n, window, stream, pending, skip, history, steps, closed = data
            # The containers are checked here; their entries where they are used (a forged
            # entry raises there, and decode_hypothesis turns that into StreamStateError).
            ok = (type(n) is int and n >= 0 and type(window) is tuple and len(window) <= min(n, WINDOW)
                  and type(stream) is dict and type(pending) is tuple and type(skip) is int
                  and 0 <= skip <= (1 if pending else 0) and type(history) is tuple
                  and type(steps) is tuple and type(closed) is bool)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise _forged()
        self.n, self.window, self.stream, self.pending, self.skip = n, window, stream, pending, skip
        self.history, self.steps, self.closed = history, steps, closed

    def freeze(self) -> tuple:
        return (self.n, self.window, self.stream, self.pending, self.skip, self.history, self.steps,
                self.closed)


def _forged() -> StreamStateError:
    return StreamStateError(f"state[{_STATE_KEY!r}] was not made by decode_hypothesis; start a new stream from {{}}")


def _keeps_whole_text(tok: Tokenizer) -> bool:
    """Whether tok's decode_incremental reads all of state["text"] (the ABC's quadratic
    reference does); compiled and Python kinds alike only replace its held-back tail."""
    from .base import Tokenizer

    return type(tok).decode_incremental is Tokenizer.decode_incremental and "decode_incremental" not in tok.__dict__


def _lean(stream: dict) -> dict:
    """`stream` with its text cut to the held-back tail (all the engine replaces next time)."""
    text = stream.get("text", "")
    tail = stream.get("_tail", 0)
    if type(text) is str and type(tail) is int and 0 <= tail < len(text):
        stream["text"] = text[len(text) - tail:]
        # What described the settled part (the character that needs the text's storage) is
        # gone with it.
        stream.pop("_wide", None)
        stream.pop("_level", None)
    return stream


def _common(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """The length of the common prefix of two id tuples."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the usual case, compared in C
        return n
    k = 0
    while a[k] == b[k]:
        k += 1
    return k


def _word_offsets(text: str, words: Sequence[Word]) -> list[int]:
    """Where each word starts in `text` (only whitespace lies between words)."""
    offsets = []
    pos = 0
    for word in words:
        pos = text.index(word.text, pos)
        offsets.append(pos)
        pos += len(word.text)
    return offsets


def _first_letter(word: str) -> int:
    """Index of the first word or solo-script character of `word`, -1 if it has none."""
    for k, ch in enumerate(word):
        if char_class(ch) in _WORD_CLASSES:
            return k
    return -1


def _append(state: dict[str, Any], key: str, delta: str) -> None:
    """state[key] += delta, in place when nothing else holds the string (no O(transcript)
    copy per call)."""
    if not delta:
        state.setdefault(key, "")
        return
    text = state.pop(key, "")
    text += delta  # CPython resizes in place when `text` is the only reference
    state[key] = text


def decode_hypothesis(
    tok: Tokenizer,
    hypothesis_ids: Sequence[int],
    state: dict[str, Any],
    final: bool = False,
    agreement: int = 2,
    times: Sequence[float] | None = None,
) -> tuple[str, str] | tuple[str, str, list[Word]]:
    """See Tokenizer.decode_hypothesis."""
    try:
        return _decode_hypothesis(tok, hypothesis_ids, state, final, agreement, times)
    except TokenizerError:
        raise
    except (TypeError, IndexError, KeyError, AttributeError) as exc:
        # Only a forged state gets here: everything the caller passes is checked first.
        if type(state) is dict and _STATE_KEY in state:
            raise _forged() from exc
        raise


def _decode_hypothesis(
    tok: Tokenizer,
    hypothesis_ids: Sequence[int],
    state: dict[str, Any],
    final: bool = False,
    agreement: int = 2,
    times: Sequence[float] | None = None,
) -> tuple[str, str] | tuple[str, str, list[Word]]:
    """See Tokenizer.decode_hypothesis."""
    if type(state) is not dict:
        raise StreamStateError(f"decode_hypothesis state must be a dict, got {type(state).__name__}")
    if type(agreement) is not int or agreement < 1:
        raise StreamStateError(f"agreement must be an int >= 1 (how many hypotheses must agree), got {agreement!r}")
    committed = state.get("committed", "")
    if type(committed) is not str:
        raise StreamStateError("state['committed'] must be the committed text (a str); start from {}")
    lean = not _keeps_whole_text(tok)
    h = _Hyp(state.get(_STATE_KEY), lean)
    if h.closed:
        raise stream_closed_error("hypothesis stream")
    n = h.n
    if isinstance(hypothesis_ids, (str, bytes)) or not hasattr(hypothesis_ids, "__len__"):
        hypothesis_ids = tok.check_ids(hypothesis_ids)  # str: the kind's NonIntegerIdError
    total = len(hypothesis_ids)
    w0 = n - len(h.window)
    seen = tok.check_ids(hypothesis_ids[w0:])  # never reads ids behind the window
    if times is not None:
        if len(times) != total:
            raise TimingError(f"times has {len(times)} entries for {total} hypothesis ids; give one start per id")
        later = times[n:]
        tail_times = later.tolist() if hasattr(later, "tolist") else list(later)
    # -- revisions of committed ids -----------------------------------------------------------
    revision = None
    width = len(h.window)
    looked = tuple(seen[:width])
    if looked != h.window:
        at = _common(looked, h.window)
        revision = (w0 + at, h.window[at:], looked[at:])
    history = h.history  # tails after the commit point: comparable across a revision too
    tail = seen[width:]
    tail_ids = tuple(tail)
    # -- step the tail from the committed stream, reusing the previous call's steps -----------
    steps = h.steps
    reuse = _common(tail_ids, tuple([s[0] for s in steps])) if steps else 0
    new_steps = list(steps[:reuse])
    stream = new_steps[-1][2] if new_steps else h.stream
    step = tok.decode_incremental
    for token_id in tail[reuse:]:
        stream = dict(stream)
        delta = step([token_id], stream)
        new_steps.append((token_id, delta, stream))
    ptexts = [p[0] for p in h.pending]
    deltas = [s[1] for s in new_steps]
    # -- final: everything is committed ------------------------------------------------------
    if final:
        flushed = dict(stream)
        rest = step([], flushed, final=True)
        pieces = ptexts + deltas
        if rest:
            if pieces:
                # As token_pieces does: held-back text goes on the last non-special token.
                base = n - len(h.window)
                ids = [h.window[p[1] - base] if p[1] >= base else -1 for p in h.pending] + tail
                special = tok.special_ids
                last = max((j for j, i in enumerate(ids) if i not in special), default=len(ids) - 1)
                pieces[last] += rest
            else:
                pieces.append(rest)
        delta = "".join(pieces)[h.skip:]
        final_words = None
        if times is not None:
            starts = [p[2] for p in h.pending] + tail_times
            index = [p[1] for p in h.pending] + list(range(n, n + len(tail)))
            if rest and not (ptexts or deltas):
                starts, index = [0], [max(n - 1, 0)]
            final_words = _words_after(pieces, starts, index, h.skip, len("".join(pieces)))
        _append(state, "committed", delta)
        h.n = n + len(tail)
        h.window = (h.window + tail_ids)[-WINDOW:]
        h.stream, h.pending, h.skip, h.history, h.steps, h.closed = (_lean(flushed) if lean else flushed), (), 0, (), (), True
        state[_STATE_KEY] = h.freeze()
        state["committed_tokens"] = h.n
        state["revision"] = revision
        return (delta, "") if final_words is None else (delta, "", final_words)
    # -- agreement ----------------------------------------------------------------------------
    if agreement == 1:
        agreed = len(tail)
        used: tuple[tuple[int, ...], ...] = ()
    else:
        used = history[-(agreement - 1):]
        agreed = min((_common(tail_ids, past) for past in used), default=0) if len(used) == agreement - 1 else 0
    # -- the commit point: the end of the last word whose next word's first letter is settled
    pieces = ptexts + deltas[:agreed]
    text = "".join(pieces)
    k = 0  # committed ids to add
    cut = h.skip  # committed characters of `text`
    commit_words: list[Word] = []
    if len(text) > h.skip:
        # A timed word ends where its last token ends: the next token's start. When the last
        # agreed token ends the word, that start must be known (a token after it).
        after = agreed < len(tail) or times is None
        if times is not None:
            starts = [p[2] for p in h.pending] + tail_times[: agreed + 1]
            words = group_words(pieces + [""] if after else pieces, starts)
        else:
            words = group_words(pieces, [0] * len(pieces))
        offsets = _word_offsets(text, words)
        last_piece = len(pieces) - 1
        m = len(words) - 1
        while m >= 1:
            letter = _first_letter(words[m].text)
            if letter >= 0 and (after or words[m - 1].last_token < last_piece):
                break
            m -= 1
        if m >= 1:
            end = offsets[m - 1] + len(words[m - 1].text)
            if end > h.skip:
                letter_at = offsets[m] + letter
                # The fewest tail ids that settle the next word's first letter.
                settled = len("".join(ptexts))
                while settled <= letter_at:
                    settled += len(deltas[k])
                    k += 1
                cut = end
                if times is not None:
                    index = [p[1] for p in h.pending] + list(range(n, n + agreed))
                    commit_words = [_absolute(w, index) for w, off in zip(words[:m], offsets) if off + len(w.text) > h.skip]
    delta = text[h.skip:cut]
    # -- the new pending text: what the committed ids printed after the cut --------------------
    if cut > h.skip:
        kept = list(h.pending) + [(deltas[j], n + j, tail_times[j] if times is not None else 0) for j in range(k)]
        pos = 0
        first = 0
        while first < len(kept) and pos + len(kept[first][0]) <= cut:
            pos += len(kept[first][0])
            first += 1
        pending = tuple(kept[first:])
        skip = 0
        if pending and cut > pos:
            # The first piece printed the end of a committed word too: that part is replaced by
            # a placeholder that is a word of its own, so the next grouping neither re-reads
            # committed text nor takes the piece for a whitespace-only token.
            text0, index0, start0 = pending[0]
            pending = ((_PLACEHOLDER + text0[cut - pos:], index0, start0), *pending[1:])
            skip = len(_PLACEHOLDER)
    else:
        pending, skip = h.pending, h.skip
    partial = text[cut:] + "".join(deltas[agreed:]) + _held(stream)
    # -- commit --------------------------------------------------------------------------------
    _append(state, "committed", delta)
    if k:
        absorbed = new_steps[k - 1][2]
        h.stream = _lean(dict(absorbed)) if lean else absorbed
        h.window = (h.window + tail_ids[:k])[-WINDOW:]
        h.n = n + k
    h.pending, h.skip = pending, skip
    h.history = tuple(past[k:] for past in (used + (tail_ids,))[-(agreement - 1):]) if agreement > 1 else ()
    h.steps = tuple(new_steps[k:])
    state[_STATE_KEY] = h.freeze()
    state["committed_tokens"] = h.n
    state["revision"] = revision
    if times is not None:
        return delta, partial, commit_words
    return delta, partial


def _held(stream: dict) -> str:
    """The held-back tail of a stream state: what decode would print now but is not settled."""
    text = stream.get("text", "")
    tail = stream.get("_tail", 0)
    return text[len(text) - tail:] if tail else ""


def _absolute(word: Word, index: list[int]) -> Word:
    from .words import Word

    return Word(word.text, word.start, word.end, index[word.first_token], index[word.last_token])


def _words_after(pieces: list[str], starts: list, index: list[int], skip: int, length: int) -> list[Word]:
    if length <= skip:
        return []
    words = group_words(pieces, starts)
    offsets = _word_offsets("".join(pieces), words)
    return [_absolute(w, index) for w, off in zip(words, offsets) if off + len(w.text) > skip]
