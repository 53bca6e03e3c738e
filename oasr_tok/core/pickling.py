"""Pickling a tokenizer: by value (its files travel inside the pickle) or by spec (only paths).

docs/scale.md explains the choice. In short:

* ``"value"`` (the default): the pickle carries the bytes of every file of the tokenizer's spec,
  each with its SHA-256 and its CRC-32 (assets.py says which bytes stand for a file). The
  receiving process builds the tokenizer from those bytes through the registry, like any other
  spec, while a second thread checks their CRC-32 (a pickle damaged in transit is refused). It
  writes nothing: the files are written into a private temporary folder (removed at exit) when
  something first reads them by path (_Placed). It hashes nothing: the tokenizer's fingerprint
  is made from its bytes the first time it is asked for (identity.py), never taken from the
  digests the pickle claims. The tokenizer
  is kept in a per-process cache keyed by the kind, the options and the files' claimed hashes
  (a hit is checked against its bytes once), so a thousand tasks that each unpickle the same
  tokenizer build it once per worker. Nothing is read from the sender's paths: right for Ray,
  Spark, Dask or Kubernetes workers that do not share the driver's file system.
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
import functools
import hashlib
import itertools
import os
import shutil
import tempfile
import threading
import weakref
import zlib
from typing import Any, TypeVar

from .._engine.travel import DEFAULT, Travel, held, hold
from ..errors import MalformedAssetError, StreamStateError, short_repr
from ..files.assets import MAX_VALUE_BYTES, Packed, identity_key, payload, register_value_reader
from ..files.readers import PromisedPaths, on_disk, promise, reading_given, withdraw
from ..spec import TokenizerSpec
from .contract import TokenizerContract
from .identity import UNHASHED, fingerprint, value_spec
from .registry import build, is_builtin

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
    """What Tokenizer.__reduce__ returns by value: (kind, options, files) and each file's CRC-32.
    The payload is read once per tokenizer and kept, so later pickles (a thousand tasks) neither
    re-read nor need the files. A tokenizer rebuilt from such a pickle is fingerprinted first:
    its pickles carry the digests of its bytes, never the ones it arrived with."""
    own = tok.__dict__
    if UNHASHED in own:
        fingerprint(tok)
    packed = own.get("_value_payload")
    if packed is None:
        # A kind that reads files its spec does not name (found beside another) ships them too.
        spec = value_spec(tok)
        assert spec is not None
        packed = payload(spec, own.get("_oasr_marks"))
        own["_value_payload"] = packed
    sums = own.get("_value_sums")
    if sums is None:
        sums = own["_value_sums"] = {role: zlib.crc32(data) for role, (_, _, data) in packed[2].items()}
    return (from_value, (*packed, sums))


# -- the receiving side ---------------------------------------------------------------------


def _private_folder() -> str:
    global _folder, _folder_pid
    # A forked child must not share (and at exit remove) its parent's folder.
    if _folder is None or _folder_pid != os.getpid():
        _folder = tempfile.mkdtemp(prefix="oasr_tok-value-")
        _folder_pid = os.getpid()
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def _checked(kind: Any, options: Any, files: Any, sums: Any) -> None:
    """A by-value payload's shape (a forged one raises MalformedAssetError, naming the part)."""
    if type(kind) is not str or type(options) is not dict or type(files) is not dict:
        raise MalformedAssetError("a pickled tokenizer's kind, options or files are not what a tokenizer pickles")
    if sums is not None:
        if type(sums) is not dict or sums.keys() != files.keys():
            raise MalformedAssetError("a pickled tokenizer's CRC-32s are not one for each of its files")
        for role, crc in sums.items():
            if type(crc) is not int or not 0 <= crc <= 0xFFFFFFFF:
                raise MalformedAssetError(f"a pickled tokenizer's CRC-32 for role {role!r} is {short_repr(crc)}")
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


def _damaged(role: str, name: str, check: str) -> MalformedAssetError:
    return MalformedAssetError(
        f"pickled tokenizer file {name!r} (role {role!r}) does not match its {check}: the pickle was damaged in transit",
        path=name,
    )


#: The bytes above which a by-value pickle's files are checked on a second thread.
_ON_A_THREAD = 1 << 20

_rebuilt = itertools.count()  # names each rebuilt tokenizer's own folder in the private one
_writing = threading.Lock()  # promised files are written one at a time (a build may ask, holding _lock)


def _write(path: str, data: bytes) -> None:
    """Put a promised file at `path` (files/readers.py's on_disk calls this when something first
    reads it there): whole or absent, even with threads racing; then the promise is kept."""
    with _writing:
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.part"
            with open(temporary, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
        withdraw(path)


def _forget(paths: list[str]) -> None:
    for path in paths:
        withdraw(path)


class _Placed:
    """A by-value pickle's files: their paths, in a folder of their own in this process's private
    folder (one a rebuilt tokenizer, so the bytes at a path are always the ones its tokenizer
    was built from), each promised (files/readers.py's `promise`): written there when something
    first reads it by path (a `spec` that travels, a runtime that opens its file, tok.spec's
    paths), never on the load path; and their bytes checked against the CRC-32s the pickle
    carries, on a second thread while the tokenizer is built from the bytes themselves
    (reading_given; zlib.crc32 lets go of the GIL). The CRC-32 finds a pickle damaged in transit
    at a third of a SHA-256's cost (benchmarks/measurements.md); the SHA-256 that names the
    tokenizer is made from its bytes when its fingerprint is first asked for (identity.py), so a
    digest the pickle claims names nothing. A payload without CRC-32s (an older pickle, a direct
    call) has its SHA-256s checked instead. A kind that is not oasr_tok's own (a plugin's, which
    may open its files itself at any time) has them written before its build (from_value).
    `finish` waits for the check; damaged bytes are refused, their promises withdrawn and
    anything written of them removed."""

    def __init__(self, files: Packed, sums: dict[str, int] | None) -> None:
        folder = os.path.join(_private_folder(), str(next(_rebuilt)))
        self.sums = sums
        self.files = [
            (role, name, digest, data, os.path.join(folder, digest, name))
            for role, (name, digest, data) in files.items()
        ]
        self.paths = {role: path for role, _, _, _, path in self.files}
        for _, _, _, data, path in self.files:
            promise(path, functools.partial(_write, path, data))
        self.bad: list[tuple[str, str, str]] = []
        self.worker: threading.Thread | None = None
        if sum(len(data) for _, _, _, data, _ in self.files) > _ON_A_THREAD:
            self.worker = threading.Thread(target=self._check, name="oasr_tok-value-files", daemon=True)
            self.worker.start()
        else:
            self._check()

    def _check(self) -> None:
        for role, name, digest, data, _ in self.files:
            if self.sums is not None:
                if zlib.crc32(data) != self.sums[role]:
                    self.bad.append((role, name, f"CRC-32 {self.sums[role]:08x}"))
            elif hashlib.sha256(data).hexdigest() != digest:
                self.bad.append((role, name, f"SHA-256 {digest}"))

    def finish(self) -> None:
        if self.worker is not None:
            self.worker.join()
            self.worker = None
        if self.bad:
            self.withdraw()
            raise _damaged(*self.bad[0])

    def withdraw(self) -> None:
        """Withdraw the promises and remove what was written of them (a refused build)."""
        for _, _, _, _, path in self.files:
            withdraw(path)
            with contextlib.suppress(OSError):
                os.remove(path)

    def kept_by(self, tok: TokenizerContract) -> None:
        """The promises go with `tok` (their bytes are let go when it is)."""
        weakref.finalize(tok, _forget, list(self.paths.values()))


def _cached(key: str) -> TokenizerContract | None:
    """The tokenizer rebuilt here from an earlier pickle that claimed fingerprint `key`, once its
    own bytes are shown to have it (called with _lock held). The first hit hashes them (the
    unpickle that built it hashed nothing); a tokenizer whose bytes have another fingerprint (a
    pickle that claimed digests it did not carry) is dropped from the cache, never returned."""
    tok = _built.get(key)
    if tok is None or _folder_pid != os.getpid():
        return None
    if fingerprint(tok) != key:
        del _built[key]
        return None
    return tok


def from_value(
    kind: str, options: dict[str, Any], files: Packed, sums: dict[str, int] | None = None
) -> TokenizerContract:
    """Unpickle by value: the tokenizer this process holds with the fingerprint these files
    claim (one it loaded, or rebuilt from an earlier pickle: checked against its bytes), or
    build it from the bytes themselves, while a second thread checks their CRC-32 (_Placed).
    Nothing is written or hashed: its files are written when something first reads them by
    path, and it is held with its fingerprint to be made from its bytes when first asked for
    (a by-reference lookup that misses, a session's pickle, tok.fingerprint)."""
    _checked(kind, options, files, sums)
    key = identity_key(kind, options, files)
    with _lock:
        tok = _cached(key)
        if tok is not None:
            return tok
    found = held(key, kind)
    if isinstance(found, TokenizerContract):
        return found
    with _lock:
        tok = _cached(key)
        if tok is not None:
            return tok
        placed = _Placed(files, sums)
        if not is_builtin(kind):  # a plugin's kind may open its files itself, now or later: there first
            for path in placed.paths.values():
                on_disk(path)
        spec = TokenizerSpec(kind, placed.paths, options)
        try:
            with reading_given({placed.paths[role]: data for role, (_, _, data) in files.items()}):
                tok = build(spec)
        except BaseException:
            placed.finish()  # a damaged file: that error, not the build's
            placed.withdraw()
            raise
        placed.finish()
        placed.kept_by(tok)
        # Its spec hands its paths out through on_disk: whoever reads them finds the files there.
        if tok.spec is not None:
            object.__setattr__(tok.spec, "files", PromisedPaths(dict(tok.spec.files)))
        tok.__dict__[UNHASHED] = (kind, options, files)  # (identity.py: its fingerprint, from these bytes)
        if sums is not None:
            tok.__dict__["_value_sums"] = sums  # (checked against these bytes: its pickles reuse them)
        hold(tok, this_process_only=True)
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
