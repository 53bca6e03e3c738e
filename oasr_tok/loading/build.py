"""`build_tokenizer`: a spec in, the tokenizer its kind's factory makes out."""

from __future__ import annotations

from ..core import registry
from ..core.tokenizer import Tokenizer
from ..errors import RegistryError
from ..spec import TokenizerSpec

__all__ = ["build_tokenizer"]


def build_tokenizer(spec: TokenizerSpec) -> Tokenizer:
    """Build the tokenizer a spec describes, resolving its kind through the registry."""
    tokenizer = registry.build(spec)
    if not isinstance(tokenizer, Tokenizer):
        raise RegistryError(
            f"the factory for kind {spec.kind!r} returned {type(tokenizer).__name__}, not an oasr_tok.Tokenizer"
        )
    return tokenizer
