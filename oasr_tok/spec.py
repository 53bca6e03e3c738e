"""TokenizerSpec: which kind, which files, which options. Data, never guessed from paths."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import SpecError

__all__ = ["TokenizerSpec"]

_KEYS = {"kind", "files", "options"}


@dataclass(frozen=True, eq=True)
class TokenizerSpec:
    """A tokenizer described as data: `kind` (a registry name), `files` (role -> path) and
    `options` (JSON-able settings). A checkpoint converter writes `to_dict()` beside the
    weights; `from_dict()` reads it back."""

    kind: str
    files: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    __hash__ = None  # type: ignore[assignment]  # files/options are mutable mappings

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise SpecError(f"TokenizerSpec.kind must be a non-empty string, got {self.kind!r}")
        if not isinstance(self.files, Mapping):
            raise SpecError(f"TokenizerSpec.files must map a role to a path, got {type(self.files).__name__}")
        files: dict[str, str] = {}
        for role, path in self.files.items():
            if not isinstance(role, str) or not role:
                raise SpecError(f"TokenizerSpec.files: role {role!r} must be a non-empty string")
            if not isinstance(path, (str, os.PathLike)):
                raise SpecError(f"TokenizerSpec.files[{role!r}] must be a path, got {type(path).__name__}")
            files[role] = os.fspath(path)
        if not isinstance(self.options, Mapping):
            raise SpecError(f"TokenizerSpec.options must be a mapping, got {type(self.options).__name__}")
        options = dict(self.options)
        try:
            json.dumps(options)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"TokenizerSpec.options must be JSON-able: {exc}") from None
        object.__setattr__(self, "files", files)
        object.__setattr__(self, "options", options)

    def file(self, role: str) -> str:
        """The path for `role`; a SpecError naming the roles present if it is missing."""
        try:
            return self.files[role]
        except KeyError:
            raise SpecError(
                f"the {self.kind!r} tokenizer needs a file for role {role!r}; "
                f"the spec has {sorted(self.files) or 'no files'}"
            ) from None

    def to_dict(self, relative_to: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """A JSON-able dict. With `relative_to`, file paths are written relative to that folder
        (so the spec can travel with the checkpoint)."""
        files = dict(self.files)
        if relative_to is not None:
            base = os.path.abspath(relative_to)
            files = {role: os.path.relpath(os.path.abspath(p), base) for role, p in files.items()}
        return {"kind": self.kind, "files": files, "options": json.loads(json.dumps(self.options))}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base_dir: str | os.PathLike[str] | None = None) -> TokenizerSpec:
        """The inverse of `to_dict`. Relative file paths are joined to `base_dir` when given."""
        if not isinstance(data, Mapping):
            raise SpecError(f"a tokenizer spec must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - _KEYS
        if unknown:
            raise SpecError(f"unknown keys in tokenizer spec: {sorted(unknown)}; expected {sorted(_KEYS)}")
        if "kind" not in data:
            raise SpecError("a tokenizer spec needs a 'kind'")
        files = data.get("files") or {}
        if not isinstance(files, Mapping):
            raise SpecError(f"'files' must be an object mapping a role to a path, got {type(files).__name__}")
        if base_dir is not None:
            files = {
                r: os.path.join(os.fspath(base_dir), p) if isinstance(p, str) and not os.path.isabs(p) else p
                for r, p in files.items()
            }
        return cls(kind=data["kind"], files=files, options=data.get("options") or {})
