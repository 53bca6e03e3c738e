"""The gguf kind: the tokenizer llama.cpp carries inside a GGUF file (tokenizer.py), its
reader (reader.py), vocabulary (vocab.py), encoders (encode.py, ugm.py)."""

from ..api import KindRecord
from .tokenizer import GGUFTokenizer, detect, llama_clean_spaces

__all__ = ["GGUFTokenizer", "detect", "llama_clean_spaces"]


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: GGUF files by their magic;
# decode needs nothing, encode asks for `tokenizers` ([gguf]) when first used.
KIND = KindRecord("gguf", GGUFTokenizer.from_spec, detect, precedence=40)
