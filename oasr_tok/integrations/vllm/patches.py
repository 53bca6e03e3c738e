"""What oasr_tok changes in vLLM, and nothing more: vLLM has no public hook for an outside
detokenizer, so loading a mode-"oasr" tokenizer (OasrTokenizer.from_pretrained) installs, once
per process, three wrappers that act for that mode's tokenizers only and hand everything else to
vLLM's own code unchanged (docs/engines.md § vLLM, "What it changes"):

* ``vllm.v1.engine.detokenizer.IncrementalDetokenizer.from_new_request``: a request whose
  tokenizer is an OasrTokenizer gets an OasrDetokenizer (detokenizer.py) instead of vLLM's
  SlowIncrementalDetokenizer;
* ``vllm.v1.engine.logprobs.LogprobsProcessor.from_new_request``: such a request gets an
  OasrLogprobsProcessor (logprobs.py), whose top-k strings come from one table lookup per id;
* ``vllm.v1.engine.output_processor.OutputProcessor.process_outputs``: when the processor's
  tokenizer is an OasrTokenizer, the step's streams are stepped in one batch call, and its
  logprob strings made in one call, before vLLM's own loop runs (which then takes them).

It also maps the renderer of mode "oasr" to vLLM's HfRenderer (chat templates through the
tokenizer's apply_chat_template, as mode "kimi_audio" does), unless one is registered already.

A vLLM that lacks one of these, or whose signature differs, gets an IntegrationError naming
its version and the attribute: nothing is patched then (the plug-in's registration alone changes
nothing for other modes). `uninstall()` puts vLLM's own functions back (tests use it).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from oasr_tok.errors import IntegrationError

__all__ = ["PATCHED", "install", "installed", "uninstall"]

#: (module, class, attribute, the parameters after self/cls it must take): what install() wraps.
PATCHED: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("vllm.v1.engine.detokenizer", "IncrementalDetokenizer", "from_new_request", ("tokenizer", "request")),
    ("vllm.v1.engine.logprobs", "LogprobsProcessor", "from_new_request", ("tokenizer", "request")),
    ("vllm.v1.engine.output_processor", "OutputProcessor", "process_outputs", ("engine_core_outputs",)),
)
#: What the wrappers read of vLLM besides what they wrap (module, name, attributes it must have).
REQUIRED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("vllm.v1.engine.detokenizer", "BaseIncrementalDetokenizer", ("update", "get_next_output_text", "decode_next")),
    (
        "vllm.v1.engine.logprobs",
        "LogprobsProcessor",
        ("_update_sample_logprobs", "_update_prompt_logprobs", "_correct_decoded_token", "_get_sampled_context_ids"),
    ),
    ("vllm.v1.engine.output_processor", "RequestState", ("from_new_request",)),
    (
        "vllm.v1.engine",
        "EngineCoreOutput",
        (
            "request_id",
            "new_token_ids",
            "finish_reason",
            "pooling_output",
            "error",
            "new_logprobs",
            "new_prompt_logprobs_tensors",
        ),
    ),
    ("vllm.v1.engine", "FinishReason", ("STOP",)),
    ("vllm.renderers.registry", "RENDERER_REGISTRY", ("register", "renderers")),
)

_lock = threading.Lock()
_originals: dict[tuple[str, str, str], Any] = {}


def _vllm_version() -> str:
    import vllm

    return str(getattr(vllm, "__version__", "(unknown version)"))


def _missing(what: str, why: str) -> IntegrationError:
    return IntegrationError(
        f"vLLM {_vllm_version()} has no {what} ({why}); tokenizer_mode='oasr' needs the output step of "
        "vLLM 0.33 (oasr_tok.integrations.vllm patches it: docs/engines.md)"
    )


def _resolve(module: str, owner: str) -> Any:
    import importlib

    try:
        found = getattr(importlib.import_module(module), owner)
    except (ImportError, AttributeError) as exc:
        raise _missing(f"{module}.{owner}", str(exc)) from None
    return found


def _check() -> list[tuple[Any, str, str, Any]]:
    """Every attribute install() wraps or reads, found and of the expected shape (else an
    IntegrationError naming it); the (class, attribute, key, raw descriptor) to wrap."""
    targets = []
    for module, owner, attribute, params in PATCHED:
        cls = _resolve(module, owner)
        raw = inspect.getattr_static(cls, attribute, None)
        if raw is None:
            raise _missing(f"{module}.{owner}.{attribute}", "oasr_tok wraps it")
        function = raw.__func__ if isinstance(raw, classmethod) else raw
        function = getattr(function, "__wrapped__", function) if getattr(function, "_oasr_tok", False) else function
        names = [p.name for p in inspect.signature(function).parameters.values()][1 : 1 + len(params)]
        if tuple(names) != params:
            raise _missing(f"{module}.{owner}.{attribute}({', '.join(params)})", f"it takes ({', '.join(names)})")
        targets.append((cls, attribute, f"{module}.{owner}.{attribute}", raw))
    for module, owner, attributes in REQUIRED:
        found = _resolve(module, owner)
        for name in attributes:
            if not hasattr(found, name) and name not in getattr(found, "__struct_fields__", ()):
                raise _missing(f"{module}.{owner}.{name}", "oasr_tok's detokenizer reads it")
    return targets


def installed() -> bool:
    """Whether oasr_tok's wrappers are in vLLM's output step in this process."""
    return bool(_originals)


def install() -> None:
    """Install the wrappers (module docstring), once per process; an IntegrationError, with
    nothing patched, where this vLLM lacks one of the attributes."""
    with _lock:
        if _originals:
            return
        targets = _check()
        from .detokenizer import OasrDetokenizer, step
        from .logprobs import OasrLogprobsProcessor, logprob_step
        from .plugin import ModeTokenizer

        def make(tokenizer: Any, request: Any) -> Any:
            return OasrDetokenizer(tokenizer, request)

        def make_logprobs(tokenizer: Any, request: Any) -> Any:
            return OasrLogprobsProcessor.from_new_request(tokenizer, request)

        wrappers: dict[str, Callable[[Any], Any]] = {
            "vllm.v1.engine.detokenizer.IncrementalDetokenizer.from_new_request": lambda raw: _for_mode(
                raw, ModeTokenizer, make
            ),
            "vllm.v1.engine.logprobs.LogprobsProcessor.from_new_request": lambda raw: _for_mode(
                raw, ModeTokenizer, make_logprobs
            ),
            "vllm.v1.engine.output_processor.OutputProcessor.process_outputs": lambda raw: _stepping(
                raw, ModeTokenizer, step, logprob_step
            ),
        }
        for cls, attribute, key, raw in targets:
            setattr(cls, attribute, wrappers[key]((cls, raw)))
            _originals[(cls.__module__, cls.__qualname__, attribute)] = (cls, raw)
        registry = _resolve("vllm.renderers.registry", "RENDERER_REGISTRY")
        if "oasr" not in registry.renderers:
            registry.register("oasr", "vllm.renderers.hf", "HfRenderer")


def uninstall() -> None:
    """vLLM's own functions back (the renderer mapping stays: it serves mode "oasr" only)."""
    with _lock:
        for (_, _, attribute), (cls, raw) in _originals.items():
            setattr(cls, attribute, raw)
        _originals.clear()


def _for_mode(target: tuple[type, Any], tokenizer_type: type, make: Callable[[Any, Any], Any]) -> Any:
    """A from_new_request that makes oasr_tok's object for a mode-"oasr" tokenizer, vLLM's own
    for every other (and for every subclass's own call: oasr_tok's classes call it too)."""
    owner, raw = target
    original = raw.__func__

    def from_new_request(cls: Any, tokenizer: Any, request: Any) -> Any:
        if cls is owner and isinstance(tokenizer, tokenizer_type):
            return make(tokenizer, request)
        return original(cls, tokenizer, request)

    from_new_request.__wrapped__ = original  # type: ignore[attr-defined]
    from_new_request._oasr_tok = True  # type: ignore[attr-defined]
    from_new_request.__doc__ = original.__doc__
    return classmethod(from_new_request)


def _stepping(
    target: tuple[type, Callable[..., Any]],
    tokenizer_type: type,
    step: Callable[[Any, Any], Any],
    logprob_step: Callable[[Any], None],
) -> Callable[..., Any]:
    """process_outputs that, for a processor whose tokenizer is of mode "oasr", steps the batch
    of streams and makes the logprob strings first; vLLM's own for every other."""
    original = target[1]

    def process_outputs(self: Any, engine_core_outputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(self.tokenizer, tokenizer_type):
            logprob_step(step(self.request_states, engine_core_outputs))
        return original(self, engine_core_outputs, *args, **kwargs)

    process_outputs.__wrapped__ = original  # type: ignore[attr-defined]
    process_outputs._oasr_tok = True  # type: ignore[attr-defined]
    process_outputs.__doc__ = original.__doc__
    return process_outputs
