"""The kind registry: explicit and strict. A name clash raises unless replacement is asked
for (registering the same factory again is a no-op); built-in kinds are imported on first use,
with an install hint when their backend is missing; third-party kinds are found through the
`oasr_tok.kinds` entry-point group, loaded on first use too."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from .contract import TokenizerContract
from .errors import BackendNotInstalledError, RegistryError, SpecError, UnknownKindError
from .spec import TokenizerSpec

__all__ = ["register_tokenizer", "unregister_tokenizer", "build", "available_kinds"]

Factory = Callable[[TokenizerSpec], TokenizerContract]

# kind -> (module, class, backend module or None, extra to install)
_BUILTINS: dict[str, tuple[str, str, str | None, str | None]] = {
    "symbol_table": ("oasr_tok.kinds.symbol_table", "SymbolTableTokenizer", None, None),
    "sentencepiece": ("oasr_tok.kinds.sentencepiece", "SentencePieceTokenizer", "sentencepiece", "sentencepiece"),
    "huggingface": ("oasr_tok.kinds.huggingface", "HuggingFaceTokenizer", "tokenizers", "huggingface"),
    # Decoding Whisper needs no backend; its encode asks for `tokenizers` when called.
    "whisper": ("oasr_tok.kinds.whisper", "WhisperTokenizer", None, None),
    # Decoding tekken needs no backend either; its encode asks for `tiktoken`.
    "tekken": ("oasr_tok.kinds.tekken", "TekkenTokenizer", None, None),
    "funasr_char": ("oasr_tok.kinds.funasr_char", "FunASRCharTokenizer", None, None),
    # decode needs nothing; encode asks for `tokenizers` ([gguf]) when it is first used
    "gguf": ("oasr_tok.kinds.gguf", "GGUFTokenizer", None, None),
    "wav2vec2": ("oasr_tok.kinds.wav2vec2", "Wav2Vec2Tokenizer", None, None),
    "aggregate": ("oasr_tok.kinds.aggregate", "AggregateTokenizer", "sentencepiece", "sentencepiece"),
    "wordpiece": ("oasr_tok.kinds.wordpiece", "WordPieceTokenizer", "tokenizers", "huggingface"),
}

_factories: dict[str, Factory] = {}
_lock = threading.Lock()


def register_tokenizer(kind: str, factory: Factory, *, replace: bool = False) -> None:
    """Register `factory(spec) -> Tokenizer` under `kind`. Registering a name that exists
    (a built-in included) raises RegistryError unless `replace=True`."""
    if not isinstance(kind, str) or not kind:
        raise RegistryError(f"a tokenizer kind must be a non-empty string, got {kind!r}")
    if not callable(factory):
        raise RegistryError(f"the factory for kind {kind!r} must be callable, got {factory!r}")
    with _lock:
        if _factories.get(kind) is factory:
            return  # the same factory again: nothing to do (as fsspec's registry does)
        if not replace and (kind in _factories or kind in _BUILTINS):
            raise RegistryError(
                f"tokenizer kind {kind!r} is already registered; "
                "pass replace=True to register_tokenizer to replace it on purpose"
            )
        _factories[kind] = factory


def unregister_tokenizer(kind: str) -> None:
    """Remove a kind registered with register_tokenizer (a replaced built-in comes back)."""
    with _lock:
        if kind not in _factories:
            raise UnknownKindError(f"tokenizer kind {kind!r} was not registered with register_tokenizer")
        del _factories[kind]


ENTRY_POINT_GROUP = "oasr_tok.kinds"


def _entry_points() -> dict[str, Any]:
    """Kinds other packages declare under the `oasr_tok.kinds` entry-point group (name ->
    entry point; loaded only when that kind is built). A built-in name is never shadowed."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _BUILTINS}


def available_kinds() -> list[str]:
    """Every kind build_tokenizer accepts: built-ins, registered and entry-point kinds (sorted)."""
    return sorted(set(_BUILTINS) | set(_factories) | set(_entry_points()))


def _builtin_factory(kind: str) -> Factory:
    module_name, class_name, backend, extra = _BUILTINS[kind]
    if backend is not None:
        try:
            importlib.import_module(backend)
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"the {kind!r} tokenizer kind needs the {backend!r} package, which is not installed "
                f"({exc}); install it with: pip install 'oasr_tok[{extra}]'"
            ) from exc
    module = importlib.import_module(module_name)
    factory: Factory = getattr(module, class_name).from_spec
    return factory


def get_factory(kind: str) -> Factory:
    """The factory for `kind`, loading a built-in lazily."""
    with _lock:
        factory = _factories.get(kind)
    if factory is not None:
        return factory
    if kind in _BUILTINS:
        return _builtin_factory(kind)
    entry_point = _entry_points().get(kind)
    if entry_point is not None:
        try:
            factory = entry_point.load()
        except Exception as exc:  # a broken plug-in must not look like an unknown kind
            raise RegistryError(
                f"tokenizer kind {kind!r} comes from the entry point {entry_point.value!r} "
                f"(group {ENTRY_POINT_GROUP!r}), which failed to load: {exc}"
            ) from exc
        if not callable(factory):
            raise RegistryError(f"the entry point {entry_point.value!r} for kind {kind!r} is not callable")
        with _lock:
            return _factories.setdefault(kind, factory)
    raise UnknownKindError(f"unknown tokenizer kind {kind!r}; known kinds: {', '.join(available_kinds())}")


def build(spec: TokenizerSpec) -> TokenizerContract:
    """Build the tokenizer a spec describes with its kind's factory (the public face is
    oasr_tok.build_tokenizer, in build.py)."""
    if not isinstance(spec, TokenizerSpec):
        raise SpecError(f"build_tokenizer takes a TokenizerSpec, got {type(spec).__name__}")
    tokenizer = get_factory(spec.kind)(spec)
    if not isinstance(tokenizer, TokenizerContract):
        raise RegistryError(
            f"the factory for kind {spec.kind!r} returned {type(tokenizer).__name__}, not an oasr_tok.Tokenizer"
        )
    if getattr(tokenizer, "spec", None) is None:
        tokenizer.spec = spec
    return tokenizer
