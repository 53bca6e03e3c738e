"""What a kind author needs, in one public place: the names a kind (built-in or plug-in) builds
on, stable across releases. Everything else under ``oasr_tok`` whose name starts with ``_`` is
the package's own and may change; a plug-in imports from here, and so does every built-in kind
(tests/house/test_layers.py holds them to it: the modules of oasr_tok/kinds import this module
and each other, nothing else of oasr_tok). docs/architecture.md § Adding a kind walks through a
kind; tests/example_kind.py is a whole plug-in written against this module alone.

* **Declaring a kind**: ``KindRecord(name, factory, detect=..., precedence=..., backend=...,
  extra=...)`` — a built-in kind's module declares it as ``KIND``, a plug-in names it in an
  entry point of the ``oasr_tok.kinds`` group (``letters = "letters_kind:KIND"``) or gives it to
  ``register_kind(record)`` (``register_tokenizer(kind, factory, ...)`` makes the record). A
  name already taken (a built-in included) is refused unless ``replace=True``;
  ``unregister_tokenizer`` removes a registration. ``PLUGIN_PRECEDENCE``: where a detector
  stands by default, after the built-ins'.
* **The contract**: ``Tokenizer`` (subclass it: ``vocab_size``, ``special_ids``, ``decode``),
  ``TokenizerSpec`` (what a factory is given: ``spec.file(role)``, ``spec.options``).
* **The constant-cost engine**: ``PieceTable`` (per id a piece of text or raw bytes, and its
  flags) and ``TableMethods`` (list it first among the bases and set ``self._table``: the
  compiled ``decode_incremental`` / ``token_pieces`` / streams then come from the table).
  Flags: ``FLAG_SKIP`` (renders nothing), ``FLAG_BYTE`` (a ``<0xNN>`` byte piece, its value in
  ``byte_values``), ``FLAG_KEEP_FIRST``, ``FLAG_BREAK``, ``FLAG_END_FIRST``
  (``PieceTable``'s docstring says what each does). ``join_pieces`` / ``gather``: a decode as
  pieces gathered by id and joined (the GIL released on long ones); ``check_ids`` /
  ``batch_rows``: ids read and checked as every kind reads them (lists, tuples, integer
  buffers, padded 2-D batches); ``CTCStream`` / ``delimited_words``: CTC's neighbour rules and
  a delimiter's words; ``CleanSpacesStream``: llama.cpp's ``clean_spaces`` streamed;
  ``byte_level_pieces``: the GPT-2 byte alphabet's pieces as bytes; ``read_string_array`` /
  ``skip_string_array``: a GGUF string array; ``funasr_machine``: FunASR's element rules.
* **A stream of your own** (a kind whose rendering is not a table: a dict state it keeps
  itself): ``commit_text`` (``state["text"]`` grown in place, the held tail recorded),
  ``check_state`` / ``check_owner`` / ``table_tag`` (a state only the tables that made it may
  continue), ``Stream`` and ``feed_for`` (a ``new_stream`` Stream fed through the kind),
  ``stream_closed_error``.
* **Special tokens and words**: ``SpecialTokens`` / ``SpecialTokensBuilder`` (a kind's special
  tokens by role, where each was read), ``ROLES``; ``Word`` / ``Words`` and the ``Times`` /
  ``Scores`` they are made from (``checked_scores``, ``scored``); ``Segment`` /
  ``whisper_segments`` (Whisper's timestamp segments).
* **Reading files** with typed errors that name the file and line: ``read_text``,
  ``read_lines``, ``read_json``, ``read_bytes``, ``parse_json``, ``text_lines``,
  ``existing_file``, ``starts_with``, ``check_id_span`` (an id span a file may claim: at most
  ``ID_SLACK`` past its entries), ``json_id`` / ``all_json_ids`` (ids as JSON holds them),
  ``base64_token``; ``on_disk`` (a path passed through it before a library opens it
  itself: a file a by-value pickle brought is written when first asked for); members of a ``.nemo`` archive: ``is_archive_ref``, ``read_member``;
  ``register_value_reader`` (how a pickle by value carries a kind's file).
* **Being found**: a detector returns ``{role: path}`` or None; ``Found`` and ``SetAside``
  (one ``Detected`` each) are the records a detector may return instead when it has evidence
  to report (``describe`` shows it); ``folder_names`` lists a folder once per resolution. The
  sniffs several detectors share: ``sniff_text_table``, ``plain_text_candidate``,
  ``is_tiktoken_ranks`` (with ``TIKTOKEN_SUFFIX`` and ``TIKTOKEN_SET_ASIDE``),
  ``markup_evidence`` and ``summarise``, ``GGUF_MAGIC``, ``SPEC_FILE``.
* **Errors**: ``TokenizerError`` and its subclasses (``MalformedAssetError``, ``SpecError``,
  ``InvalidIdError``, ``EncodeNotSupportedError``, ``BackendNotInstalledError``,
  ``UnsupportedDecoderError``...); ``short_repr`` (a caller's value, cut short, for a message).

The compiled parts ``import oasr_tok`` does not load (``join_pieces``, ``gather``,
``byte_level_pieces``, ``CleanSpacesStream``, the GGUF string arrays, ``funasr_machine``) are
imported on first use, so a kind pays only for what it uses.

Example:
    >>> from oasr_tok.kinds.api import FLAG_SKIP, PieceTable
    >>> table = PieceTable(["a", "b", ""], flags=bytes([0, 0, FLAG_SKIP]))
    >>> table.render([0, 2, 1])
    'ab'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .._engine.ctc import CTCStream, delimited_words
from .._engine.ids import batch_rows, check_ids
from .._engine.piece_table import (
    FLAG_BREAK,
    FLAG_BYTE,
    FLAG_END_FIRST,
    FLAG_KEEP_FIRST,
    FLAG_SKIP,
    PieceTable,
    TableMethods,
)
from .._engine.stream import Stream, feed_for
from .._engine.textbuf import check_owner, check_state, commit_text, table_tag
from ..core.registry import (
    PLUGIN_PRECEDENCE,
    KindRecord,
    register_kind,
    register_tokenizer,
    unregister_tokenizer,
)
from ..core.specials import ROLES, SpecialTokens, SpecialTokensBuilder
from ..core.tokenizer import Tokenizer
from ..core.words import Scores, Times, Word, Words, checked_scores, scored
from ..errors import (
    AssetNotFoundError,
    BackendNotInstalledError,
    EncodeError,
    EncodeNotSupportedError,
    InvalidIdError,
    MalformedAssetError,
    NonIntegerIdError,
    ResolveError,
    SpecError,
    StreamStateError,
    TimingError,
    TokenizerError,
    UnsupportedDecoderError,
    short_repr,
    stream_closed_error,
)
from ..files.archive import is_archive_ref, read_member
from ..files.assets import register_value_reader
from ..files.detection import (
    GGUF_MAGIC,
    SPEC_FILE,
    TIKTOKEN_SET_ASIDE,
    TIKTOKEN_SUFFIX,
    WHISPER_TIKTOKEN_NAMES,
    Detected,
    Found,
    SetAside,
    folder_names,
    is_tiktoken_ranks,
    is_whisper_vocabulary,
    markup_evidence,
    plain_text_candidate,
    sniff_text_table,
    summarise,
)
from ..files.readers import (
    ID_SLACK,
    all_json_ids,
    base64_token,
    check_id_span,
    existing_file,
    json_id,
    on_disk,
    parse_json,
    read_bytes,
    read_json,
    read_lines,
    read_text,
    starts_with,
    text_lines,
)
from ..outputs.envelopes import AudioIds
from ..outputs.segments import Segment, whisper_segments
from ..spec import TokenizerSpec

if TYPE_CHECKING:  # imported on first use (__getattr__ below)
    from .._engine import funasr as funasr_machine
    from .._engine.bytelevel import byte_level_pieces
    from .._engine.clean_spaces import CleanSpacesStream
    from .._engine.gguf import read_string_array, skip_string_array
    from .._engine.join import gather, join_pieces
    from .._engine.ranks import read_ranks

__all__ = [
    "FLAG_BREAK",
    "FLAG_BYTE",
    "FLAG_END_FIRST",
    "FLAG_KEEP_FIRST",
    "FLAG_SKIP",
    "GGUF_MAGIC",
    "ID_SLACK",
    "PLUGIN_PRECEDENCE",
    "ROLES",
    "SPEC_FILE",
    "TIKTOKEN_SET_ASIDE",
    "TIKTOKEN_SUFFIX",
    "WHISPER_TIKTOKEN_NAMES",
    "AssetNotFoundError",
    "AudioIds",
    "BackendNotInstalledError",
    "CTCStream",
    "CleanSpacesStream",
    "Detected",
    "EncodeError",
    "EncodeNotSupportedError",
    "Found",
    "InvalidIdError",
    "KindRecord",
    "MalformedAssetError",
    "NonIntegerIdError",
    "PieceTable",
    "ResolveError",
    "Scores",
    "Segment",
    "SetAside",
    "SpecError",
    "SpecialTokens",
    "SpecialTokensBuilder",
    "Stream",
    "StreamStateError",
    "TableMethods",
    "Times",
    "TimingError",
    "Tokenizer",
    "TokenizerError",
    "TokenizerSpec",
    "UnsupportedDecoderError",
    "Word",
    "Words",
    "all_json_ids",
    "base64_token",
    "batch_rows",
    "byte_level_pieces",
    "check_id_span",
    "check_ids",
    "check_owner",
    "check_state",
    "checked_scores",
    "commit_text",
    "delimited_words",
    "existing_file",
    "feed_for",
    "folder_names",
    "funasr_machine",
    "gather",
    "is_archive_ref",
    "is_tiktoken_ranks",
    "is_whisper_vocabulary",
    "join_pieces",
    "json_id",
    "markup_evidence",
    "on_disk",
    "parse_json",
    "plain_text_candidate",
    "read_bytes",
    "read_json",
    "read_lines",
    "read_member",
    "read_ranks",
    "read_string_array",
    "read_text",
    "register_kind",
    "register_tokenizer",
    "register_value_reader",
    "scored",
    "short_repr",
    "skip_string_array",
    "sniff_text_table",
    "starts_with",
    "stream_closed_error",
    "summarise",
    "table_tag",
    "text_lines",
    "unregister_tokenizer",
    "whisper_segments",
]

#: name -> the compiled module (under oasr_tok._engine) that holds it, for the names imported
#: on first use; "" for funasr_machine, the module itself.
_LAZY = {
    "join_pieces": "join",
    "gather": "join",
    "byte_level_pieces": "bytelevel",
    "CleanSpacesStream": "clean_spaces",
    "read_string_array": "gguf",
    "skip_string_array": "gguf",
    "funasr_machine": "funasr",
    "read_ranks": "ranks",
}


def __getattr__(name: str) -> object:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"oasr_tok._engine.{where}")
    value = module if name == "funasr_machine" else getattr(module, name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
