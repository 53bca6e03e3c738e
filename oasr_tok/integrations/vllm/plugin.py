"""The plug-in vLLM runs in each of its processes (entry point group ``vllm.general_plugins``:
pyproject.toml): it registers ``tokenizer_mode="oasr"`` and does nothing else. It imports no
oasr_tok kind and changes nothing for a model served in another mode; the output step is patched
only when a mode-"oasr" tokenizer is loaded (patches.py)."""

from __future__ import annotations

__all__ = ["MODE", "ModeTokenizer", "register"]

#: The tokenizer mode: `vllm serve MODEL --tokenizer-mode oasr`, `LLM(model, tokenizer_mode="oasr")`.
MODE = "oasr"


def register() -> None:
    """Map tokenizer mode "oasr" to oasr_tok.integrations.vllm.tokenizer.OasrTokenizer in vLLM's
    TokenizerRegistry (by name: the module is imported when the mode is used). Idempotent, as
    vLLM asks of general plug-ins (they may be loaded more than once)."""
    from vllm.tokenizers.registry import TokenizerRegistry

    target = ("oasr_tok.integrations.vllm.tokenizer", "OasrTokenizer")
    if TokenizerRegistry.tokenizers.get(MODE) != target:
        TokenizerRegistry.register(MODE, *target)


class ModeTokenizer:
    """What the tokenizers of mode "oasr" are (OasrTokenizer subclasses it): the wrappers in
    vLLM's output step (patches.py) act for these and hand every other tokenizer to vLLM."""

    __slots__ = ()
