"""Our own reader of a GGUF file's header and key/value section (versions 2 and 3, either byte
order). It stops where the tensor infos begin and never touches tensor data, so a multi-GB
model costs what its metadata costs. The `gguf` package's GGUFReader is the test oracle, not a
dependency: it parses every tensor info too (refusing tensor types it does not know) and
builds one numpy array per string, seconds for a 150k-token vocabulary.

Every length and count in the file is checked against the bytes that are left before anything
is read or allocated for it: a corrupt or hostile file gives a MalformedAssetError naming the
file, the key and the offset. The checks are llama.cpp's (gguf.cpp): magic "GGUF", version 2
or 3 (1 is obsolete), no empty or duplicate keys, no nested arrays, known value types,
`general.alignment` a uint32.

Strings are kept as `str` decoded with "surrogateescape", so the exact bytes of a token that
is not valid UTF-8 survive (`text.encode("utf-8", "surrogateescape")`).
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from dataclasses import dataclass, field
from typing import Any

from ..api import (
    GGUF_MAGIC,
    AssetNotFoundError,
    MalformedAssetError,
    on_disk,
    starts_with,
)

__all__ = [
    "GGUF_MAGIC",
    "DeferredStrings",
    "GGUFMetadata",
    "ValueType",
    "is_gguf_file",
    "read_gguf_header",
    "read_gguf_metadata",
]

_MAX_STRING = 1 << 30  # llama.cpp's GGUF_MAX_STRING_LENGTH and GGUF_MAX_ARRAY_ELEMENTS


class ValueType:
    """GGUF value type codes (gguf.h)."""

    UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
    NAMES = (
        "uint8",
        "int8",
        "uint16",
        "int16",
        "uint32",
        "int32",
        "float32",
        "bool",
        "string",
        "array",
        "uint64",
        "int64",
        "float64",
    )


# type code -> (struct letter, array typecode, size)
_SCALARS: dict[int, tuple[str, str, int]] = {
    ValueType.UINT8: ("B", "B", 1),
    ValueType.INT8: ("b", "b", 1),
    ValueType.UINT16: ("H", "H", 2),
    ValueType.INT16: ("h", "h", 2),
    ValueType.UINT32: ("I", "I", 4),
    ValueType.INT32: ("i", "i", 4),
    ValueType.FLOAT32: ("f", "f", 4),
    ValueType.BOOL: ("B", "B", 1),
    ValueType.UINT64: ("Q", "Q", 8),
    ValueType.INT64: ("q", "q", 8),
    ValueType.FLOAT64: ("d", "d", 8),
}
_NATIVE = "<" if sys.byteorder == "little" else ">"


@dataclass
class GGUFMetadata:
    """What a GGUF file says before its tensor infos.

    values: key -> value (int, float, bool, str, or a list of them for arrays).
    types: key -> (value type, element type or None), as ValueType codes.
    offsets: key -> byte offset of the key's record, for error messages.
    """

    path: str
    version: int
    byte_order: str  # "<" little-endian or ">" big-endian
    tensor_count: int
    values: dict[str, Any] = field(default_factory=dict)
    types: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)
    tensor_info_offset: int = 0

    def type_name(self, key: str) -> str:
        kind, element = self.types[key]
        if kind == ValueType.ARRAY and element is not None:
            return f"array of {ValueType.NAMES[element]}"
        return ValueType.NAMES[kind]


def is_gguf_file(path: str) -> bool:
    """Whether `path` is a regular file starting with the GGUF magic (content, not name)."""
    return starts_with(path, GGUF_MAGIC)


def read_gguf_header(path: str) -> tuple[int, str]:
    """(version, "little" or "big") of a GGUF file, from its first 8 bytes."""
    with open(on_disk(path), "rb") as handle:
        head = handle.read(8)
    if len(head) < 8 or head[:4] != GGUF_MAGIC:
        raise MalformedAssetError(f"{path}: not a GGUF file (no GGUF magic)", path=path)
    (version,) = struct.unpack_from("<I", head, 4)
    if version & 0xFFFF == 0:
        return struct.unpack_from(">I", head, 4)[0], "big"
    return version, "little"


class _Cursor:
    """Bounds-checked reads from the mapped file."""

    def __init__(self, data: Any, size: int, path: str, order: str) -> None:
        self.data = data
        self.size = size
        self.path = path
        self.order = order
        self.pos = 0
        self.where = "header"

    def fail(self, message: str, offset: int | None = None) -> MalformedAssetError:
        at = self.pos if offset is None else offset
        return MalformedAssetError(f"{self.path}: GGUF {self.where} at offset {at}: {message}", path=self.path)

    def need(self, n: int, what: str) -> None:
        if n < 0 or n > self.size - self.pos:
            raise self.fail(
                f"{what} needs {n} bytes but only {self.size - self.pos} are left (truncated or corrupt file)"
            )

    def scalar(self, letter: str, size: int, what: str) -> Any:
        self.need(size, what)
        value = struct.unpack_from(self.order + letter, self.data, self.pos)[0]
        self.pos += size
        return value

    def string(self, what: str) -> str:
        length = self.scalar("Q", 8, f"the length of {what}")
        if length > _MAX_STRING:
            raise self.fail(f"{what} claims {length} bytes, more than GGUF allows")
        self.need(length, what)
        start = self.pos
        self.pos += length
        return bytes(self.data[start : self.pos]).decode("utf-8", "surrogateescape")

    def string_array(self, count: int, deferred: bool = False) -> list[str] | DeferredStrings:
        from ..api import read_string_array, skip_string_array

        start = self.pos
        try:
            if deferred:
                self.pos = skip_string_array(self.data, self.pos, count, self.order == ">")
                return DeferredStrings(self.path, start, count, self.order, self.pos)
            strings: list[str]
            strings, self.pos = read_string_array(self.data, self.pos, count, self.order == ">")
        except ValueError as exc:
            index, offset, message = exc.args
            raise self.fail(f"string {index} of {count}: {message}", offset) from None
        return strings

    def numeric_array(self, kind: int, count: int) -> list[Any]:
        _, code, size = _SCALARS[kind]
        self.need(count * size, f"an array of {count} {ValueType.NAMES[kind]}")
        values = array(code)
        values.frombytes(self.data[self.pos : self.pos + count * size])
        if self.order != _NATIVE and size > 1:
            values.byteswap()
        self.pos += count * size
        result = values.tolist()
        if kind == ValueType.BOOL:
            return [v != 0 for v in result]
        return result


@dataclass(frozen=True)
class DeferredStrings:
    """An array of strings that was checked but not decoded (read_gguf_metadata's `defer`):
    `load()` reads it when it is needed, from the same file."""

    path: str
    offset: int
    count: int
    order: str
    end: int

    def __len__(self) -> int:
        return self.count

    def load(self) -> list[str]:
        from ..api import read_string_array

        with open(on_disk(self.path), "rb") as handle:
            handle.seek(self.offset)
            data = handle.read(self.end - self.offset)
        strings: list[str]
        try:
            strings, _ = read_string_array(data, 0, self.count, self.order == ">")
        except ValueError as exc:  # the file changed since it was checked
            raise MalformedAssetError(
                f"{self.path}: GGUF string array at offset {self.offset} changed: {exc.args[-1]}", path=self.path
            ) from None
        return strings


def _value(cur: _Cursor, kind: int, defer: bool = False) -> tuple[Any, int | None]:
    if kind == ValueType.STRING:
        return cur.string("a string value"), None
    if kind in _SCALARS:
        letter, _, size = _SCALARS[kind]
        value = cur.scalar(letter, size, f"a {ValueType.NAMES[kind]} value")
        return (value != 0 if kind == ValueType.BOOL else value), None
    if kind == ValueType.ARRAY:
        element = cur.scalar("I", 4, "the element type of an array")
        count = cur.scalar("Q", 8, "the length of an array")
        if element == ValueType.ARRAY:
            raise cur.fail("nested arrays are not allowed in GGUF metadata")
        if element == ValueType.STRING:
            if count > _MAX_STRING or count * 8 > cur.size - cur.pos:
                raise cur.fail(f"an array of {count} strings cannot fit in the {cur.size - cur.pos} bytes left")
            return cur.string_array(count, defer), element
        if element not in _SCALARS:
            raise cur.fail(f"an array has unknown element type {element}")
        if count > _MAX_STRING:
            raise cur.fail(f"an array claims {count} elements, more than GGUF allows")
        return cur.numeric_array(element, count), element
    raise cur.fail(f"unknown value type {kind}")


def read_gguf_metadata(path: str, defer: frozenset[str] = frozenset()) -> GGUFMetadata:
    """The header and key/value pairs of the GGUF file at `path`. String arrays named in
    `defer` are checked but left undecoded (a DeferredStrings, read by its load())."""
    path = os.fspath(path)
    try:
        handle = open(on_disk(path), "rb")
    except OSError as exc:
        raise AssetNotFoundError(f"cannot read GGUF file {path!r}: {exc.strerror}", path=path) from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size < 24:
            raise MalformedAssetError(f"{path}: not a GGUF file: {size} bytes, shorter than a GGUF header", path=path)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(data, size, path, defer)


def _parse(data: Any, size: int, path: str, defer: frozenset[str]) -> GGUFMetadata:
    if data[:4] != GGUF_MAGIC:
        raise MalformedAssetError(f"{path}: not a GGUF file: magic {bytes(data[:4])!r}, expected b'GGUF'", path=path)
    (version,) = struct.unpack_from("<I", data, 4)
    order = "<"
    if version & 0xFFFF == 0:  # a big-endian file read as little-endian (gguf-py's rule)
        (version,) = struct.unpack_from(">I", data, 4)
        order = ">"
    cur = _Cursor(data, size, path, order)
    cur.pos = 8
    if version == 1:
        raise cur.fail("GGUF version 1 is obsolete and not supported (versions 2 and 3 are)", 4)
    if version not in (2, 3):
        raise cur.fail(f"unsupported GGUF version {version} (versions 2 and 3 are supported)", 4)
    tensor_count = cur.scalar("Q", 8, "the tensor count")
    kv_count = cur.scalar("Q", 8, "the key/value count")
    # A key/value record takes at least 8 (key length) + 1 (key) + 4 (type) + 1 (value) bytes.
    if kv_count > (size - cur.pos) // 14:
        raise cur.fail(f"the header claims {kv_count} key/value pairs, more than the file can hold", 16)
    meta = GGUFMetadata(path=path, version=version, byte_order=order, tensor_count=tensor_count)
    for index in range(kv_count):
        start = cur.pos
        cur.where = f"key/value pair {index}"
        key = cur.string("a key")
        if not key:
            raise cur.fail("empty key", start)
        if key in meta.values:
            raise cur.fail(f"duplicate key {key!r}", start)
        cur.where = f"key {key!r}"
        kind = cur.scalar("I", 4, "the value type")
        value, element = _value(cur, kind, key in defer)
        meta.values[key] = value
        meta.types[key] = (kind, element)
        meta.offsets[key] = start
    if "general.alignment" in meta.types and meta.types["general.alignment"][0] != ValueType.UINT32:
        raise MalformedAssetError(
            f"{path}: GGUF key 'general.alignment' at offset {meta.offsets['general.alignment']} must be a uint32, "
            f"not {meta.type_name('general.alignment')}",
            path=path,
        )
    meta.tensor_info_offset = cur.pos
    return meta


#: The key families a vocabulary-only GGUF keeps: what the gguf kind reads, and what
#: llama.cpp's own vocab-only files (its models/ggml-vocab-*.gguf) hold.
VOCABULARY_KEY_PREFIXES = ("tokenizer.", "general.")


def vocabulary_only_gguf(path: str) -> bytes:
    """The GGUF at `path` reduced to its ``tokenizer.*`` and ``general.*`` key/value records
    and no tensors: what a tokenizer pickled by value carries instead of a model file.

    The kept records are copied byte for byte (their own byte order and version), so the
    result reads exactly as the original does for every kept key. Only the metadata is read
    (the tensor data, gigabytes in a model file, is never touched)."""
    meta = read_gguf_metadata(path, defer=frozenset(key for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")))
    starts = sorted(meta.offsets.values())
    ends = dict(zip(starts, starts[1:] + [meta.tensor_info_offset]))
    kept = sorted(meta.offsets[key] for key in meta.offsets if key.startswith(VOCABULARY_KEY_PREFIXES))
    with open(path, "rb") as handle:
        head = handle.read(8)
        records = []
        for start in kept:
            handle.seek(start)
            records.append(handle.read(ends[start] - start))
    if any(len(r) != ends[s] - s for r, s in zip(records, kept)):
        raise MalformedAssetError(f"{path}: the GGUF file changed while it was read", path=path)
    body = head + struct.pack(meta.byte_order + "QQ", 0, len(kept)) + b"".join(records)
    # The (empty) tensor data section starts at the next multiple of the alignment, as in
    # any GGUF; readers may seek there.
    alignment = meta.values.get("general.alignment", 32)
    alignment = alignment if isinstance(alignment, int) and alignment > 0 else 32
    return body + bytes(-len(body) % alignment)
