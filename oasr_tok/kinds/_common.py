"""Small helpers the built-in kinds share."""
from __future__ import annotations

import json
import os
import re
from typing import Any, Iterable, Mapping

from ..archive import is_archive_ref, read_member
from ..errors import AssetNotFoundError, MalformedAssetError, SpecError

BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


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
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MalformedAssetError(f"{path}:{line}: {what} file is not valid UTF-8", path=path, line=line) from None


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


def special_ids_option(options: Mapping[str, Any], default: Iterable[int], vocab_size: int, kind: str) -> frozenset[int]:
    """The `special_ids` option, checked: ints inside the vocabulary."""
    raw = options.get("special_ids", None)
    if raw is None:
        return frozenset(i for i in default if 0 <= i < vocab_size)
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
        raise SpecError(f"{kind}: option special_ids must be a list of ids, got {raw!r}")
    ids = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{kind}: option special_ids must hold integer ids, got {value!r}")
        if not 0 <= value < vocab_size:
            raise SpecError(f"{kind}: special id {value} is outside the vocabulary 0 ... {vocab_size - 1}")
        ids.append(value)
    return frozenset(ids)


def reject_unknown_options(options: Mapping[str, Any], known: Iterable[str], kind: str) -> None:
    unknown = set(options) - set(known)
    if unknown:
        raise SpecError(f"{kind}: unknown option(s) {sorted(unknown)}; this kind takes {sorted(known)}")
