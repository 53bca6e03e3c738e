"""What a kind author needs, in one public place: the names a kind (built-in or plug-in) builds
on, stable across releases. Everything else under ``oasr_tok`` whose name starts with ``_`` is
the package's own and may change; a plug-in imports from here (docs/architecture.md § Adding a
kind; tests/example_kind.py is a whole plug-in written against this module alone).

* **The contract**: ``Tokenizer`` (subclass it: ``vocab_size``, ``special_ids``, ``decode``),
  ``TokenizerSpec`` (what a factory is given: ``spec.file(role)``, ``spec.options``).
* **The constant-cost engine**: ``PieceTable`` (per id a piece of text or raw bytes, and its
  flags) and ``TableMethods`` (list it first among the bases and set ``self._table``: the
  compiled ``decode_incremental`` / ``token_pieces`` / streams then come from the table).
  Flags: ``FLAG_SKIP`` (renders nothing), ``FLAG_BYTE`` (a ``<0xNN>`` byte piece, its value in
  ``byte_values``), ``FLAG_KEEP_FIRST``, ``FLAG_BREAK``, ``FLAG_END_FIRST``
  (``PieceTable``'s docstring says what each does).
* **Reading files** with typed errors that name the file and line: ``read_text``,
  ``read_lines``, ``read_json``, ``read_bytes``, ``existing_file``, ``check_id_span``.
* **Being found**: a detector returns ``{role: path}`` or None; ``Found`` and ``SetAside``
  are the records a detector may return instead when it has evidence to report
  (``describe`` shows it); ``folder_names`` lists a folder once per resolution.
* **Registering**: ``register_tokenizer(kind, factory, detect=..., precedence=...)``, or an
  entry point in the ``oasr_tok.kinds`` group naming a factory that carries ``detect`` (and
  ``precedence``) as attributes. A name already taken (a built-in included) is refused unless
  ``replace=True``; an entry point naming a taken kind is not loaded, with a warning.
* **Errors**: ``TokenizerError`` and its subclasses (``MalformedAssetError``, ``SpecError``,
  ``InvalidIdError``, ``EncodeNotSupportedError``...).

Example:
    >>> from oasr_tok.kinds.api import FLAG_SKIP, PieceTable
    >>> table = PieceTable(["a", "b", ""], flags=bytes([0, 0, FLAG_SKIP]))
    >>> table.render([0, 2, 1])
    'ab'
"""

from __future__ import annotations

from .._engine.piece_table import (
    FLAG_BREAK,
    FLAG_BYTE,
    FLAG_END_FIRST,
    FLAG_KEEP_FIRST,
    FLAG_SKIP,
    PieceTable,
    TableMethods,
)
from ..core.registry import register_tokenizer, unregister_tokenizer
from ..core.tokenizer import Tokenizer
from ..errors import (
    AssetNotFoundError,
    EncodeError,
    EncodeNotSupportedError,
    InvalidIdError,
    MalformedAssetError,
    NonIntegerIdError,
    SpecError,
    TokenizerError,
)
from ..files.detection import Found, SetAside, folder_names
from ..files.readers import check_id_span, existing_file, read_bytes, read_json, read_lines, read_text
from ..spec import TokenizerSpec

__all__ = [
    "FLAG_BREAK",
    "FLAG_BYTE",
    "FLAG_END_FIRST",
    "FLAG_KEEP_FIRST",
    "FLAG_SKIP",
    "AssetNotFoundError",
    "EncodeError",
    "EncodeNotSupportedError",
    "Found",
    "InvalidIdError",
    "MalformedAssetError",
    "NonIntegerIdError",
    "PieceTable",
    "SetAside",
    "SpecError",
    "TableMethods",
    "Tokenizer",
    "TokenizerError",
    "TokenizerSpec",
    "check_id_span",
    "existing_file",
    "folder_names",
    "read_bytes",
    "read_json",
    "read_lines",
    "read_text",
    "register_tokenizer",
    "unregister_tokenizer",
]
