"""The byte alphabet of byte-level BPE (GPT-2, Qwen, Whisper): each of the 256 bytes is
written as one printable character in token strings. The `tokenizers` ByteLevel decoder maps
a token's characters back to bytes, or keeps the token's own UTF-8 when any character lies
outside the alphabet (added tokens such as "中" or "<|音频|>")."""

from __future__ import annotations

from collections.abc import Sequence

from .api import (
    byte_level_pieces,
)

__all__ = ["BYTE_TO_CHAR", "CHAR_TO_BYTE", "token_bytes", "tokens_bytes"]


def _byte_alphabet() -> dict[int, str]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    shifted = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + shifted)
            shifted += 1
    return {byte: chr(char) for byte, char in zip(printable, chars)}


BYTE_TO_CHAR: dict[int, str] = _byte_alphabet()
CHAR_TO_BYTE: dict[str, int] = {char: byte for byte, char in BYTE_TO_CHAR.items()}


# One str.translate per token (a whole vocabulary is converted at load): alphabet characters
# become the latin-1 character of their byte, every other character of 0..255 becomes U+FFFF so
# that the latin-1 encode fails and the token falls back to its own UTF-8, as the decoder does.
_TO_LATIN1 = {ord(char): chr(byte) for char, byte in CHAR_TO_BYTE.items()}
_TO_LATIN1.update({c: "\uffff" for c in range(256) if chr(c) not in CHAR_TO_BYTE})


def token_bytes(token: str) -> bytes:
    """The bytes the ByteLevel decoder renders for one token string: each character's byte
    when every character is in the alphabet, else the token's own UTF-8."""
    try:
        return token.translate(_TO_LATIN1).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8")


# For byte_level_pieces: for each code point up to the alphabet's last, whether it is in the
# alphabet, and its byte.
_CODES = range(max(map(ord, CHAR_TO_BYTE)) + 1)
_IN_ALPHABET = bytes(chr(c) in CHAR_TO_BYTE for c in _CODES)
_BYTE_OF = bytes(CHAR_TO_BYTE.get(chr(c), 0) for c in _CODES)


def tokens_bytes(tokens: Sequence[str | None]) -> list[bytes]:
    """token_bytes of each token (b"" for None), in compiled code: a whole vocabulary at load."""
    return byte_level_pieces(tokens if type(tokens) is list else list(tokens), _IN_ALPHABET, _BYTE_OF)
