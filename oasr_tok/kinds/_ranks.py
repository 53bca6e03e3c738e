"""tiktoken-format vocabularies: what the three kinds that read them share (tekken's tekken.json,
whisper's .tiktoken, the tiktoken kind's rank files).

A tiktoken vocabulary is a list of byte strings, one per rank, and special tokens laid out
around the ranks. Decoding one is joining the bytes of the ids and reading them as lossy UTF-8;
the kinds differ only in where the special ids sit and whether a special id cuts a byte run.

* `read_rank_file`: a `base64(token bytes) rank` file (openai-whisper's .tiktoken, Meta's
  tokenizer.model, Kimi-Audio's tiktoken.model), read in compiled code with typed errors
  naming the file and the line (_engine/ranks.pyx says the rules).
* `byte_table`: the compiled streaming engine over a kind's per-id bytes (specials render
  nothing; optionally they cut the byte run, as tekken's do).
* `LazyEncoding`: tiktoken's own `Encoding` of the vocabulary, built on the first encode (a
  decode never needs tiktoken), with the install hint of the kind's extra.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .api import (
    FLAG_BREAK,
    FLAG_SKIP,
    BackendNotInstalledError,
    MalformedAssetError,
    PieceTable,
    read_bytes,
    read_ranks,
)

__all__ = ["LazyEncoding", "byte_table", "read_rank_file", "tiktoken_encoding"]


def read_rank_file(path: str, what: str) -> list[bytes]:
    """The bytes of every rank of a `base64 rank` file, in rank order; MalformedAssetError
    naming the file and the line for a bad line, and for a file without ranks."""
    ranks = read_ranks(read_bytes(path, what), path)
    if not ranks:
        raise MalformedAssetError(f"{path}: the {what} file has no ranks", path=path)
    return ranks


def byte_table(pieces: Sequence[bytes], skipped: Iterable[int], *, breaks: bool = False, **rules: Any) -> PieceTable:
    """The compiled engine over `pieces` (the bytes each id renders) in byte mode: the ids in
    `skipped` render nothing and, with `breaks`, also cut the byte run (a character split by
    one renders as two invalid groups, tekken's rule); else bytes join across them, as
    tiktoken's decode of the ids left after the specials are taken out joins them. `rules`
    are PieceTable's further arguments (whisper's `prompt`)."""
    flags = bytearray(len(pieces))
    mark = FLAG_SKIP | FLAG_BREAK if breaks else FLAG_SKIP
    for token_id in skipped:
        flags[token_id] = mark
    return PieceTable(tuple(pieces), flags=bytes(flags), mode="bytes", **rules)


def tiktoken_encoding(
    *,
    name: str,
    pattern: str,
    ranks: Sequence[bytes],
    specials: dict[str, int],
    path: str,
    who: str,
    extra: str,
    n_vocab: int | None = None,
) -> Any:
    """tiktoken's Encoding of `ranks` (rank = position) with `specials` and the split
    `pattern`: BackendNotInstalledError naming the extra when tiktoken is absent,
    MalformedAssetError naming the file when tiktoken refuses what it was given."""
    try:
        import tiktoken
    except ImportError as exc:
        raise BackendNotInstalledError(
            f"{who} needs the 'tiktoken' package ({exc}); pip install 'oasr_tok[{extra}]'"
        ) from exc
    try:
        return tiktoken.Encoding(
            name=name,
            pat_str=pattern,
            mergeable_ranks=dict(zip(ranks, range(len(ranks)))),
            special_tokens=specials,
            explicit_n_vocab=n_vocab,
        )
    except ValueError as exc:  # tiktoken's own refusal (a pattern it cannot compile, a count)
        raise MalformedAssetError(f"{path}: tiktoken cannot use it: {exc}", path=path) from None


class LazyEncoding:
    """A tiktoken Encoding made by `build()` on the first `get()`, once, whichever thread asks
    first; a failed build is tried again on the next call."""

    __slots__ = ("_build", "_encoding", "_lock")

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._encoding: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        encoding = self._encoding
        if encoding is None:
            with self._lock:
                if self._encoding is None:
                    self._encoding = self._build()
                encoding = self._encoding
        return encoding
