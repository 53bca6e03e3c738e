"""Pickling a tokenizer: by value (its files travel inside the pickle) or by spec (only paths).

docs/scale.md explains the choice. In short:

* ``"value"`` (the default): the pickle carries the bytes of every file of the tokenizer's spec,
  each with its SHA-256 (assets.py says which bytes stand for a file). The receiving process
  writes them once into a private temporary folder (content-addressed, removed at exit) and
  builds the tokenizer from there through the registry, like any other spec; the tokenizer is
  kept in a per-process cache keyed by the kind, the options and the files' hashes, so a
  thousand tasks that each unpickle the same tokenizer build it once per worker. Nothing is read
  from the sender's paths: right for Ray, Spark, Dask or Kubernetes workers that do not share
  the driver's file system.
* ``"spec"``: the pickle is the spec (a few hundred bytes of paths and options); the receiver
  builds from the same paths. Right for a spawn pool on one host or a shared file system.

Choose per tokenizer with ``tok.pickle_mode = "spec"`` (or ``by_spec(tok)`` / ``by_value(tok)``).
`PickledByValue` is the part of `oasr_tok.Tokenizer` that does it.

A tokenizer's *sessions* (a Stream, a Revisions) pickle by reference to it instead, by its
fingerprint (identity.py), and carry it by value or by spec only when asked: `tok.travel`
(an oasr_tok.Travel) says how, and `_oasr_ticket` makes what their pickles hold for it
(_engine/travel.py). Whichever way a tokenizer arrives, a process that already holds one with its
fingerprint uses that one and builds nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
from typing import Any, TypeVar

from .._engine.travel import DEFAULT, Travel, held, hold
from ..errors import MalformedAssetError, StreamStateError, short_repr
from ..files.assets import MAX_VALUE_BYTES, Packed, identity_key, payload, register_value_reader
from ..files.readers import reading_given
from ..spec import TokenizerSpec
from .contract import TokenizerContract
from .identity import fingerprint, value_spec
from .registry import build

__all__ = [
    "MAX_VALUE_BYTES",
    "MODES",
    "PickledByValue",
    "by_spec",
    "by_value",
    "clear_cache",
    "from_spec",
    "register_value_reader",
]

MODES = ("value", "spec")

_lock = threading.Lock()
_built: dict[str, TokenizerContract] = {}  # tokenizers rebuilt from pickles: fingerprint -> tokenizer
_folder: str | None = None  # this process's private folder for materialised files
_folder_pid: int | None = None

T = TypeVar("T", bound="PickledByValue")


class PickledByValue(TokenizerContract):
    """Copying and pickling: a copy is the tokenizer itself; a pickle carries its files (or
    its spec, with pickle_mode "spec")."""

    #: "value": a pickle carries the spec's files (for workers without the driver's file
    #: system); "spec": only the spec's paths (a shared file system). docs/scale.md.
    pickle_mode: str = "value"

    @property
    def travel(self) -> Travel:
        """How this tokenizer's sessions (its Streams and Revisions) pickle: an oasr_tok.Travel,
        by reference with their text unless set (docs/scale.md § Streams that travel). A
        `with oasr_tok.travelling(...)` block overrides it for the pickles made in it.

        Example:
            >>> from oasr_tok.demo import DATA
            >>> import oasr_tok
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> tok.travel
            Travel(tokenizer='reference', text=True)
            >>> tok.travel = oasr_tok.Travel(tokenizer="value")  # for workers that may not hold it
        """
        travel: Travel = self.__dict__.get("_oasr_travel", DEFAULT)
        return travel

    @travel.setter
    def travel(self, travel: Travel) -> None:
        if type(travel) is not Travel:
            raise StreamStateError(f"tok.travel takes an oasr_tok.Travel, got {short_repr(travel)}")
        self.__dict__["_oasr_travel"] = travel

    def _oasr_ticket(self, mode: str) -> tuple[str, str, str | None, Any]:
        """What a session's ticket holds for this tokenizer (_engine/travel.py's carry): its
        fingerprint, kind, its tokenizer's fingerprint for a with_specials() view, and what
        travels with it in `mode` ("reference": nothing; "value": its files; "spec": its spec)."""
        if self.spec is None:
            raise TypeError(f"{type(self).__name__} was not built from a TokenizerSpec and cannot be pickled")
        parent = self.__dict__.get("_oasr_specials_of")
        source = None if mode == "reference" else _Sent(self, mode)
        return fingerprint(self), self.spec.kind, None if parent is None else fingerprint(parent), source

    # A tokenizer does not change once built (its tables are read-only), so a copy is the
    # tokenizer itself, as for a str. Without these, copy.copy and deepcopy of anything holding
    # one went through __reduce__: every file read and hashed, and another tokenizer built (or
    # the one the unpickling cache holds handed out, the same to every copy).
    def __copy__(self: T) -> T:
        return self

    def __deepcopy__(self: T, memo: dict[int, Any]) -> T:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        parent = self.__dict__.get("_oasr_specials_of")
        if parent is not None:  # a with_specials() view: rebuilt as the view of its tokenizer
            return (_specials_view_of, (parent,))
        if self.spec is None:
            raise TypeError(f"{type(self).__name__} was not built from a TokenizerSpec and cannot be pickled")
        if self.pickle_mode not in MODES:
            raise TypeError(f"pickle_mode must be one of {MODES}, got {self.pickle_mode!r}")
        if self.pickle_mode == "spec":
            return (build, (self.spec,))
        return reduce_by_value(self)


def _specials_view_of(tokenizer: Any) -> Any:
    return tokenizer.with_specials()


class _Sent:
    """A tokenizer as a session's ticket sends it along: by value or by spec whatever its own
    pickle_mode, unpickled to the tokenizer this process holds with its fingerprint when there
    is one."""

    __slots__ = ("mode", "tok")

    def __init__(self, tok: TokenizerContract, mode: str) -> None:
        self.tok, self.mode = tok, mode

    def __reduce__(self) -> tuple[Any, ...]:
        parent = self.tok.__dict__.get("_oasr_specials_of")
        if parent is not None:
            return (_specials_view_of, (_Sent(parent, self.mode),))
        if self.mode == "spec":
            assert self.tok.spec is not None
            return (from_spec, (self.tok.spec, fingerprint(self.tok)))
        return reduce_by_value(self.tok)


def by_spec(tok: T) -> T:
    """Make `tok` pickle by its spec (paths only: for workers that share the file system)."""
    tok.pickle_mode = "spec"
    return tok


def by_value(tok: T) -> T:
    """Make `tok` pickle by value (its files inside the pickle: the default)."""
    tok.pickle_mode = "value"
    return tok


def clear_cache() -> None:
    """Forget the tokenizers this process rebuilt from pickles (their files stay until exit;
    a tokenizer still referenced elsewhere stays held, weakly, until it goes)."""
    with _lock:
        _built.clear()


def reduce_by_value(tok: TokenizerContract) -> tuple[Any, ...]:
    """What Tokenizer.__reduce__ returns by value. The payload is read once per tokenizer and
    kept, so later pickles (a thousand tasks) neither re-read nor need the files."""
    packed = tok.__dict__.get("_value_payload")
    if packed is None:
        # A kind that reads files its spec does not name (found beside another) ships them too.
        spec = value_spec(tok)
        assert spec is not None
        packed = payload(spec, tok.__dict__.get("_oasr_marks"))
        tok.__dict__["_value_payload"] = packed
    return (from_value, packed)


# -- the receiving side ---------------------------------------------------------------------


def _private_folder() -> str:
    global _folder, _folder_pid
    # A forked child must not share (and at exit remove) its parent's folder.
    if _folder is None or _folder_pid != os.getpid():
        _folder = tempfile.mkdtemp(prefix="oasr_tok-value-")
        _folder_pid = os.getpid()
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def _checked(kind: Any, options: Any, files: Any) -> None:
    """A by-value payload's shape (a forged one raises MalformedAssetError, naming the part)."""
    if type(kind) is not str or type(options) is not dict or type(files) is not dict:
        raise MalformedAssetError("a pickled tokenizer's kind, options or files are not what a tokenizer pickles")
    for role, entry in files.items():
        if type(role) is not str or type(entry) is not tuple or len(entry) != 3:
            raise MalformedAssetError(f"a pickled tokenizer's file for role {role!r} is not (name, SHA-256, bytes)")
        name, digest, data = entry
        if type(name) is not str or os.path.basename(name) != name or name in ("", ".", ".."):
            raise MalformedAssetError(f"pickled tokenizer file name {name!r} is not a plain file name", path=str(name))
        if type(digest) is not str or len(digest) != 64 or type(data) is not bytes:
            raise MalformedAssetError(
                f"pickled tokenizer file {name!r} (role {role!r}) has no SHA-256 and bytes", path=name
            )


def _damaged(role: str, name: str, digest: str) -> MalformedAssetError:
    return MalformedAssetError(
        f"pickled tokenizer file {name!r} (role {role!r}) does not match its SHA-256 {digest}: "
        "the pickle was damaged in transit",
        path=name,
    )


#: The bytes above which a by-value pickle's files are written and hashed on a second thread.
_ON_A_THREAD = 1 << 20


class _Placed:
    """A by-value pickle's files, put in this process's private folder (content-addressed: a
    file is written once, whole or absent, even with threads racing) and their SHA-256 checked
    against their digests, on a second thread while the tokenizer is built from the bytes
    themselves (files/readers.py's reading_given): writing and hashing let go of the GIL, so on a
    free core they cost the build nothing, and a tokenizer by value costs no more than a cold
    load of its files (benchmarks/measurements.md). Nothing outside from_value, which holds
    _lock, can see a file before `finish` passed; `finish` removes the files it refuses."""

    def __init__(self, files: Packed) -> None:
        folder = _private_folder()
        self.files = [
            (role, name, digest, data, os.path.join(folder, digest, name))
            for role, (name, digest, data) in files.items()
        ]
        self.paths = {role: path for role, _, _, _, path in self.files}
        self.missing = [entry for entry in self.files if not os.path.exists(entry[4])]
        self.written: list[str] = []
        self.bad: list[tuple[str, str, str]] = []
        self.error: BaseException | None = None
        self.worker: threading.Thread | None = None
        if sum(len(data) for _, _, _, data, _ in self.files) > _ON_A_THREAD:
            self.worker = threading.Thread(target=self._work, name="oasr_tok-value-files", daemon=True)
            self.worker.start()
        else:
            self._work()

    def _work(self) -> None:
        try:
            for _, _, _, data, path in self.missing:  # first: a kind that opens a path finds it soon
                os.makedirs(os.path.dirname(path), exist_ok=True)
                temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.part"
                with open(temporary, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, path)
                self.written.append(path)
            for role, name, digest, data, _ in self.files:
                if hashlib.sha256(data).hexdigest() != digest:
                    self.bad.append((role, name, digest))
        except BaseException as exc:  # (an OSError writing: raised by `finish`, in the caller)
            self.error = exc

    def finish(self) -> None:
        if self.worker is not None:
            self.worker.join()
            self.worker = None
        if self.bad:
            for path in self.written:
                with contextlib.suppress(OSError):
                    os.remove(path)
            raise _damaged(*self.bad[0])
        if self.error is not None:
            raise self.error


def from_value(kind: str, options: dict[str, Any], files: Packed) -> TokenizerContract:
    """Unpickle by value: the tokenizer this process holds with these files' fingerprint (one
    it loaded, or rebuilt from an earlier pickle), or build it: from the bytes themselves, while
    a second thread writes the files once into this process's private folder (where the
    tokenizer reads them later) and checks their SHA-256 (_Placed)."""
    _checked(kind, options, files)
    key = identity_key(kind, options, files)
    with _lock:
        tok = _built.get(key)
        if tok is not None and _folder_pid == os.getpid():
            return tok
    found = held(key, kind)
    if isinstance(found, TokenizerContract):
        return found
    with _lock:
        tok = _built.get(key)
        if tok is not None and _folder_pid == os.getpid():
            return tok
        placed = _Placed(files)
        spec = TokenizerSpec(kind, placed.paths, options)
        given = {placed.paths[role]: data for role, (_, _, data) in files.items()}
        try:
            with reading_given(given):
                tok = build(spec)
        except BaseException:
            placed.finish()  # a damaged file: that error, not the build's
            if not placed.missing:
                raise
            # A kind that opens its file itself may have asked before it was written: again,
            # now that every file is there (an error that is the kind's own comes back).
            with reading_given(given):
                tok = build(spec)
        placed.finish()
        tok.__dict__["_value_payload"] = (kind, options, files)  # re-pickles without reading
        tok.__dict__["_oasr_fingerprint"] = key  # (identity.py: the fingerprint is this key)
        hold(tok, key, this_process_only=True)
        _built[key] = tok
        return tok


def from_spec(spec: TokenizerSpec, printed: str) -> TokenizerContract:
    """Unpickle a session's tokenizer sent by spec: the one this process holds with fingerprint
    `printed`, or the one built from the spec's paths, which must be the same files
    (StreamStateError otherwise: a session goes on only on the tokenizer that made it)."""
    if type(spec) is not TokenizerSpec or type(printed) is not str:
        raise StreamStateError("a pickled session's tokenizer spec is not one a session made; start a new one")
    with _lock:
        tok = _built.get(printed)
    if tok is None:
        tok = held(printed, spec.kind)
    if tok is None:
        tok = build(spec)
        if fingerprint(tok) != printed:
            raise StreamStateError(
                f"the files of {spec} are not the ones that made this session (fingerprint {printed[:16]}…): "
                "a session goes on only on the tokenizer that made it"
            )
        with _lock:
            _built[printed] = tok
    return tok
