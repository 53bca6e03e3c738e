"""What names a tokenizer across processes: its fingerprint (docs/scale.md § Streams that travel).

* **The fingerprint** is the SHA-256 of the tokenizer's kind, its options and each file's name
  and SHA-256 (files/assets.py's identity_key: the key its by-value pickles are cached under),
  never a path: every process that loads the same files gets the same string. A
  with_specials() view renders differently from its tokenizer, so it has its own, made from
  its tokenizer's.
* **Lazily, once.** A load hashes nothing: the fingerprint is computed the first time it is
  asked for (a session pickled by reference, a lookup that missed, a dict state's tag) and
  kept. A tokenizer rebuilt from a by-value pickle hashes the bytes it was built from then
  (never trusting the digests the pickle claims: core/pickling.py), so its unpickling hashes
  nothing; one pickled by value reuses the payload it read. Hashing a vocabulary's files
  costs a small part of loading them (benchmarks/measurements.md), once per process.
* **Checked against the files that made it.** Because the files are read after the build, the
  build notes each file's size and modification time (one stat a file: `file_marks`), and a
  fingerprint or a by-value payload made later refuses a file that changed since.
* **Held.** Every tokenizer built from a spec is counted among this process's tokenizers
  (weakly: _engine/travel.py's `hold`), which is where a session pickled by reference finds it.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from .._engine.travel import hold
from ..files.assets import content_identity, file_marks, hashed, identity_key

if TYPE_CHECKING:
    from ..spec import TokenizerSpec

__all__ = ["UNHASHED", "built_from", "fingerprint", "value_spec"]

# What a tokenizer keeps in its __dict__ (every key derived from its spec goes when the spec is set again).
_SPEC = "_oasr_spec"
_MARKS = "_oasr_marks"
_PRINT = "_oasr_fingerprint"
#: A tokenizer rebuilt from a by-value pickle, not fingerprinted yet: (kind, options, files) as
#: the pickle brought them, their digests unchecked (hashed by `fingerprint`).
UNHASHED = "_oasr_unhashed"
_DERIVED = (_MARKS, _PRINT, UNHASHED, "_value_payload", "_value_sums", "_oasr_reference_ticket", "_oasr_stream_tag")


def built_from(tok: Any, spec: TokenizerSpec | None) -> None:
    """`tok` was built from `spec` (what setting tok.spec does): its files' marks are noted and
    the tokenizer is held by this process."""
    own = tok.__dict__
    if own.get(_SPEC) is spec:
        return
    for key in _DERIVED:
        own.pop(key, None)
    own[_SPEC] = spec
    if spec is not None:
        own[_MARKS] = file_marks(spec)
        hold(tok)


def value_spec(tok: Any) -> TokenizerSpec | None:
    """The spec whose files stand for `tok` (a kind that reads files its spec does not name,
    found beside another, names them all in _oasr_value_spec)."""
    spec: TokenizerSpec | None = tok.__dict__.get("_oasr_value_spec") or tok.spec
    return spec


def fingerprint(tok: Any) -> str:
    """The fingerprint of `tok` (computed the first time, then kept). TypeError for a tokenizer
    not built from a TokenizerSpec; AssetError when a file is gone or changed since the build."""
    own = tok.__dict__
    printed: str | None = own.get(_PRINT)
    if printed is not None:
        return printed
    parent = own.get("_oasr_specials_of")
    unhashed = own.get(UNHASHED)
    if unhashed is not None:  # built from a by-value pickle: its bytes say what it is, not its digests
        kind, options, files = unhashed
        own["_value_payload"] = (kind, options, hashed(files))
        own.pop(UNHASHED, None)
    packed = own.get("_value_payload")
    if parent is not None:
        printed = hashlib.sha256(f"with_specials {fingerprint(parent)}".encode()).hexdigest()
    elif packed is not None:
        printed = identity_key(*packed)
    else:
        spec = value_spec(tok)
        if spec is None:
            raise TypeError(f"{type(tok).__name__} was not built from a TokenizerSpec: it has no fingerprint")
        printed = content_identity(spec, own.get(_MARKS))
    own[_PRINT] = printed
    return printed
