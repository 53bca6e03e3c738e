"""The contract suite a kind author runs on their own kind (docs/architecture.md § Adding a kind):
subclass `KindContract` in a test module, give it the tokenizer and the reference library's
decode, and every contract of docs/decoding.md runs on it under pytest, on streams hypothesis
draws (`id_streams`, with the vocabulary's `HostileIds`). The project's own kinds run through
the same class (tests/testing/test_every_kind.py).

``import oasr_tok`` never imports this room; it needs pytest and hypothesis:
``pip install 'oasr_tok[testing]'``.
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401
    import pytest  # noqa: F401
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        f"oasr_tok.testing needs pytest and hypothesis ({exc.name} is missing): pip install 'oasr_tok[testing]'"
    ) from exc

from .contract import FORGED, KindContract
from .strategies import HostileIds, id_streams, splits

__all__ = ["FORGED", "HostileIds", "KindContract", "id_streams", "splits"]
