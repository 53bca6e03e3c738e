"""How a session object travels in a pickle: its own state, and a ticket that names its tokenizer.

A session object is one that holds a tokenizer and a stream's state: a Stream, a Revisions, and
any other the library or a kind adds (docs/scale.md § Streams that travel). Every worker of a
server already holds the model's tokenizer, so by default a session's pickle carries its state
and a *ticket* of a few dozen bytes: the tokenizer's content fingerprint (the SHA-256 of its
kind, its options and its files' names and bytes: identical wherever the same files are loaded)
and its kind. Unpickling looks the fingerprint up among the tokenizers this process holds —
every one it built from files or unpickled, kept weakly, so a server that drops a model drops
its tokenizer — and refuses a session whose tokenizer is not there (TokenizerNotHeldError) or
is another one (StreamStateError): a stream never continues on a tokenizer that did not make it.

Where the receiving process may not hold the tokenizer, the user chooses what travels with it
(`Travel`): the tokenizer by value (its files inside the pickle), or its spec (where to load it
from). Either way the receiver uses the tokenizer it holds when it has it, and the result is
checked against the fingerprint. `Travel.text` says whether a session's text travels too.

The choice is the tokenizer's (`tok.travel = Travel(...)`, for every session of it) or a
block's (`with travelling(...)`, for the pickles made in it, in this thread or task).

For the author of a session object, the two calls are `carry` and `arrive`::

    def __reduce__(self):
        text = self.text if travel_of(self.tokenizer).text else None
        return (_rebuilt, (carry(self.tokenizer), self.state, text))

    def _rebuilt(ticket, state, text):
        tok = arrive(ticket, "session")  # the held tokenizer, checked; a typed error otherwise
        ...                              # check every field (`count` for counters), then build

`arrive` raises StreamStateError (TokenizerNotHeldError where the tokenizer is not held) and
never returns a tokenizer whose fingerprint differs from the one the ticket recorded. Unpickling
is code execution whatever this module checks: take pickles only from your own processes.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, get_args

from oasr_tok.errors import StreamStateError, TokenizerError, TokenizerNotHeldError, short_repr

__all__ = [
    "DEFAULT",
    "TokenizerTicket",
    "Travel",
    "TravelMode",
    "arrive",
    "carry",
    "count",
    "held",
    "hold",
    "travel_of",
    "travelling",
]

#: What travels with a session's pickle for its tokenizer.
TravelMode = Literal["reference", "value", "spec"]
MODES: tuple[str, ...] = get_args(TravelMode)


def _check(tokenizer: object, text: object, partial: bool = False) -> None:
    """The fields of a Travel (partial: of a travelling block, where None keeps the outer one)."""
    if partial and tokenizer is None:
        pass
    elif tokenizer not in MODES:
        raise StreamStateError(f"Travel.tokenizer must be one of {MODES}, got {short_repr(tokenizer)}")
    if (text is not None or not partial) and type(text) is not bool:
        raise StreamStateError(f"Travel.text must be True or False, got {short_repr(text)}")


@dataclass(frozen=True, slots=True)
class Travel:
    """How a session object (a Stream, a Revisions) pickles: what travels for its tokenizer,
    and whether its text travels.

    Attributes:
        tokenizer: ``"reference"`` (the default): only the tokenizer's fingerprint; the receiving
            process must hold the same tokenizer (it loaded the same files, or unpickled it),
            else unpickling raises TokenizerNotHeldError. ``"value"``: the tokenizer's files
            travel too (as a tokenizer pickles by value), for a receiver that may not hold it.
            ``"spec"``: its spec travels (its kind, options and paths: where to load it from),
            for a receiver that sees the same files. A receiver that holds the tokenizer uses
            it in every mode, and every mode checks the fingerprint.
        text: whether the text the session rendered so far travels (True, the default). Without
            it the message is the state alone (a few hundred bytes at any transcript length);
            the session goes on with exactly the same deltas, but its whole text is no longer
            there to read (``stream.text`` raises StreamStateError).

    Example:
        >>> import pickle
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> stream = tok.new_stream()
        >>> _ = stream.feed(tok.encode("the café"))
        >>> len(pickle.dumps(stream)) < 1024  # the state and a fingerprint
        True
        >>> with oasr_tok.travelling(tokenizer="value"):  # for a process that may not hold it
        ...     len(pickle.dumps(stream)) > len(pickle.dumps(tok))  # its files are inside
        True
    """

    tokenizer: TravelMode = "reference"
    text: bool = True

    def __post_init__(self) -> None:
        _check(self.tokenizer, self.text)


#: What a session object pickles with when nobody chose: what a server expects (docs/scale.md).
DEFAULT = Travel()

# The innermost `travelling` block's choices: (tokenizer mode or None, text or None).
_scope: ContextVar[tuple[str | None, bool | None] | None] = ContextVar("oasr_tok_travel", default=None)


@contextmanager
def travelling(
    travel: Travel | None = None, /, *, tokenizer: TravelMode | None = None, text: bool | None = None
) -> Iterator[None]:
    """Within the block, session objects pickle as `travel` (or the fields given) says, whatever
    their tokenizer's own `travel`; a field not given keeps what the enclosing block or the
    tokenizer says. The choice holds for pickles made in this thread (or asyncio task): where a
    library pickles in a thread of its own (a multiprocessing.Queue's feeder), set `tok.travel`.

    Args:
        travel: a whole Travel, or
        tokenizer: "reference", "value" or "spec" (what travels for the tokenizer), and
        text: whether the sessions' text travels.

    Returns:
        A context manager; StreamStateError for a field that is none of these.

    Example:
        >>> import pickle
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> stream = tok.new_stream()
        >>> _ = stream.feed(tok.encode("the café opens"))
        >>> with oasr_tok.travelling(text=False):
        ...     moved = pickle.loads(pickle.dumps(stream))
        >>> moved.feed(tok.encode(" at nine")[1:]) == stream.feed(tok.encode(" at nine")[1:])
        True
    """
    if travel is not None:
        if tokenizer is not None or text is not None:
            raise StreamStateError("give travelling() a Travel or its fields, not both")
        if type(travel) is not Travel:
            raise StreamStateError(f"travelling() takes an oasr_tok.Travel, got {short_repr(travel)}")
        tokenizer, text = travel.tokenizer, travel.text
    _check(tokenizer, text, partial=True)
    outer = _scope.get()
    if outer is not None:
        tokenizer = tokenizer if tokenizer is not None else outer[0]  # type: ignore[assignment]
        text = text if text is not None else outer[1]
    token = _scope.set((tokenizer, text))
    try:
        yield
    finally:
        _scope.reset(token)


def travel_of(tok: Any) -> Travel:
    """How a session object of `tok` pickles now: the innermost `travelling` block's choices over
    the tokenizer's own `travel` (DEFAULT when it has none)."""
    own = getattr(tok, "travel", DEFAULT)
    if type(own) is not Travel:
        own = DEFAULT
    scope = _scope.get()
    if scope is None:
        return own
    mode, text = scope
    if (mode is None or mode == own.tokenizer) and (text is None or text == own.text):
        return own
    return Travel(mode if mode is not None else own.tokenizer, text if text is not None else own.text)  # type: ignore[arg-type]


# -- the tokenizers this process holds ----------------------------------------------------------

# fingerprint -> every held tokenizer with it, weakly (several may be built from the same files:
# one entry per fingerprint would lose the others when the one it names is dropped)
_printed: dict[str, tuple[weakref.ref[Any], ...]] = {}
_waiting: dict[int, weakref.ref[Any]] = {}  # held, fingerprint not asked yet: id -> weak reference
_bound: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()  # tokenizer -> the only pid it serves
_lock = threading.Lock()  # the tables
_finding = threading.Lock()  # one lookup at a time fingerprints the waiting ones


def _print(tok: Any, fingerprint: str) -> None:
    """Note `tok` under `fingerprint` (called with _lock held)."""

    def dropped(ref: weakref.ref[Any], fingerprint: str = fingerprint) -> None:
        # (no lock: a collection may run while this thread holds it; each entry is replaced whole)
        left = tuple(r for r in _printed.get(fingerprint, ()) if r is not ref and r() is not None)
        if left:
            _printed[fingerprint] = left
        else:
            _printed.pop(fingerprint, None)

    kept = tuple(r for r in _printed.get(fingerprint, ()) if r() is not None and r() is not tok)
    _printed[fingerprint] = (*kept, weakref.ref(tok, dropped))


def _first_held(fingerprint: str) -> Any | None:
    """The first tokenizer alive under `fingerprint` that serves this process, or None."""
    for ref in _printed.get(fingerprint, ()):
        found = _here(ref())
        if found is not None:
            return found
    return None


def hold(tok: Any, fingerprint: str | None = None, *, this_process_only: bool = False) -> None:
    """Count `tok` among the tokenizers this process holds (weakly: it goes with its last
    reference), under `fingerprint` when it is known already; otherwise the fingerprint is
    asked for (tok.fingerprint) the first time a lookup of its kind misses. Called for every
    tokenizer built from a spec or unpickled. `this_process_only`: a forked child does not find
    it (a tokenizer built from files in this process's private folder, which goes at its exit)."""
    key = id(tok)

    def dropped(ref: weakref.ref[Any], key: int = key) -> None:
        # (no lock: a collection may run while this thread holds it; dict operations are atomic)
        if _waiting.get(key) is ref:
            _waiting.pop(key, None)

    try:
        ref = weakref.ref(tok, dropped)
    except TypeError:  # an object that cannot be referenced weakly cannot be found either
        return
    with _lock:
        if this_process_only:
            _bound[tok] = os.getpid()
        if fingerprint is not None:
            _print(tok, fingerprint)
            _waiting.pop(key, None)
        else:
            _waiting[key] = ref


def held(fingerprint: str, kind: str | None = None) -> Any | None:
    """The tokenizer of this process whose fingerprint is `fingerprint`, or None. A miss first
    fingerprints the held tokenizers of that kind not fingerprinted yet (each once: their files
    are read and hashed then, not when they were loaded)."""
    found = _first_held(fingerprint)
    if found is not None:
        return found
    with _finding:
        found = _first_held(fingerprint)
        if found is not None:
            return found
        with _lock:
            candidates = []
            for key, ref in list(_waiting.items()):
                tok = ref()
                if tok is not None and (kind is None or _kind_of(tok) == kind):
                    candidates.append(tok)
                    del _waiting[key]
        for tok in candidates:
            try:
                printed = tok.fingerprint
            except (TokenizerError, OSError):  # its files are gone or changed: it cannot be named
                continue
            with _lock:
                _print(tok, printed)
        del candidates
        return _first_held(fingerprint)


def _here(tok: Any) -> Any:
    """`tok`, unless it serves another process only (found by a forked child)."""
    if tok is not None and _bound.get(tok, os.getpid()) != os.getpid():
        return None
    return tok


def _kind_of(tok: Any) -> str | None:
    spec = getattr(tok, "spec", None)
    return getattr(spec, "kind", None)


def _fingerprint_of(tok: Any) -> str | None:
    if getattr(type(tok), "fingerprint", None) is None:
        return None
    printed = tok.fingerprint
    return printed if type(printed) is str else None


# -- tickets ------------------------------------------------------------------------------------


class TokenizerTicket:
    """What a session object's pickle holds for its tokenizer (made by `carry`, read by
    `arrive`): the tokenizer's fingerprint and kind; for a with_specials() view, its tokenizer's
    fingerprint (`base`); and what travels with it (`source`: None by reference, else an object
    that unpickles to the tokenizer: its files or its spec)."""

    __slots__ = ("_tokenizer", "base", "fingerprint", "kind", "source")

    def __init__(self, fingerprint: Any, kind: Any, base: Any, source: Any) -> None:
        self.fingerprint = fingerprint
        self.kind = kind
        self.base = base
        self.source = source
        self._tokenizer: Any = None  # what `arrive` found (several sessions of one pickle share it)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TokenizerTicket, (self.fingerprint, self.kind, self.base, self.source))

    def __repr__(self) -> str:
        printed = self.fingerprint[:12] if type(self.fingerprint) is str else self.fingerprint
        how = "by reference" if self.source is None else f"with {type(self.source).__name__}"
        return f"<tokenizer ticket {self.kind} {printed}… {how}>"


def carry(tok: Any) -> TokenizerTicket:
    """The ticket a session object of `tok` pickles now (travel_of(tok) says what it carries).
    A tokenizer that cannot be fingerprinted (not an oasr_tok Tokenizer) travels as it pickles."""
    make = getattr(tok, "_oasr_ticket", None)
    if make is None:
        return TokenizerTicket(None, None, None, tok)
    mode = travel_of(tok).tokenizer
    if mode == "reference":
        cache = getattr(tok, "__dict__", None)
        ticket = cache.get("_oasr_reference_ticket") if cache is not None else None
        if ticket is None:
            ticket = TokenizerTicket(*make(mode))
            if cache is not None:
                cache["_oasr_reference_ticket"] = ticket
        return ticket
    return TokenizerTicket(*make(mode))


def arrive(ticket: Any, what: str = "stream") -> Any:
    """The tokenizer a pickled session object's ticket names: the one that travelled with it, or
    the one this process holds with its fingerprint. StreamStateError for anything but a ticket
    or for a tokenizer whose fingerprint is not the ticket's; TokenizerNotHeldError when it is
    sent by reference and this process does not hold it."""
    if type(ticket) is not TokenizerTicket:
        raise StreamStateError(
            f"a pickled {what} names its tokenizer by a ticket, and this one has {short_repr(ticket)}; "
            f"start a new {what}"
        )
    found = ticket._tokenizer
    if found is not None:
        return found
    fingerprint, kind, base, source = ticket.fingerprint, ticket.kind, ticket.base, ticket.source
    if fingerprint is None:  # a tokenizer without a fingerprint travelled as it pickles
        if kind is not None or base is not None or not hasattr(source, "decode_incremental"):
            raise StreamStateError(f"a pickled {what}'s ticket holds no tokenizer; start a new {what}")
        found = source
    else:
        if type(fingerprint) is not str or not (kind is None or type(kind) is str):
            raise StreamStateError(f"a pickled {what}'s ticket is not one a {what} made; start a new {what}")
        if not (base is None or type(base) is str):
            raise StreamStateError(f"a pickled {what}'s ticket is not one a {what} made; start a new {what}")
        if source is not None:
            found = source
        else:
            found = held(fingerprint, kind)
            if found is None and base is not None:
                parent = held(base, kind)
                if parent is not None:
                    found = parent.with_specials()
            if found is None:
                raise TokenizerNotHeldError(
                    f"this {what} was made by a {kind} tokenizer (fingerprint {fingerprint[:16]}…) that this process "
                    "does not hold: load the same files here first (any tokenizer a process loads or unpickles is "
                    "held), or send it along: Travel(tokenizer='value') or 'spec' (docs/scale.md)"
                )
        if _fingerprint_of(found) != fingerprint:
            raise StreamStateError(
                f"this {what} was made by a {kind} tokenizer (fingerprint {fingerprint[:16]}…) and the pickle brings "
                f"another ({short_repr(found)}): a {what} goes on only on the tokenizer that made it"
            )
    ticket._tokenizer = found
    return found


# -- the fields of a pickled session object ------------------------------------------------------


def count(value: object, what: str) -> int:
    """`value` when it is a count a C field holds (an int from 0 to sys.maxsize), else the
    StreamStateError naming `what` (never the OverflowError of a C conversion)."""
    if type(value) is not int or not 0 <= value <= sys.maxsize:
        raise StreamStateError(f"{what} must be an int from 0 to {sys.maxsize}, got {short_repr(value)}")
    return value
