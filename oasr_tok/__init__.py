"""oasr_tok: token ids back into text — whole, streamed, per token and as timed words — for
every tokenizer kind behind one contract (docs/architecture.md)."""

from . import _moved
from ._engine.ctc import collapse_ctc
from ._engine.serving import StopMatch
from ._engine.session import Session
from ._engine.stream import Stream
from ._engine.travel import Travel, travelling
from .core.registry import KindRecord, available_kinds, register_kind, register_tokenizer, unregister_tokenizer
from .core.specials import SpecialTokens
from .core.tokenizer import Tokenizer
from .core.words import Word, Words
from .errors import (
    AssetError,
    AssetNotFoundError,
    BackendNotInstalledError,
    ChatMessageError,
    ChatTemplateError,
    ChunkError,
    EncodeError,
    EncodeNotSupportedError,
    InvalidIdError,
    KeepSpecialsNotSupportedError,
    MalformedAssetError,
    NonIntegerIdError,
    NonIntegerRollbackError,
    PiecesNotSupportedError,
    RegistryError,
    ResolveError,
    RollbackError,
    SpecError,
    StreamStateError,
    TimingError,
    TokenizerError,
    TokenizerNotHeldError,
    UnknownEnvelopeError,
    UnknownKindError,
    UnknownPieceError,
    UnknownSpecialTokenError,
)
from .loading.build import build_tokenizer
from .loading.description import Description, describe
from .loading.resolution import load, resolve
from .outputs.envelopes import Transcript
from .outputs.segments import Segment
from .outputs.stitching import StitchedTranscript
from .spec import TokenizerSpec
from .toolkits import hotwords
from .toolkits.detokenizer import Detokenizer
from .toolkits.nemo import NeMoTokenizer

__version__ = "0.3.0.dev0"

_moved.install()

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
    "Session",
    "RollbackError",
    "NonIntegerRollbackError",
    "StitchedTranscript",
    "ChunkError",
    # streams that travel (docs/scale.md)
    "Travel",
    "travelling",
    "TokenizerNotHeldError",
    "KindRecord",
    "register_kind",
]
