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
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from typing import Any, TypeVar

from ..errors import MalformedAssetError
from ..files.assets import MAX_VALUE_BYTES, Packed, identity_key, payload, register_value_reader
from ..spec import TokenizerSpec
from .contract import TokenizerContract
from .registry import build

__all__ = [
    "MAX_VALUE_BYTES",
    "MODES",
    "PickledByValue",
    "by_spec",
    "by_value",
    "clear_cache",
    "register_value_reader",
]

MODES = ("value", "spec")

_lock = threading.Lock()
_built: dict[str, TokenizerContract] = {}  # per-process cache: identity key -> tokenizer
_folder: str | None = None  # this process's private folder for materialised files
_folder_pid: int | None = None

T = TypeVar("T", bound="PickledByValue")


class PickledByValue(TokenizerContract):
    """Copying and pickling: a copy is the tokenizer itself; a pickle carries its files (or
    its spec, with pickle_mode "spec")."""

    #: "value": a pickle carries the spec's files (for workers without the driver's file
    #: system); "spec": only the spec's paths (a shared file system). docs/scale.md.
    pickle_mode: str = "value"

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


def by_spec(tok: T) -> T:
    """Make `tok` pickle by its spec (paths only: for workers that share the file system)."""
    tok.pickle_mode = "spec"
    return tok


def by_value(tok: T) -> T:
    """Make `tok` pickle by value (its files inside the pickle: the default)."""
    tok.pickle_mode = "value"
    return tok


def clear_cache() -> None:
    """Forget the tokenizers this process rebuilt from pickles (their files stay until exit)."""
    with _lock:
        _built.clear()


def reduce_by_value(tok: TokenizerContract) -> tuple[Any, ...]:
    """What Tokenizer.__reduce__ returns by value. The payload is read once per tokenizer and
    kept, so later pickles (a thousand tasks) neither re-read nor need the files."""
    packed = tok.__dict__.get("_value_payload")
    if packed is None:
        # A kind that reads files its spec does not name (found beside another) ships them too.
        spec = tok.__dict__.get("_oasr_value_spec") or tok.spec
        assert spec is not None
        packed = payload(spec)
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


def _materialise(role: str, name: str, digest: str, data: bytes) -> str:
    if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != digest:
        raise MalformedAssetError(
            f"pickled tokenizer file {name!r} (role {role!r}) does not match its SHA-256 {digest}: "
            "the pickle was damaged in transit",
            path=name,
        )
    if os.path.basename(name) != name or name in ("", ".", ".."):
        raise MalformedAssetError(f"pickled tokenizer file name {name!r} is not a plain file name", path=name)
    folder = os.path.join(_private_folder(), digest)
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.part"
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)  # whole or absent, even with threads racing
    return path


def from_value(kind: str, options: dict[str, Any], files: Packed) -> TokenizerContract:
    """Unpickle by value: the cached tokenizer for these files, or build it from them."""
    key = identity_key(kind, options, files)
    with _lock:
        tok = _built.get(key)
        if tok is not None and _folder_pid == os.getpid():
            return tok
        paths = {role: _materialise(role, name, digest, data) for role, (name, digest, data) in files.items()}
        tok = build(TokenizerSpec(kind, paths, options))
        tok.__dict__["_value_payload"] = (kind, options, files)  # re-pickles without reading
        _built[key] = tok
        return tok
