"""What `describe(path)` reports: the dry run of `load` — what would be built, from which
files, and why (the evidence resolution collected in oasr_tok.loading.resolution), plus what the built
tokenizer says of itself (special tokens, stop ids, chat templates). Text for people
(`oasr-tok describe`), a dict for `--json`."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import TokenizerError
from ..files.readers import reading_once
from .resolution import _resolution, why_lost

if TYPE_CHECKING:
    from ..core.tokenizer import Tokenizer

__all__ = ["Description", "describe"]


def _ranges(ids: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


@dataclass
class Description:
    """The dry run of `load`: what would be built, from which files, and why."""

    path: str
    kind: str
    files: dict[str, str]
    options: dict[str, Any]
    vocab_size: int | None
    special_ids: list[int]
    special_pieces: dict[int, str]
    supports_encode: bool | None
    evidence: list[tuple[str, str]]
    lost: list[dict[str, Any]]
    rejected: list[tuple[str, str]]
    seen: list[str]
    notes: list[str]
    error: str | None = None
    #: role -> {"id", "piece", "source"} for every role the tokenizer has (docs/prompts.md)
    special_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: [{"id", "piece", "source"}] sorted by id
    stop_ids: list[dict[str, Any]] = field(default_factory=list)
    #: names of the chat templates the checkpoint ships ("default" for the unnamed one)
    chat_templates: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able. Special ids are given as inclusive [first, last] ranges plus a count."""
        return {
            "path": self.path,
            "kind": self.kind,
            "files": dict(self.files),
            "options": json.loads(json.dumps(self.options)),
            "vocab_size": self.vocab_size,
            "special_ids": {
                "count": len(self.special_ids),
                "ranges": _ranges(self.special_ids),
                "pieces": {str(i): p for i, p in self.special_pieces.items()},
            },
            "supports_encode": self.supports_encode,
            "evidence": [{"about": about, "reason": reason} for about, reason in self.evidence],
            "lost": [dict(entry) for entry in self.lost],
            "set_aside": [{"file": name, "reason": why} for name, why in self.rejected],
            "files_seen": list(self.seen),
            "notes": list(self.notes),
            "error": self.error,
            "special_tokens": {role: dict(entry) for role, entry in self.special_tokens.items()},
            "stop_ids": [dict(entry) for entry in self.stop_ids],
            "chat_templates": list(self.chat_templates),
        }

    def text(self) -> str:
        lines = [f"{self.path}", f"  kind:          {self.kind}"]
        for role, p in self.files.items():
            lines.append(f"  {'file ' + role + ':':<14} {p}")
        if self.options:
            shown = json.dumps(self.options)
            lines.append(f"  {'options:':<14} {shown if len(shown) <= 120 else shown[:117] + '...'}")
        lines.append(f"  vocab size:    {self.vocab_size if self.vocab_size is not None else '?'}")
        spans = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in _ranges(self.special_ids)[:12])
        more = " …" if len(_ranges(self.special_ids)) > 12 else ""
        lines.append(f"  special ids:   {len(self.special_ids)}: {spans}{more}")
        if self.special_pieces:
            named = ", ".join(f"{i} {p}" for i, p in list(self.special_pieces.items())[:12])
            lines.append(f"                 ({named}{' …' if len(self.special_pieces) > 12 else ''})")
        if self.special_tokens:
            lines.append("  special tokens:")
            for role, entry in self.special_tokens.items():
                lines.append(f"    {role + ':':<5} {entry['id']} {entry['piece']!r} ({entry['source']})")
        if self.stop_ids:
            shown = ", ".join(f"{e['id']} {e['piece']!r}" for e in self.stop_ids)
            lines.append(f"  stop ids:      {shown}")
            lines.extend(f"    {e['id']}: {e['source']}" for e in self.stop_ids)
        if self.chat_templates:
            lines.append(f"  chat template: {', '.join(self.chat_templates)}")
        encode = {True: "yes", False: "no (decode-only)", None: "?"}[self.supports_encode]
        lines.append(f"  encode:        {encode}")
        lines.append("  evidence:")
        lines.extend(f"    {about}: {reason}" for about, reason in self.evidence)
        if self.lost:
            lines.append("  also fit, but lost:")
            lines.extend(f"    {e['kind']} from {e['source']}: {e['reason']}" for e in self.lost)
        if self.rejected:
            lines.append("  set aside:")
            lines.extend(f"    {name}: {why}" for name, why in self.rejected)
        if self.notes:
            lines.append("  notes:")
            lines.extend(f"    {note}" for note in self.notes)
        if self.error:
            lines.append(f"  ERROR building it: {self.error}")
        return "\n".join(lines)

    __str__ = text


def describe(path: str | os.PathLike[str]) -> Description:
    """Resolve `path`, build the tokenizer and say what it is and why. A tokenizer that
    resolves but fails to build is described with `error` set (resolution errors raise)."""
    with reading_once():
        return _describe(path)


def _describe(path: str | os.PathLike[str]) -> Description:
    from ..errors import PiecesNotSupportedError
    from .build import build_tokenizer

    res = _resolution(path)
    chosen = res.chosen
    notes = list(chosen.notes)
    vocab_size = supports_encode = None
    special: list[int] = []
    pieces: dict[int, str] = {}
    roles: dict[str, dict[str, Any]] = {}
    stops: list[dict[str, Any]] = []
    templates: list[str] = []
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tok = build_tokenizer(res.spec)
        except (TokenizerError, ImportError, OSError) as exc:
            # A resolved tokenizer that cannot be built (backend missing, bad asset) is
            # described, not raised: the dry run's job is to say so.
            origin = res.chosen.origin  # an explicit spec file's bad options name it
            named = f"{origin}: " if origin and not str(exc).startswith(origin) else ""
            error = f"{type(exc).__name__}: {named}{exc}"
        else:
            vocab_size, supports_encode = tok.vocab_size, tok.supports_encode
            special = sorted(tok.special_ids)
            try:
                pieces = {i: tok.id_to_piece(i) for i in special[:16]}
            except PiecesNotSupportedError:
                notes.append(f"the {chosen.kind} kind does not spell ids as pieces (no id_to_piece)")
            try:
                roles, stops, templates = _prompt_side(tok)
            except (TokenizerError, OSError) as exc:
                notes.append(f"special tokens / chat templates unreadable: {type(exc).__name__}: {exc}")
    notes.extend(f"warning while building: {w.message}" for w in caught)
    lost = [
        {"kind": c.kind, "source": c.source, "files": dict(c.files), "reason": why_lost(c, chosen)} for c in res.lost
    ]
    evidence = list(chosen.evidence)
    evidence.insert(1, ("files", ", ".join(f"{role} = {os.path.basename(p)}" for role, p in chosen.files.items())))
    if supports_encode is not None:
        evidence.append(("encode", f"the {chosen.kind} kind {'can' if supports_encode else 'cannot'} encode text"))
        details = getattr(tok, "describe_details", None)
        if callable(details):  # kinds that carry metadata of their own (gguf)
            evidence.extend((about, str(value)) for about, value in details().items())
    return Description(
        path=res.path,
        kind=chosen.kind,
        files=dict(chosen.files),
        options=dict(chosen.options),
        vocab_size=vocab_size,
        special_ids=special,
        special_pieces=pieces,
        supports_encode=supports_encode,
        evidence=evidence,
        lost=lost,
        rejected=res.rejected,
        seen=res.seen,
        notes=notes,
        error=error,
        special_tokens=roles,
        stop_ids=stops,
        chat_templates=templates,
    )


def _prompt_side(tok: Tokenizer) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The special tokens (role -> id, piece, source), stop ids and chat template names of `tok`."""
    from ..core.specials import ROLES
    from ..errors import PiecesNotSupportedError

    def piece(token_id: int) -> str:
        try:
            return tok.id_to_piece(token_id)
        except PiecesNotSupportedError:
            return ""

    specials = tok.special_tokens
    roles = {}
    for role in ROLES:
        token_id = specials.id_of(role)
        if token_id is not None:
            roles[role] = {"id": token_id, "piece": piece(token_id), "source": specials.source(role) or ""}
    stops = [
        {"id": i, "piece": piece(i), "source": specials.source(f"stop:{i}") or ""} for i in sorted(specials.stop_ids)
    ]
    return roles, stops, list(tok.chat_templates)
