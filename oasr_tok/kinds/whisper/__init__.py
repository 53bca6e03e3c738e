"""The whisper kind."""

from .tokenizer import WhisperTokenizer, detect

__all__ = ["WhisperTokenizer", "detect"]

# This kind's entry in the registry, which reads it from this file without importing it
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: a Whisper tokenizer.json,
# then openai-whisper's .tiktoken; decoding needs no backend, encode asks for `tokenizers` when
# called.
REGISTRY = {"kind": "whisper", "factory": "WhisperTokenizer", "precedence": 25}
