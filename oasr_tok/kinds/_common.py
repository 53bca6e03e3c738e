"""Small helpers the built-in kinds share."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..archive import is_archive_ref, read_member
from ..errors import AssetNotFoundError, EncodeError, MalformedAssetError, SpecError, short_repr

BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

#: bytes.join first fills one Py_buffer (80 bytes) per item: a million pieces make an 80 MB
#: scratch array whose page faults cost more than the copying (1M icefall pieces: 110 ms in
#: one join, 37 ms in joins of 4,096 joined again). str.join has no such array; neither has
#: _ids.join_pieces, which gathers pieces by id.
_JOIN_CHUNK = 4096


def join_bytes(parts: list[bytes]) -> bytes:
    """b"".join(parts), in chunks when there are many (see _JOIN_CHUNK)."""
    if len(parts) <= _JOIN_CHUNK:
        return b"".join(parts)
    return b"".join([b"".join(parts[i : i + _JOIN_CHUNK]) for i in range(0, len(parts), _JOIN_CHUNK)])


def byte_piece_value(piece: str) -> int | None:
    """The byte a `<0xNN>` piece stands for, or None for any other piece."""
    if len(piece) == 6:
        match = BYTE_PIECE.fullmatch(piece)
        if match:
            return int(match.group(1), 16)
    return None


def existing_file(path: str, what: str) -> str:
    """`path` if it is a readable file (or names a member of an archive, oasr_tok/archive.py);
    AssetNotFoundError naming it otherwise."""
    if not os.path.isfile(path) and not is_archive_ref(path):
        raise AssetNotFoundError(f"{what} file not found: {path!r}", path=path)
    return path


def read_bytes(path: str, what: str) -> bytes:
    """The content of a file, or of an archive member (``archive::member``)."""
    if is_archive_ref(path):
        return read_member(path, what)
    existing_file(path, what)
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise AssetNotFoundError(f"cannot read {what} file {path!r}: {exc.strerror}", path=path) from None


def read_text(path: str, what: str) -> str:
    raw = read_bytes(path, what)
    # utf-8-sig: a byte-order mark (Windows editors write one) is not part of the first line's
    # token; kept, it would turn "<blank>" at id 0 into "\ufeff<blank>", an ordinary token.
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MalformedAssetError(f"{path}:{line}: {what} file is not valid UTF-8", path=path, line=line) from None


def text_lines(text: str) -> list[str]:
    """The lines of a text asset, split at "\\n" only, as the C++ readers of these files split
    them (std::getline). str.splitlines() also breaks at U+2028, U+0085, VT, FF and
    U+001C-U+001E, which a token may contain: one such token would shift every later id. The
    newline ending the last line makes no empty line; a carriage return before a newline stays
    on its line, for the reader to strip."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def read_lines(path: str, what: str) -> list[str]:
    """text_lines of the file at `path` (typed errors naming it)."""
    return text_lines(read_text(path, what))


def json_id(value: Any) -> int | None:
    """`value` as a token id if it is one: a JSON integer >= 0 (true and false are not ids,
    although Python counts bool as int); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


#: How far past its entry count a file's highest id may lie (holes in a padded vocabulary).
ID_SLACK = 1 << 16


def check_id_span(max_id: int, count: int, path: str, what: str) -> None:
    """Refuse a file whose highest id lies far beyond the number of entries it has, before
    any per-id table is sized from it: one entry at id 100,000,000 would otherwise allocate
    gigabytes. Real vocabularies are dense up to a few padding holes."""
    if max_id >= 2 * count + ID_SLACK:
        raise MalformedAssetError(
            f"{path}: {what} has id {max_id} but only {count} entries; an id that far beyond the "
            "vocabulary is a corrupt file (oasr_tok refuses it rather than allocate a table that large)",
            path=path,
        )


def checked_text(text: Any, kind: str) -> str:
    """The text to encode, checked the same way by every kind: a str (EncodeError otherwise)
    without lone surrogates, which no tokenizer can represent (each backend would fail in its
    own way: RuntimeError, TypeError, ...)."""
    if not isinstance(text, str):
        raise EncodeError(f"{kind}: encode takes a str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(
            f"{kind}: cannot encode a lone surrogate {text[exc.start]!r} at offset {exc.start}: "
            "the text is not valid Unicode"
        ) from None
    return text


def parse_json(path: str, text: str, what: str) -> Any:
    """`text` (the content of `path`) as JSON; MalformedAssetError naming the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedAssetError(
            f"{path}:{exc.lineno}: {what} is not valid JSON: {exc.msg}", path=path, line=exc.lineno
        ) from None


def read_json(path: str, what: str) -> Any:
    """The JSON content of `path`; typed errors naming the file (and line)."""
    return parse_json(path, read_text(path, what), what)


def special_ids_option(
    options: Mapping[str, Any], default: Iterable[int], vocab_size: int, kind: str
) -> frozenset[int]:
    """The `special_ids` option, checked: ints inside the vocabulary."""
    raw = options.get("special_ids", None)
    if raw is None:
        return frozenset(i for i in default if 0 <= i < vocab_size)
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
        raise SpecError(f"{kind}: option special_ids must be a list of ids, got {short_repr(raw)}")
    ids = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{kind}: option special_ids must hold integer ids, got {short_repr(value)}")
        if not 0 <= value < vocab_size:
            raise SpecError(f"{kind}: special id {value} is outside the vocabulary 0 ... {vocab_size - 1}")
        ids.append(value)
    return frozenset(ids)


def reject_unknown_options(options: Mapping[str, Any], known: Iterable[str], kind: str) -> None:
    unknown = set(options) - set(known)
    if unknown:
        raise SpecError(f"{kind}: unknown option(s) {sorted(unknown)}; this kind takes {sorted(known)}")


_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def base64_token(text: str) -> bytes | None:
    """The bytes of a base64 token as tiktoken-format readers (openai-whisper, mistral-common)
    decode it, or None when `text` holds anything but base64 characters. Those readers use the
    lenient decoder, which takes openai-whisper's "=" (rank 50256) as the empty string."""
    import base64
    import binascii

    if not _BASE64.fullmatch(text):
        return None
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return None
