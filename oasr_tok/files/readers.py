"""Reading a tokenizer's asset files: bytes, UTF-8 text, lines and JSON, with typed errors that
name the file (and the line), from the file system or from a member of an archive."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..errors import AssetNotFoundError, MalformedAssetError
from .archive import is_archive_ref, read_member

# -- files this process promised: their bytes are here, and written to their path when read there --

#: path -> the call that writes it (core/pickling.py: a tokenizer rebuilt from a by-value pickle
#: builds from the bytes and writes its files when something first asks for them by path).
_promised: dict[str, Callable[[], None]] = {}


def promise(path: str, write: Callable[[], None]) -> None:
    """`write()` puts the file at `path`, which every reader here (and `on_disk`) calls first."""
    _promised[path] = write


def withdraw(path: str) -> None:
    """Forget the promise of `path` (written, or its bytes refused)."""
    _promised.pop(path, None)


def on_disk(path: str) -> str:
    """`path`, its file written first if this process promised it (`promise`). Every reader that
    opens a path itself (a C library's loader, open(), mmap, a folder listing) passes it through
    this first; a dict lookup otherwise."""
    write = _promised.get(path)
    if write is not None:
        write()
    return path


class PromisedPaths(Mapping[str, str]):
    """role -> path, as a spec holds them, each path passed through `on_disk` when it is handed
    out: the files of a tokenizer rebuilt from a by-value pickle are written when its spec's
    paths are first read (its spec travelling, a library given its paths), not when it is built.
    Pickles (and compares) as the plain dict of paths, its files written."""

    __slots__ = ("_paths",)

    def __init__(self, paths: dict[str, str]) -> None:
        self._paths = paths

    def __getitem__(self, role: str) -> str:
        return on_disk(self._paths[role])

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, role: object) -> bool:
        return role in self._paths

    def __repr__(self) -> str:
        return repr(self._paths)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self.items()),))


def existing_file(path: str, what: str) -> str:
    """`path` if it is a readable file (or names a member of an archive, oasr_tok/files/archive.py,
    or its bytes are given: reading_given); AssetNotFoundError naming it otherwise. A promised
    file is written first (`on_disk`)."""
    given: dict[str, bytes] | None = getattr(_scope, "given", None)
    if given is not None and path in given:
        return path
    if not os.path.isfile(on_disk(path)) and not is_archive_ref(path):
        raise AssetNotFoundError(f"{what} file not found: {path!r}", path=path)
    return path


def read_bytes(path: str, what: str) -> bytes:
    """The content of a file, or of an archive member (``archive::member``)."""
    given: dict[str, bytes] | None = getattr(_scope, "given", None)
    if given is not None and path in given:
        return given[path]
    if is_archive_ref(path):
        return read_member(path, what)
    existing_file(path, what)
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise AssetNotFoundError(f"cannot read {what} file {path!r}: {exc.strerror}", path=path) from None


def read_text(path: str, what: str) -> str:
    return _decoded(path, read_bytes(path, what), what)


def _decoded(path: str, raw: bytes, what: str) -> str:
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


def parse_json(path: str, text: str, what: str, object_pairs_hook: Any = None) -> Any:
    """`text` (the content of `path`) as JSON (`object_pairs_hook` as json.loads takes it);
    MalformedAssetError naming the file and line."""
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise MalformedAssetError(
            f"{path}:{exc.lineno}: {what} is not valid JSON: {exc.msg}", path=path, line=exc.lineno
        ) from None
    except RecursionError:
        raise MalformedAssetError(f"{path}: {what} is nested too deeply to be a tokenizer file", path=path) from None


_scope = threading.local()


@contextmanager
def reading_once() -> Iterator[None]:
    """Within it (one load or resolve, in this thread), each JSON file is parsed once: the
    detectors that glance at a tokenizer.json and the kind that builds from it share one
    parse (a tenth of a second for a 150,000-token vocabulary, up to four times over for a
    single .json file). The contents are let go when the outermost scope ends; callers
    only read them."""
    outer = getattr(_scope, "contents", None)
    if outer is None:
        _scope.contents = {}
    try:
        yield
    finally:
        if outer is None:
            _scope.contents = None


@contextmanager
def reading_given(contents: dict[str, bytes]) -> Iterator[None]:
    """Within it (in this thread), read_bytes of these paths gives these bytes, and
    existing_file takes them as there: what is being written there, which the caller holds (a
    tokenizer rebuilt from a by-value pickle builds from the bytes it received while another
    thread writes the files it reads later)."""
    outer = getattr(_scope, "given", None)
    _scope.given = {**outer, **contents} if outer else dict(contents)
    try:
        yield
    finally:
        _scope.given = outer


def read_json(path: str, what: str) -> Any:
    """The JSON content of `path`; typed errors naming the file (and line). A tokenizer.json's
    model.merges comes back as [] (see _parsed)."""
    contents: dict[tuple[str, int, int], Any] | None = getattr(_scope, "contents", None)
    if contents is None or is_archive_ref(path):
        return _parsed(path, what)
    given: dict[str, bytes] | None = getattr(_scope, "given", None)
    if given is not None and path in given:
        return _parsed(path, what)
    try:
        stat = os.stat(on_disk(path))
    except OSError:
        return _parsed(path, what)  # which says what is wrong, naming it
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if key not in contents:
        contents[key] = _parsed(path, what)
    return contents[key]


_MERGES_KEY = b'"merges"'
_KEY_AFTER = re.compile(rb"\s*:\s*")


def _parsed(path: str, what: str) -> Any:
    """The file parsed, less the value of a tokenizer.json's model.merges, which is not
    parsed at all: nothing in oasr_tok reads it (decoding needs no merges; the `tokenizers`
    runtime reads the file itself), and it is half of the file and most of its parse (Qwen3:
    151,387 strings; the cold-load rows of benchmarks/RESULTS.md). The cut
    is made only when the file names "merges" once, as a key whose value is an array, and is
    kept only when the parse shows it was model.merges; otherwise (and for any error, whose
    line must be the file's) the file is parsed in full."""
    raw = read_bytes(path, what)
    at = raw.find(_MERGES_KEY)
    if at > 0 and raw.find(_MERGES_KEY, at + 1) < 0 and raw[max(0, at - 256) : at].rstrip()[-1:] in (b"{", b","):
        from .._engine.jsonscan import array_end

        after = _KEY_AFTER.match(raw, at + len(_MERGES_KEY))
        start = after.end() if after else -1
        end = array_end(raw, start) if start >= 0 else -1
        if end > 0:
            cut = raw[:start] + b"[]" + raw[end:]
            del raw  # (the peak RSS of a load is its parse: hold one copy of the file, not three)
            try:
                data = parse_json(path, _decoded(path, cut, what), what)
            except MalformedAssetError:
                data = None
            del cut
            model = data.get("model") if isinstance(data, dict) else None
            if isinstance(model, dict) and model.get("merges") == []:
                return data
            raw = read_bytes(path, what)
    return parse_json(path, _decoded(path, raw, what), what)


def all_json_ids(values: Collection[Any]) -> bool:
    """Whether every value is a token id by json_id's rule, said in bulk (a vocabulary has
    150,000: a call each was a visible part of Qwen3's load)."""
    return not values or (set(map(type, values)) == {int} and min(values) >= 0)


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


def starts_with(path: str, magic: bytes) -> bool:
    """Whether `path` is a readable file whose content starts with `magic`."""
    try:
        with open(on_disk(path), "rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError:
        return False
