"""The byte alphabet of byte-level BPE (GPT-2, Qwen, Whisper): each of the 256 bytes is
written as one printable character in token strings. The `tokenizers` ByteLevel decoder maps
a token's characters back to bytes, or keeps the token's own UTF-8 when any character lies
outside the alphabet (added tokens such as "中" or "<|音频|>")."""
from __future__ import annotations

__all__ = ["BYTE_TO_CHAR", "CHAR_TO_BYTE", "token_bytes"]


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


def token_bytes(token: str) -> bytes:
    """The bytes the ByteLevel decoder renders for one token string."""
    try:
        return bytes([CHAR_TO_BYTE[char] for char in token])
    except KeyError:
        return token.encode("utf-8")
