"""oasr_tok: token ids back into text — whole, streamed, per token and as timed words — for
five tokenizer kinds behind one contract."""
from ._ctc import collapse_ctc
from .base import Tokenizer
from .detokenizer import Detokenizer
from .errors import (
    AssetError,
    AssetNotFoundError,
    BackendNotInstalledError,
    EncodeError,
    EncodeNotSupportedError,
    InvalidIdError,
    MalformedAssetError,
    NonIntegerIdError,
    PiecesNotSupportedError,
    RegistryError,
    ResolveError,
    SpecError,
    StreamStateError,
    TimingError,
    TokenizerError,
    UnknownKindError,
)
from .nemo import NeMoTokenizer
from .registry import available_kinds, build_tokenizer, register_tokenizer, unregister_tokenizer
from .checkpoint import Description, describe, load, resolve
from .spec import TokenizerSpec
from .words import Word

__version__ = "0.1.0"

__all__ = [
    "Tokenizer",
    "TokenizerSpec",
    "Word",
    "Detokenizer",
    "build_tokenizer",
    "register_tokenizer",
    "unregister_tokenizer",
    "available_kinds",
    "TokenizerError",
    "SpecError",
    "UnknownKindError",
    "RegistryError",
    "BackendNotInstalledError",
    "AssetError",
    "AssetNotFoundError",
    "MalformedAssetError",
    "InvalidIdError",
    "NonIntegerIdError",
    "EncodeNotSupportedError",
    "EncodeError",
    "StreamStateError",
    "TimingError",
    "ResolveError",
    "PiecesNotSupportedError",
    "resolve",
    "load",
    "describe",
    "Description",
    "NeMoTokenizer",
    "collapse_ctc",
]
