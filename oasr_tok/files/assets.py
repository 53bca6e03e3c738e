"""A spec's files as bytes: what a by-value pickle carries, and what fingerprints a tokenizer.

Every kind is built from its spec's files by its factory, so the files' contents (not their
paths) say what a spec builds: `content_identity` hashes them into a tokenizer's fingerprint
(core/identity.py: what names it across processes, and tags its stream states) and `payload`
packs them for pickles by value (pickling.py; docs/scale.md). Both read the files after the
tokenizer was built (lazily: a load hashes nothing), so both compare each file with the size and
modification time `file_marks` noted when it was built, and refuse a file that changed since
rather than name or ship other bytes than the ones that made it.

A file format that must not travel whole registers a reader for its suffix
(`register_value_reader`): it returns the bytes that stand in for the file. That is the hook for
archives and model files that hold more than a tokenizer: a GGUF travels as its
``tokenizer.ggml.*`` metadata only, never its tensors, and a ``.nemo`` archive as its tokenizer
members only, never its weights. Files above ``MAX_VALUE_BYTES`` without such a reader are
refused with an error that names them, rather than shipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import AssetError, AssetNotFoundError
from .archive import LABELS_SELECTOR, read_member, split_member

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

__all__ = [
    "MAX_VALUE_BYTES",
    "Marks",
    "content_identity",
    "file_marks",
    "hashed",
    "identity_key",
    "payload",
    "register_value_reader",
]

#: The largest file that travels whole by value. Tokenizer assets are a few MB (Qwen3's
#: tokenizer.json is 11 MB); anything far larger is a model file that needs a reader.
MAX_VALUE_BYTES = 64 * 1024 * 1024

#: suffix (lower case, with the dot) -> reader(path) -> (bytes to ship, file name to write).
ValueReader = Callable[[str], "tuple[bytes, str]"]
_READERS: dict[str, ValueReader] = {}

#: What `payload` returns per role: (file name, SHA-256 hex digest, bytes).
Packed = dict[str, tuple[str, str, bytes]]

#: What `file_marks` notes per file on disk: its path -> (size, modification time in ns).
Marks = dict[str, tuple[int, int]]


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


def _on_disk(path: str) -> str:
    """The file on disk a spec path reads (an archive member's archive)."""
    member = split_member(path)
    return member[0] if member is not None else path


def file_marks(spec: TokenizerSpec) -> Marks:
    """Each of the spec's files as it is now: (size, modification time in ns), one stat a file
    (what a tokenizer notes when it is built; a file that cannot be read is left out)."""
    marks: Marks = {}
    for path in spec.files.values():
        where = _on_disk(path)
        try:
            found = os.stat(where)
        except (OSError, ValueError):
            continue
        marks[where] = (found.st_size, found.st_mtime_ns)
    return marks


def _check_unchanged(role: str, path: str, marks: Marks | None) -> None:
    where = _on_disk(path)
    if not marks or where not in marks:
        return
    try:
        found = os.stat(where)
    except OSError:
        return  # gone: reading it says so, naming it
    if (found.st_size, found.st_mtime_ns) != marks[where]:
        raise AssetError(
            f"{where} (role {role!r}) changed after this tokenizer was built from it: its bytes are no longer the "
            "ones that made it, so they can neither name it nor travel as it; load the tokenizer again",
            path=where,
        )


def read_for_value(role: str, path: str, marks: Marks | None = None) -> tuple[bytes, str]:
    """The bytes that stand for the file of `role` at `path`, and the file name to write them to.
    With `marks` (file_marks when the tokenizer was built), a file that changed since is refused."""
    _check_unchanged(role, path, marks)
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
                "or register a reader that ships only the tokenizer part (oasr_tok.core.pickling.register_value_reader)",
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


def payload(spec: TokenizerSpec, marks: Marks | None = None) -> tuple[str, dict[str, Any], Packed]:
    """(kind, options, {role: (file name, sha256, bytes)}) for `spec` (its files checked
    against `marks`, as read_for_value does)."""
    files = {}
    for role, path in spec.files.items():
        data, name = read_for_value(role, path, marks)
        files[role] = (name, hashlib.sha256(data).hexdigest(), data)
    return spec.kind, dict(spec.options), files


def hashed(files: Packed) -> Packed:
    """`files` with the SHA-256 of their own bytes in place of the digests they came with (a
    by-value pickle's digests are claims: a tokenizer's fingerprint is made from its bytes)."""
    return {role: (name, hashlib.sha256(data).hexdigest(), data) for role, (name, _, data) in files.items()}


def identity_key(kind: str, options: dict[str, Any], files: Packed) -> str:
    """The fingerprint of a kind, its options and its files' names and hashes (never paths)."""
    described = json.dumps(
        [kind, options, sorted((role, name, digest) for role, (name, digest, _) in files.items())], sort_keys=True
    )
    return hashlib.sha256(described.encode("utf-8")).hexdigest()


def content_identity(spec: TokenizerSpec, marks: Marks | None = None) -> str:
    """A fingerprint of what `spec` builds: its kind, options, and each file's name and
    SHA-256 as it would travel by value, never its paths. A tokenizer rebuilt from copies of
    the same files elsewhere (a worker's) has the same identity; identity_key of its by-value
    payload is the same string."""
    files = {}
    for role, path in spec.files.items():
        data, name = read_for_value(role, path, marks)
        files[role] = (name, hashlib.sha256(data).hexdigest(), b"")
    return identity_key(spec.kind, dict(spec.options), files)
