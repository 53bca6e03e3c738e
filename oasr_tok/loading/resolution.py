"""Resolve a checkpoint's tokenizer from its own side files, by evidence, in one order.

Users point at a model directory (or one file), not at a spec. `resolve(path)` looks at the
files that are there and returns the `TokenizerSpec` they describe; `load(path)` builds it;
`describe(path)` (description.py) is the dry run that says what was chosen, from which files,
and why the other candidates lost.

Resolution knows no format. It asks, in the order of evidence:

1. ``tokenizer_spec.json``: an explicit spec the library wrote (``TokenizerSpec.to_dict``), or
   a single JSON file holding one — always first;
2. every registered kind's detector (registry.py: built-in kinds and plug-ins alike), by the
   precedence its registry entry declares, then the containers (a ``.nemo`` archive);

and keeps every find. The first find in that order wins (among several finds of one kind,
the kind's own order: bpe.model before another *.model); the others are reported as having
lost, with the reason, and the files a detector looked at and refused as set aside.

A file with one of the exact conventional names that cannot be parsed raises (naming the file
and line): silently falling through to weaker evidence would build the wrong tokenizer. A
loosely matched file (``*.model``) that is not what its name suggests is set aside with the
reason and resolution goes on. Directories are not searched recursively.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ..core.registry import DetectorEntry, available_kinds, detectors
from ..core.tokenizer import Tokenizer
from ..errors import AssetNotFoundError, ResolveError, SpecError, TokenizerError, UnknownKindError
from ..files.archive import is_archive_ref
from ..files.detection import SPEC_FILE, Detected, Found, SetAside, folder_names, normalise
from ..files.readers import read_json, reading_once
from ..spec import TokenizerSpec
from .build import build_tokenizer

__all__ = ["SPEC_FILE", "Candidate", "Resolution", "evidence_order", "load", "resolve"]


@dataclass
class Candidate:
    """One tokenizer the files could describe: a detector's find and where it stands in the
    order of evidence (`rank`: lower wins)."""

    kind: str
    files: dict[str, str]
    options: dict[str, Any]
    rank: tuple[int, int]
    source: str  # the file (or files) that are the evidence, as the user sees them
    evidence: list[tuple[str, str]] = field(default_factory=list)  # (about, reason)
    notes: list[str] = field(default_factory=list)
    found_by: str = ""  # the detector: a kind, a container, or the explicit spec
    origin: str = ""  # the explicit spec's own file, when it came from one

    def spec(self) -> TokenizerSpec:
        return TokenizerSpec(self.kind, self.files, self.options)


@dataclass
class Resolution:
    """The outcome of resolution: the chosen candidate, the ones that lost, the files set aside."""

    path: str
    chosen: Candidate
    lost: list[Candidate]
    rejected: list[tuple[str, str]]
    seen: list[str]

    @property
    def spec(self) -> TokenizerSpec:
        return self.chosen.spec()


def _spec_candidate(path: str) -> Candidate:
    data = read_json(path, SPEC_FILE)
    base = os.path.dirname(os.path.abspath(path))
    try:
        spec = TokenizerSpec.from_dict(data, base_dir=base)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
    files = {role: os.path.abspath(p) for role, p in spec.files.items()}
    for role, p in files.items():
        if not os.path.isfile(p) and not is_archive_ref(p):  # a .nemo member names itself (archive.py)
            raise AssetNotFoundError(f"{path}: file for role {role!r} not found: {p!r}", path=p)
    name = os.path.basename(path)
    if spec.kind not in available_kinds():
        raise UnknownKindError(
            f"{path}: unknown tokenizer kind {spec.kind!r}; known kinds: {', '.join(available_kinds())}"
        )
    cand = Candidate(spec.kind, files, dict(spec.options), (0, 0), name, found_by=SPEC_FILE, origin=path)
    cand.evidence.append(("kind", f"{spec.kind}: named by {name}, an explicit spec (always first)"))
    if spec.options:
        cand.evidence.append(("options", f"as written in the spec: {json.dumps(spec.options)[:200]}"))
    return cand


def _explicit_spec(path: str) -> Candidate | None:
    if os.path.isdir(path):
        return _spec_candidate(os.path.join(path, SPEC_FILE)) if SPEC_FILE in folder_names(path) else None
    if path.endswith(".json"):
        data = read_json(path, os.path.basename(path))
        if isinstance(data, dict) and "kind" in data:
            return _spec_candidate(path)
    return None


def _ask(entry: DetectorEntry, path: str) -> list[Detected]:
    try:
        answer = entry.detect(path)
    except TokenizerError:
        raise
    except Exception as exc:
        if entry.builtin:
            raise
        raise ResolveError(
            f"the detector of tokenizer kind {entry.name!r} failed on {path!r}: {type(exc).__name__}: {exc}"
        ) from exc
    return normalise(entry.name, answer, path)


def _candidate(found: Found, entry: DetectorEntry) -> Candidate:
    if found.kind != entry.name and entry.name in available_kinds():
        raise ResolveError(f"the detector of kind {entry.name!r} reported files of kind {found.kind!r}")
    return Candidate(
        found.kind,
        dict(found.files),
        dict(found.options),
        (entry.precedence, found.order),
        found.source,
        list(found.evidence),
        list(found.notes),
        entry.name,
    )


def evidence_order() -> list[str]:
    """What resolution recognises, in its order: the first line of each detector's docstring."""
    lines = [f"{SPEC_FILE} (any kind)"]
    for entry in detectors():
        doc = (getattr(entry.load(), "__doc__", None) or "").strip()
        first = " ".join(doc.split(". ")[0].split()) if doc else "its own detector"
        lines.append(f"{entry.name}: {first}")
    return lines


def _resolution(path: str | os.PathLike[str], every_detector: bool = True) -> Resolution:
    """What the evidence at `path` says. Without every_detector (load and resolve), the
    detectors after the first find are asked only while one could still outrank it: a
    detector ranked below imports its kind's module for nothing (a visible part of a load),
    and a file it would refuse is one the chosen kind does not read. describe asks all."""
    path = os.path.abspath(os.fspath(path))
    if os.path.isdir(path):
        seen = list(folder_names(path))
    elif os.path.isfile(path):
        seen = [os.path.basename(path)]
    else:
        raise AssetNotFoundError(f"no such file or directory: {path!r}", path=path)
    candidates: list[Candidate] = []
    rejected: list[tuple[str, str]] = []
    explicit = _explicit_spec(path)
    if explicit is not None:
        candidates.append(explicit)
    for entry in detectors():
        if not every_detector and candidates and entry.precedence > min(c.rank[0] for c in candidates):
            break  # (detectors() is in the order of evidence: none after this can win)
        for item in _ask(entry, path):
            if isinstance(item, SetAside):
                rejected.append((item.file, item.reason))
            else:
                candidates.append(_candidate(item, entry))
    if not candidates and not rejected and not os.path.isdir(path) and path.endswith(".json"):
        rejected.append((seen[0], "JSON that is neither a spec, a tokenizer.json nor a token list"))
    if not candidates:
        set_aside = "".join(f"\n  {name}: {why}" for name, why in rejected)
        raise ResolveError(
            f"cannot tell which tokenizer {path!r} uses. Files seen: {', '.join(seen) or 'none'}."
            + (f"\nSet aside:{set_aside}" if set_aside else "")
            + "\nRecognised evidence, in order: "
            + "; ".join(evidence_order())
            + f".\nKnown kinds: {', '.join(available_kinds())}. Write a {SPEC_FILE} "
            "(TokenizerSpec.to_dict(relative_to=folder)) to name one explicitly."
        )
    candidates.sort(key=lambda c: c.rank)
    return Resolution(path, candidates[0], candidates[1:], rejected, seen)


def why_lost(loser: Candidate, winner: Candidate) -> str:
    """Why `loser` did not win: the order of evidence, in a sentence."""
    if winner.found_by == SPEC_FILE:
        return f"{winner.source} is an explicit spec, which always comes first"
    if winner.kind == "tekken" and loser.rank[0] != winner.rank[0]:
        return f"{winner.source} is the file mistral-common loads, so it ranks before {loser.source}"
    if loser.found_by == winner.found_by:
        return f"{winner.source} is preferred to {loser.source} for the same kind of evidence"
    return (
        f"{winner.source} ({winner.kind}, found by the {winner.found_by} detector, precedence {winner.rank[0]}) "
        f"comes before {loser.source} ({loser.kind}, the {loser.found_by} detector, precedence {loser.rank[0]}) "
        "in the order of evidence"
    )


# -- public API ---------------------------------------------------------------------------------


def resolve(path: str | os.PathLike[str]) -> TokenizerSpec:
    """The TokenizerSpec a checkpoint directory (or a single tokenizer file) describes, with
    absolute file paths. ResolveError names the files seen and the kinds known when nothing
    fits; a malformed conventional file raises its own AssetError naming file and line."""
    with reading_once():
        return _resolution(path, every_detector=False).spec


def load(path: str | os.PathLike[str]) -> Tokenizer:
    """The tokenizer of a checkpoint folder or a tokenizer file: build_tokenizer(resolve(path)).
    An explicit spec file's bad options are its errors: they name it.

    Args:
        path: a folder (its side files are read in a fixed order of evidence: describe(path)
            says what was found and why), a tokenizer file, a .nemo archive, or a
            tokenizer_spec.json.

    Returns:
        The Tokenizer of the kind the evidence names.

    Example:
        >>> from oasr_tok.demo import DATA
        >>> oasr_tok.load(DATA / "whisper")
        <WhisperTokenizer kind='whisper' vocab_size=...>
    """
    with reading_once():
        chosen = _resolution(path, every_detector=False).chosen
        try:
            return build_tokenizer(chosen.spec())
        except (SpecError, UnknownKindError) as exc:
            if not chosen.origin or str(exc).startswith(chosen.origin):
                raise
            raise type(exc)(f"{chosen.origin}: {exc}") from None
