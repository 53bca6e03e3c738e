"""The whisper kind: Whisper's tokenizer from a Hugging Face tokenizer.json or openai-whisper's
.tiktoken. The kind and its detector are in tokenizer.py, the two file readers in layout.py,
openai-whisper's word splitting in words.py; this face hands on their public names."""

from ..api import KindRecord
from .layout import (
    LANGUAGE_CODES,
    TIMESTAMP_COUNT,
    TIMESTAMP_STEP,
    WhisperLayout,
    read_tiktoken_layout,
    read_whisper_layout,
)
from .tokenizer import GPT2_PATTERN, WhisperTokenizer, detect
from .words import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS

__all__ = [
    "APPEND_PUNCTUATIONS",
    "GPT2_PATTERN",
    "LANGUAGE_CODES",
    "PREPEND_PUNCTUATIONS",
    "TIMESTAMP_COUNT",
    "TIMESTAMP_STEP",
    "WhisperLayout",
    "WhisperTokenizer",
    "detect",
    "read_tiktoken_layout",
    "read_whisper_layout",
]


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: a Whisper tokenizer.json,
# then openai-whisper's .tiktoken; decoding needs no backend, encode asks for `tokenizers` when
# called.
KIND = KindRecord("whisper", WhisperTokenizer.from_spec, detect, precedence=25)
