"""One small exception hierarchy. Every error is a `TokenizerError` and also the builtin it
refines, so callers can catch either."""

from __future__ import annotations

__all__ = [
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
    "RegistryWarning",
    "TimingError",
    "ResolveError",
    "PiecesNotSupportedError",
    "UnsupportedDecoderError",
    "short_repr",
    "UnknownPieceError",
    "UnknownSpecialTokenError",
    "KeepSpecialsNotSupportedError",
    "ChatTemplateError",
    "ChatMessageError",
    "UnknownEnvelopeError",
    "IntegrationError",
]

#: How many characters of a caller's object an error message may show.
REPR_LIMIT = 80


def short_repr(value: object, limit: int = REPR_LIMIT) -> str:
    """repr(value) cut to about `limit` characters, for error messages: a message names the
    bad value, it never copies a whole array or transcript into itself. A repr that fails is
    replaced by the type name (the error being reported matters more)."""
    try:
        if isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > limit:
            # repr of a million-element container costs more than the error is worth
            return f"<{type(value).__name__} of {len(value)} items>"
        text = repr(value)
    except Exception:  # a hostile __repr__ must not replace the error we are raising
        return f"<{type(value).__name__} object>"
    if len(text) <= limit:
        return text
    return f"{text[: limit - 20]}...{text[-12:]} ({len(text)} chars)"


class TokenizerError(Exception):
    """Base class of every error oasr_tok raises on purpose."""


class SpecError(TokenizerError, ValueError):
    """A TokenizerSpec (or a kind's options) is malformed."""


class UnknownKindError(TokenizerError, LookupError):
    """No tokenizer kind is registered under the requested name."""


class RegistryWarning(UserWarning):
    """A kind that was not registered: an entry point naming a built-in kind or a kind another
    package's entry point already names."""


class RegistryError(TokenizerError, ValueError):
    """A registration clashes with an existing kind, or its factory is unusable."""


class BackendNotInstalledError(TokenizerError, ImportError):
    """A built-in kind needs an optional backend that is not installed."""


class AssetError(TokenizerError):
    """A tokenizer file is missing or malformed. `path` (and `line`, for text tables) say where."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class AssetNotFoundError(AssetError, FileNotFoundError):
    """A file named by the spec does not exist or cannot be read."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        # FileNotFoundError's own __init__ would reinterpret the message as errno arguments.
        AssetError.__init__(self, message, path, line)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MalformedAssetError(AssetError, ValueError):
    """A file exists but its content cannot be used (bad line, gap, duplicate, bad JSON...)."""


class InvalidIdError(TokenizerError, ValueError):
    """A token id is outside 0 ... vocab_size - 1."""


class NonIntegerIdError(InvalidIdError, TypeError):
    """A token id is not an integer."""


class EncodeNotSupportedError(TokenizerError, NotImplementedError):
    """encode() was called on a decode-only kind. Check `supports_encode` first."""


class EncodeError(TokenizerError, ValueError):
    """Text cannot be turned into ids with this vocabulary."""


class StreamStateError(TokenizerError, ValueError):
    """A decode_incremental state is unusable: closed by final=True, corrupt, or foreign."""


def stream_closed_error(what: str = "stream") -> StreamStateError:
    """What every kind raises when ids are fed to a stream that final=True closed."""
    return StreamStateError(f"this {what} was closed with final=True; start a new state ({{}}) to decode more")


class TimingError(TokenizerError, ValueError):
    """starts/ends given to word_timings have the wrong length, order or values."""


class ResolveError(TokenizerError, LookupError):
    """A checkpoint's files do not identify a tokenizer kind."""


class PiecesNotSupportedError(TokenizerError, NotImplementedError):
    """The kind has no piece vocabulary to spell ids with (see Tokenizer.id_to_piece)."""


class UnsupportedDecoderError(MalformedAssetError):
    """A tokenizer.json decoder cannot be streamed exactly by oasr_tok (named in the message)."""


class _KeyErrorMessage(KeyError):
    # KeyError's str() would repr() the message; these carry sentences.
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownPieceError(TokenizerError, _KeyErrorMessage):
    """piece_to_id was asked for a piece the vocabulary does not have."""


class UnknownSpecialTokenError(TokenizerError, _KeyErrorMessage):
    """A special-token role name that does not exist (the roles are bos, eos, pad, unk, sep,
    cls, mask)."""


class KeepSpecialsNotSupportedError(TokenizerError, NotImplementedError):
    """The kind cannot render its special tokens as text (Tokenizer.with_specials)."""


class ChatTemplateError(TokenizerError, ValueError):
    """A chat template is missing, does not compile, or raised while rendering
    (`raise_exception`, a sandbox violation); the message says which."""


class ChatMessageError(ChatTemplateError, TypeError):
    """The messages given to apply_chat_template are not a list of message dicts."""


class UnknownEnvelopeError(TokenizerError, LookupError):
    """No envelope format is registered under the requested name (oasr_tok.outputs.envelopes)."""


class IntegrationError(TokenizerError, RuntimeError):
    """An engine adapter (oasr_tok.integrations) does not fit the engine in use, or the
    tokenizer it was given is not the one the engine loaded: the engine, its version and what
    is missing or different are named."""
