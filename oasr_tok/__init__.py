"""oasr_tok: token ids back into text — whole, streamed, per token and as timed words — for
every tokenizer kind behind one contract (docs/architecture.md)."""

from . import hotwords
from ._ctc import collapse_ctc
from ._stream import Stream
from .build import build_tokenizer
from .description import Description, describe
from .detokenizer import Detokenizer
from .envelopes import Transcript
from .errors import (
    AssetError,
    AssetNotFoundError,
    BackendNotInstalledError,
    ChatMessageError,
    ChatTemplateError,
    EncodeError,
    EncodeNotSupportedError,
    InvalidIdError,
    KeepSpecialsNotSupportedError,
    MalformedAssetError,
    NonIntegerIdError,
    PiecesNotSupportedError,
    RegistryError,
    ResolveError,
    SpecError,
    StreamStateError,
    TimingError,
    TokenizerError,
    UnknownEnvelopeError,
    UnknownKindError,
    UnknownPieceError,
    UnknownSpecialTokenError,
)
from .nemo import NeMoTokenizer
from .registry import available_kinds, register_tokenizer, unregister_tokenizer
from .resolution import load, resolve
from .segments import Segment
from .serving import StopMatch
from .spec import TokenizerSpec
from .specials import SpecialTokens
from .tokenizer import Tokenizer
from .words import Word, Words

__version__ = "0.3.0.dev0"

__all__ = [
    "Tokenizer",
    "TokenizerSpec",
    "Word",
    "Words",
    "Segment",
    "StopMatch",
    "Stream",
    "Detokenizer",
    "build_tokenizer",
    "register_tokenizer",
    "unregister_tokenizer",
    "available_kinds",
    "TokenizerError",
    "SpecError",
    "UnknownKindError",
    "UnknownEnvelopeError",
    "Transcript",
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
    "SpecialTokens",
    "UnknownPieceError",
    "UnknownSpecialTokenError",
    "KeepSpecialsNotSupportedError",
    "ChatTemplateError",
    "ChatMessageError",
    "collapse_ctc",
    "hotwords",
]
