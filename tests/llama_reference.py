"""A line-by-line port of llama.cpp's detokenizer, pinned to the llama.cpp that
llama-cpp-python 0.3.36 vendors (vendor/llama.cpp/src/llama-vocab.cpp: token_to_piece,
detokenize with its three clean_spaces loops; src/unicode.cpp: unicode_cpt_from_utf8,
unicode_cpt_to_utf8, unicode_utf8_to_byte_map). It works on bytes, C loop by C loop, so it is
an oracle for the kind's own formulation (per-id pieces on the compiled engine, clean_spaces
as regexes and as a streaming transducer). The expected files written by the real llama.cpp
(fixtures/make_gguf_expected.py) check both against the library itself.
"""

from __future__ import annotations

ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_BYTE = (1, 2, 4, 8, 16, 32)


def _utf8_to_byte_map() -> dict[bytes, int]:
    mapping: dict[bytes, int] = {}
    for ch in [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]:
        mapping[_cpt_to_utf8(ch)] = ch
    n = 0
    for ch in range(256):
        if _cpt_to_utf8(ch) not in mapping:
            mapping[_cpt_to_utf8(256 + n)] = ch
            n += 1
    return mapping


def _cpt_to_utf8(cpt: int) -> bytes:
    if cpt <= 0x7F:
        return bytes([cpt])
    if 0x80 <= cpt <= 0x7FF:
        return bytes([0xC0 | ((cpt >> 6) & 0x1F), 0x80 | (cpt & 0x3F)])
    if 0x800 <= cpt <= 0xFFFF:
        return bytes([0xE0 | ((cpt >> 12) & 0x0F), 0x80 | ((cpt >> 6) & 0x3F), 0x80 | (cpt & 0x3F)])
    if 0x10000 <= cpt <= 0x10FFFF:
        return bytes(
            [0xF0 | ((cpt >> 18) & 0x07), 0x80 | ((cpt >> 12) & 0x3F), 0x80 | ((cpt >> 6) & 0x3F), 0x80 | (cpt & 0x3F)]
        )
    raise ValueError("invalid codepoint")


def _cpt_from_utf8(utf8: bytes, offset: int) -> tuple[int, int]:
    b0 = utf8[offset]
    if not b0 & 0x80:
        return b0, offset + 1
    if not b0 & 0x40:
        raise ValueError("invalid character")
    if not b0 & 0x20:
        if offset + 1 >= len(utf8) or not (utf8[offset + 1] & 0xC0) == 0x80:
            raise ValueError("invalid character")
        return ((b0 & 0x1F) << 6) | (utf8[offset + 1] & 0x3F), offset + 2
    if not b0 & 0x10:
        if offset + 2 >= len(utf8) or not (utf8[offset + 1] & 0xC0) == 0x80 or not (utf8[offset + 2] & 0xC0) == 0x80:
            raise ValueError("invalid character")
        return ((b0 & 0x0F) << 12) | ((utf8[offset + 1] & 0x3F) << 6) | (utf8[offset + 2] & 0x3F), offset + 3
    if not b0 & 0x08:
        if (
            offset + 3 >= len(utf8)
            or not (utf8[offset + 1] & 0xC0) == 0x80
            or not (utf8[offset + 2] & 0xC0) == 0x80
            or not (utf8[offset + 3] & 0xC0) == 0x80
        ):
            raise ValueError("invalid character")
        return (
            ((b0 & 0x07) << 18)
            | ((utf8[offset + 1] & 0x3F) << 12)
            | ((utf8[offset + 2] & 0x3F) << 6)
            | (utf8[offset + 3] & 0x3F)
        ), offset + 4
    raise ValueError("failed to convert utf8 to codepoint")


def _cpts_from_utf8(utf8: bytes) -> list[int]:
    result, offset = [], 0
    while offset < len(utf8):
        try:
            cpt, offset = _cpt_from_utf8(utf8, offset)
            result.append(cpt)
        except ValueError:
            offset += 1
            result.append(0xFFFD)
    return result


_BYTE_MAP = _utf8_to_byte_map()


def llama_decode_text(text: bytes) -> bytes:
    decoded = b""
    for cpt in _cpts_from_utf8(text):
        utf8 = _cpt_to_utf8(cpt)
        if utf8 in _BYTE_MAP:
            decoded += bytes([_BYTE_MAP[utf8]])
        else:
            decoded += b"[UNK_BYTE_0x" + b"".join(b"%02x" % c for c in utf8) + text + b"]"
    return decoded


def _strtol16(s: bytes) -> int:
    i = 0
    while i < len(s) and s[i : i + 1] in b" \t\n\v\f\r":
        i += 1
    neg = False
    if i < len(s) and s[i : i + 1] in b"+-":
        neg = s[i : i + 1] == b"-"
        i += 1
    if s[i : i + 2].lower() == b"0x" and i + 2 < len(s) and chr(s[i + 2]) in "0123456789abcdefABCDEF":
        i += 2
    value = 0
    while i < len(s) and chr(s[i]) in "0123456789abcdefABCDEF":
        value = value * 16 + int(chr(s[i]), 16)
        i += 1
    return -value if neg else value


def token_to_piece(
    vocab_type: str, escape_whitespaces: bool, text: bytes, attr: int, lstrip: int, special: bool
) -> bytes:
    attr_special = ATTR_UNKNOWN | ATTR_CONTROL
    if not special and attr & attr_special:
        return b""

    def try_copy(token: bytes) -> bytes:
        k = 0
        while k < lstrip and token[:1] == b" ":
            token = token[1:]
            k += 1
        return token

    if vocab_type in ("WPM", "SPM", "UGM"):
        if attr & (attr_special | ATTR_USER_DEFINED):
            return try_copy(text)
        if attr & ATTR_NORMAL:
            return try_copy(text.replace("\u2581".encode(), b" "))
        if attr & ATTR_BYTE:
            return try_copy(bytes([_strtol16(text[3:5]) & 0xFF]))
        return b""
    if vocab_type == "BPE":
        if attr & (attr_special | ATTR_USER_DEFINED):
            return try_copy(text)
        if attr & ATTR_NORMAL:
            if escape_whitespaces:
                return try_copy(text.replace("\u2581".encode(), b" "))
            return try_copy(llama_decode_text(text))
        if attr & ATTR_BYTE:
            return try_copy(bytes([_strtol16(text[3:5]) & 0xFF]))
        return b""
    raise ValueError(vocab_type)


def detokenize(vocab, tokens: list[int]) -> bytes:
    """llama_vocab::impl::detokenize(tokens, remove_special=False, unparse_special=False).
    `vocab` is a GGUFVocab (texts, attrs, flags as llama.cpp's loader leaves them). The cache
    llama.cpp renders from is token_to_piece(special=True); lstrip applies on top of it."""
    text = bytearray()
    remove_space = vocab.add_space_prefix
    for token in tokens:
        attr = vocab.attrs[token]
        if attr & (ATTR_UNKNOWN | ATTR_CONTROL):
            piece = b""
        else:
            cached = token_to_piece(
                vocab.vocab_type,
                vocab.escape_whitespaces,
                vocab.texts[token].encode("utf-8", "surrogateescape"),
                attr,
                0,
                True,
            )
            piece = cached[1:] if remove_space and cached[:1] == b" " else cached
        remove_space = False
        text += piece
    if vocab.clean_spaces:
        text = bytearray(_clean_spaces(bytes(text)))
    return bytes(text)


def _clean_spaces(data: bytes) -> bytes:
    text = bytearray(data)
    # first pass: characters ?!.,
    total1 = len(text)
    total = 1 if total1 else 0
    for i in range(1, total1):
        x = text[i]
        if text[i - 1] == 0x20 and x in b"?!.,":
            total -= 1
        text[total] = x
        total += 1
    # second pass: strip single apostrophe between spaces
    total2 = total
    total = 1 if total2 else 0
    i = 1
    while i < total2:
        x = text[i]
        if x == 0x27 and i + 1 < total2 and text[i - 1] == 0x20 and text[i + 1] == 0x20:
            total -= 1
            i += 1
            text[i] = 0
        text[total] = x
        total += 1
        i += 1
    # third pass: apostrophe contractions
    total3 = total
    total = 1 if total3 else 0
    for i in range(1, total3):
        x = text[i]
        if text[i - 1] == 0x20 and x == 0x27 and i + 1 < total3:
            x1 = text[i + 1]
            if x1 in b"td":
                pass
            elif x1 in b"sm":
                total -= 1
            elif i + 2 < total3:
                x2 = text[i + 2]
                if x1 == ord("l") and x2 == ord("l"):
                    pass
                elif (x1 == ord("r") and x2 == ord("e")) or (x1 == ord("v") and x2 == ord("e")):
                    total -= 1
        text[total] = x
        total += 1
    return bytes(text[:total])
