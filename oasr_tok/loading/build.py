"""`build_tokenizer`: a spec in, the tokenizer its kind's factory makes out."""

from __future__ import annotations

from typing import cast

from ..core import registry
from ..core.tokenizer import Tokenizer
from ..spec import TokenizerSpec

__all__ = ["build_tokenizer"]


def build_tokenizer(spec: TokenizerSpec) -> Tokenizer:
    """Build the tokenizer a spec describes, resolving its kind through the registry (which
    checks what the factory made: core/registry.py's build)."""
    # The registry, a room below Tokenizer's mixins, checks the contract every kind subclasses
    # through Tokenizer (docs/architecture.md § Adding a kind).
    return cast(Tokenizer, registry.build(spec))
