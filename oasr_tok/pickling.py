"""Pickling a tokenizer: by value (its files travel inside the pickle) or by spec (only paths).

docs/scale.md explains the choice. In short:

* ``"value"`` (the default): the pickle carries the bytes of every file of the tokenizer's spec,
  each with its SHA-256. The receiving process writes them once into a private temporary
  folder (content-addressed, removed at exit) and builds the tokenizer from there through the
  registry, like any other spec; the tokenizer is kept in a per-process cache keyed by the
  kind, the options and the files' hashes, so a thousand tasks that each unpickle the same
  tokenizer build it once per worker. Nothing is read from the sender's paths: right for Ray,
  Spark, Dask or Kubernetes workers that do not share the driver's file system.
* ``"spec"``: the pickle is the spec (a few hundred bytes of paths and options); the receiver
  builds from the same paths. Right for a spawn pool on one host or a shared file system.

Choose per tokenizer with ``tok.pickle_mode = "spec"`` (or ``by_spec(tok)`` / ``by_value(tok)``).

The mechanism knows no kind: it reads ``spec.files`` — every kind is built from its spec's files
by its factory, so materialising the same files elsewhere rebuilds the same tokenizer. A file
format that must not travel whole registers a reader for its suffix (``register_value_reader``):
it returns the bytes that stand in for the file. That is the hook for archives and model files
that hold more than a tokenizer: a GGUF must travel as its ``tokenizer.ggml.*`` metadata only,
never its tensors, and a ``.nemo`` archive as its tokenizer members only, never its weights
(see the note at ``register_value_reader``). Files above ``MAX_VALUE_BYTES`` without such a
reader are refused with an error that names them, rather than shipped.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import AssetError, AssetNotFoundError, MalformedAssetError

if TYPE_CHECKING:
    from .base import Tokenizer
    from .spec import TokenizerSpec

__all__ = [
    "MAX_VALUE_BYTES",
    "MODES",
    "by_spec",
    "by_value",
    "clear_cache",
    "content_identity",
    "register_value_reader",
]

MODES = ("value", "spec")

#: The largest file that travels whole by value. Tokenizer assets are a few MB (Qwen3's
#: tokenizer.json is 11 MB); anything far larger is a model file that needs a reader.
MAX_VALUE_BYTES = 64 * 1024 * 1024

#: suffix (lower case, with the dot) -> reader(path) -> (bytes to ship, file name to write).
ValueReader = Callable[[str], "tuple[bytes, str]"]
_READERS: dict[str, ValueReader] = {}

_lock = threading.Lock()
_built: dict[str, Tokenizer] = {}  # per-process cache: identity key -> tokenizer
_folder: str | None = None  # this process's private folder for materialised files
_folder_pid: int | None = None


def register_value_reader(suffix: str, reader: ValueReader) -> None:
    """Ship files ending in `suffix` as `reader(path)` returns them: (bytes, file name).

    For formats that carry more than the tokenizer. The rebuilt spec points at the written
    bytes, so the reader must return a file the kind's factory reads the same way:

    * ``.gguf``: a GGUF holding the ``tokenizer.ggml.*`` (and ``general.*``) metadata and no
      tensors — the vocabulary-only files llama.cpp ships in models/ are exactly that.
    * ``.nemo``: a tar archive with only the tokenizer members (the SentencePiece model or
      vocab files and model_config.yaml), never model_weights.ckpt.

    The gguf kind registers ``.gguf`` when its module is imported; a ``.nemo`` member (a spec
    file ``archive.nemo#member``) always travels as that member alone."""
    if not suffix.startswith(".") or not callable(reader):
        raise ValueError(f"register_value_reader needs a suffix like '.gguf' and a callable, got {suffix!r}")
    _READERS[suffix.lower()] = reader


def by_spec(tok: Tokenizer) -> Tokenizer:
    """Make `tok` pickle by its spec (paths only: for workers that share the file system)."""
    tok.pickle_mode = "spec"
    return tok


def by_value(tok: Tokenizer) -> Tokenizer:
    """Make `tok` pickle by value (its files inside the pickle: the default)."""
    tok.pickle_mode = "value"
    return tok


def clear_cache() -> None:
    """Forget the tokenizers this process rebuilt from pickles (their files stay until exit)."""
    with _lock:
        _built.clear()


# -- the sending side -----------------------------------------------------------------------


def _read_for_value(role: str, path: str) -> tuple[bytes, str]:
    from .archive import LABELS_SELECTOR, read_member, split_member

    member = split_member(path)
    if member is not None:
        # A member of a .nemo archive travels as the member alone (never the archive's weights).
        name = member[1][: -len(LABELS_SELECTOR)] + ".labels.txt" if member[1].endswith(LABELS_SELECTOR) else member[1]
        return read_member(path, f"file for role {role!r}"), os.path.basename(name)
    name = os.path.basename(path)
    reader = _READERS.get(os.path.splitext(name)[1].lower())
    if reader is not None:
        return reader(path)
    try:
        size = os.path.getsize(path)
        if size > MAX_VALUE_BYTES:
            raise AssetError(
                f"{path} (role {role!r}) is {size} bytes, more than a tokenizer asset travels by value "
                f"({MAX_VALUE_BYTES}); pickle by spec on a shared file system (tok.pickle_mode = 'spec') "
                "or register a reader that ships only the tokenizer part (oasr_tok.pickling.register_value_reader)",
                path=path,
            )
        with open(path, "rb") as handle:
            return handle.read(), name
    except OSError as exc:
        raise AssetNotFoundError(
            f"cannot pickle by value: {path} (role {role!r}) is not readable ({exc.strerror or exc}); "
            "a tokenizer reads its files once when first pickled by value",
            path=path,
        ) from None


def payload(spec: TokenizerSpec) -> tuple[str, dict[str, Any], dict[str, tuple[str, str, bytes]]]:
    """(kind, options, {role: (file name, sha256, bytes)}) for `spec`."""
    files = {}
    for role, path in spec.files.items():
        data, name = _read_for_value(role, path)
        files[role] = (name, hashlib.sha256(data).hexdigest(), data)
    return spec.kind, dict(spec.options), files


def content_identity(spec: TokenizerSpec) -> str:
    """A fingerprint of what `spec` builds: its kind, options, and each file's name and
    SHA-256 as it would travel by value, never its paths. A tokenizer rebuilt from copies of
    the same files elsewhere (a worker's) has the same identity."""
    files = {}
    for role, path in spec.files.items():
        data, name = _read_for_value(role, path)
        files[role] = (name, hashlib.sha256(data).hexdigest(), b"")
    return _identity(spec.kind, dict(spec.options), files)


def reduce_by_value(tok: Tokenizer) -> tuple[Any, ...]:
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


def _identity(kind: str, options: dict[str, Any], files: dict[str, tuple[str, str, bytes]]) -> str:
    described = json.dumps(
        [kind, options, sorted((role, name, digest) for role, (name, digest, _) in files.items())], sort_keys=True
    )
    return hashlib.sha256(described.encode("utf-8")).hexdigest()


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


def from_value(kind: str, options: dict[str, Any], files: dict[str, tuple[str, str, bytes]]) -> Tokenizer:
    """Unpickle by value: the cached tokenizer for these files, or build it from them."""
    from .registry import build_tokenizer
    from .spec import TokenizerSpec

    key = _identity(kind, options, files)
    with _lock:
        tok = _built.get(key)
        if tok is not None and _folder_pid == os.getpid():
            return tok
        paths = {role: _materialise(role, name, digest, data) for role, (name, digest, data) in files.items()}
        tok = build_tokenizer(TokenizerSpec(kind, paths, options))
        tok.__dict__["_value_payload"] = (kind, options, files)  # re-pickles without reading
        _built[key] = tok
        return tok
