"""Small helpers the built-in kinds share."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .api import (
    ROLES,
    EncodeError,
    MalformedAssetError,
    SpecError,
    json_id,
    read_json,
    short_repr,
)

BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

#: bytes.join first fills one Py_buffer (80 bytes) per item: a million pieces make an 80 MB
#: scratch array whose page faults cost more than the copying (a third of it, joined in chunks of
#: 4,096: benchmarks/RESULTS.md § Measurements behind the code). str.join has no such array; neither has
#: _join.join_pieces, which gathers pieces by id.
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


# -- tokenizer_config.json (transformers' file; the huggingface and tiktoken kinds read it) ------


def read_added_tokens(path: str) -> dict[int, dict[str, Any]]:
    """The added_tokens_decoder of a tokenizer_config.json, checked: {id: entry}."""
    config = read_json(path, "tokenizer_config.json")
    if not isinstance(config, dict):
        raise MalformedAssetError(f"{path}: tokenizer_config.json must hold a JSON object", path=path)
    declared = config.get("added_tokens_decoder")
    if declared is None:
        declared = {}
    if not isinstance(declared, dict):
        raise MalformedAssetError(f"{path}: added_tokens_decoder must map ids to tokens", path=path)
    entries: dict[int, dict[str, Any]] = {}
    for key, entry in declared.items():
        # An id key is decimal digits, as transformers writes it ("151643"); int() would also
        # take "-1", "+5", " 7" and "1_000".
        token_id = int(key) if isinstance(key, str) and key.isascii() and key.isdigit() else None
        if token_id is None or json_id(token_id) is None:
            raise MalformedAssetError(
                f"{path}: added_tokens_decoder key {short_repr(key)} is not a token id", path=path
            )
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not entry["content"]:
            raise MalformedAssetError(
                f"{path}: added_tokens_decoder[{key!r}] must be an object with a non-empty 'content'", path=path
            )
        entries[token_id] = entry
    return entries


def declared_roles(sources: Iterable[Mapping[str, Any]]) -> dict[str, str | None]:
    """role -> token text as the first of `sources` (parsed tokenizer_config.json,
    special_tokens_map.json) that names it declares it (`bos_token`: a string, or an object
    with its `content`); None for a role declared absent (null)."""
    declared: dict[str, str | None] = {}
    for data in sources:
        for role in ROLES:
            key = f"{role}_token"
            if key in data and role not in declared:
                value = data[key]
                if isinstance(value, dict):
                    value = value.get("content")
                declared[role] = value if isinstance(value, str) else None
    return declared


def config_chat_templates(config: Mapping[str, Any], path: str) -> dict[str, str] | None:
    """The chat templates a tokenizer_config.json carries in `chat_template` (a string: the
    default one; a list of {"name", "template"}: named ones), None when it carries none."""
    value = config.get("chat_template")
    if isinstance(value, str):
        return {"default": value}
    if not isinstance(value, list):
        return None
    templates: dict[str, str] = {}
    for entry in value:
        if not (
            isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("template"), str)
        ):
            raise MalformedAssetError(
                f"{path}: chat_template list entries must be {{'name': str, 'template': str}}", path=path
            )
        templates[entry["name"]] = entry["template"]
    return templates
