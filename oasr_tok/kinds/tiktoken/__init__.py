"""The tiktoken kind: a tiktoken rank file (Meta's Llama 3 / 4 tokenizer.model, Kimi-Audio's
tiktoken.model, any *.tiktoken) exact to tiktoken. The kind and its detector are in
tokenizer.py, where the special tokens come from in layout.py; this face hands on their public
names."""

from ..api import KindRecord
from .layout import (
    LLAMA3_PATTERN,
    LLAMA4_PATTERN,
    SpecialLayout,
    llama3_special_tokens,
    llama4_special_tokens,
)
from .tokenizer import TiktokenTokenizer, TiktokenWithSpecials, detect

__all__ = [
    "LLAMA3_PATTERN",
    "LLAMA4_PATTERN",
    "SpecialLayout",
    "TiktokenTokenizer",
    "TiktokenWithSpecials",
    "detect",
    "llama3_special_tokens",
    "llama4_special_tokens",
]

# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: right after whisper
# (which keeps openai-whisper's own .tiktoken files) and before SentencePiece, whose
# tokenizer.model a rank file of that name is not; decoding needs no backend, encode asks for
# `tiktoken` when called.
KIND = KindRecord("tiktoken", TiktokenTokenizer.from_spec, detect, precedence=26)
