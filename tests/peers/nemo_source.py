"""NeMo's own tokenizer classes, loaded by file path from the modules fixtures/fetch_nemo.py
unpacks (nemo_toolkit, never installed: it pulls torch). Their imports that are not about
tokens get stand-ins while they load: torch (only `torch.Tensor`, for isinstance checks of
inputs we never pass), NeMo's logging, `if_exist`; chat_template_mixin.py and
tokenizer_spec.py are NeMo's own files."""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from functools import cache
from typing import Any

from peer_files import nemo_tokenizers

_PACKAGE = "nemo.collections.common.tokenizers"


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


@cache
def nemo_classes() -> dict[str, Any]:
    """{"SentencePieceTokenizer", "AggregateTokenizer", "CanaryTokenizer", "TokenizerSpec",
    "create_spt_model"}."""
    folder = nemo_tokenizers()
    torch = _module("torch", Tensor=type("Tensor", (), {}))
    stand_ins = {
        "torch": torch,
        "nemo": _module("nemo", __path__=[]),
        "nemo.utils": _module("nemo.utils", logging=logging.getLogger("nemo")),
        "nemo.collections": _module("nemo.collections", __path__=[]),
        "nemo.collections.common": _module("nemo.collections.common", __path__=[]),
        "nemo.collections.common.parts": _module("nemo.collections.common.parts", __path__=[]),
        "nemo.collections.common.parts.utils": _module(
            "nemo.collections.common.parts.utils", if_exist=lambda *a: False
        ),
        _PACKAGE: _module(_PACKAGE, __path__=[str(folder)]),
    }
    saved = {name: sys.modules.get(name) for name in stand_ins}
    loaded: dict[str, Any] = {}
    try:
        sys.modules.update(stand_ins)
        for stem in (
            "tokenizer_spec",
            "chat_template_mixin",
            "sentencepiece_tokenizer",
            "aggregate_tokenizer",
            "canary_tokenizer",
        ):
            name = f"{_PACKAGE}.{stem}"
            spec = importlib.util.spec_from_file_location(name, folder / f"{stem}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            loaded[stem] = module
    finally:
        for name in [*stand_ins, *(f"{_PACKAGE}.{s}" for s in loaded)]:
            if saved.get(name) is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = saved[name]  # type: ignore[assignment]
    return {
        "SentencePieceTokenizer": loaded["sentencepiece_tokenizer"].SentencePieceTokenizer,
        "AggregateTokenizer": loaded["aggregate_tokenizer"].AggregateTokenizer,
        "CanaryTokenizer": loaded["canary_tokenizer"].CanaryTokenizer,
        "TokenizerSpec": loaded["tokenizer_spec"].TokenizerSpec,
        "create_spt_model": loaded["sentencepiece_tokenizer"].create_spt_model,
    }
