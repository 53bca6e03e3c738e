"""tiktoken: a tiktoken rank file (Meta's Llama 3 / Llama 4 tokenizer.model, Kimi-Audio's
tiktoken.model, any `*.tiktoken`) with its special tokens from wherever the checkpoint keeps
them (layout.py), read as `tiktoken.Encoding` reads it.

The file is `base64(token bytes) rank` per line; rank r is id r. The special tokens sit at
their own ids after the ranks (Meta lays 256 after Llama 3's 128,000 ranks, 2,048 after
Llama 4's 200,000; a tokenizer_config.json declares its own); `vocab_size` is tiktoken's
`n_vocab`, the highest id + 1. An id past the ranks that no special token holds (a hole in a
config's declarations) is special too and renders nothing (tiktoken refuses it: a KeyError).

Rendering:

* `decode(ids)` is `Encoding.decode` of the ids with the special ids taken out: the bytes of
  the rest joined (across the special ids taken out) and read as lossy UTF-8 (one U+FFFD per
  maximal invalid subpart, Python's "replace" that tiktoken's decode uses). `decode_bytes` is
  `Encoding.decode_bytes` of the same ids.
* `with_specials()` renders every id, special tokens as their text: `Encoding.decode(ids)`
  and `Encoding.decode_bytes(ids)` exactly.

Streaming and token pieces run on the compiled engine in byte mode (kinds/_ranks.py).
`encode` is tiktoken's own `Encoding.encode` with the layout's split pattern (Meta's for Llama
3 / 4; option `pattern` for a checkpoint whose code names another); decoding needs nothing
but this module, encode needs `tiktoken` (extra `[tiktoken]`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .._bytelevel import BYTE_TO_CHAR
from .._common import checked_text, config_chat_templates, read_added_tokens, reject_unknown_options
from .._ranks import LazyEncoding, byte_table, read_rank_file, tiktoken_encoding
from ..api import (
    ROLES,
    AudioIds,
    Detected,
    EncodeError,
    Found,
    MalformedAssetError,
    SetAside,
    SpecError,
    SpecialTokens,
    SpecialTokensBuilder,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    existing_file,
    folder_names,
    is_tiktoken_ranks,
    is_whisper_vocabulary,
    join_pieces,
    read_json,
    short_repr,
)
from .layout import META_LAYOUTS, SpecialLayout, config_layout, given_layout, meta_layout

__all__ = ["TiktokenTokenizer", "TiktokenWithSpecials", "detect"]

KIND_NAME = "tiktoken"
_OPTIONS = ["special_tokens", "pattern", "audio_ids"]


class TiktokenTokenizer(TableMethods, Tokenizer):
    """A tiktoken rank file as `tiktoken.Encoding` reads it. Files: `tiktoken` (the rank file),
    optional `tokenizer_config` (tokenizer_config.json: special tokens from its
    added_tokens_decoder, roles, chat template). Options: `special_tokens` ("llama3" /
    "llama4": Meta's layout; or a {text: id} mapping), `pattern` (the split regex, where the
    special tokens' source does not give it), `audio_ids` ([start, end] or [start]: the
    audio-codec ids the "audio" envelope tells apart, docs/envelopes.md). encode() needs
    `tiktoken`; decoding needs nothing."""

    supports_encode = True

    def __init__(
        self,
        path: str,
        special_tokens: Any = None,
        *,
        config: str | None = None,
        pattern: str | None = None,
        audio_ids: Any = None,
    ) -> None:
        if special_tokens is not None and config is not None:
            raise SpecError(
                "tiktoken: the special tokens come from one source: option special_tokens or the "
                "tokenizer_config file, not both"
            )
        if pattern is not None and (not isinstance(pattern, str) or not pattern):
            raise SpecError(f"tiktoken: option pattern must be a non-empty regex string, got {short_repr(pattern)}")
        ranks = read_rank_file(path, "tiktoken rank")
        num_ranks = len(ranks)
        self._config_data: dict[str, Any] = {}
        if config is not None:
            data = read_json(existing_file(config, "tokenizer_config.json"), "tokenizer_config.json")
            entries = read_added_tokens(config)  # (checks the file holds an object)
            self._config_data = data
            layout = config_layout(entries, data, num_ranks, config)
        elif isinstance(special_tokens, str):
            if special_tokens not in META_LAYOUTS:
                raise SpecError(
                    f"tiktoken: option special_tokens names Meta's layouts {sorted(META_LAYOUTS)} or is a "
                    f"{{text: id}} mapping, got {special_tokens!r}"
                )
            layout = meta_layout(special_tokens, num_ranks, path)
        elif special_tokens is not None:
            layout = given_layout(special_tokens, num_ranks, path)
        else:
            layout = SpecialLayout(tokens={}, source="none: the file alone (no special tokens)")
        self._path = path
        self._config_path = config
        self._layout = layout
        self._ranks = ranks
        self._num_ranks = num_ranks
        self._pattern = pattern if pattern is not None else layout.pattern
        self._pattern_given = pattern is not None
        size = max(num_ranks, max(layout.tokens, default=-1) + 1)
        self._vocab_size = size
        self._special = frozenset(range(num_ranks, size))
        self._by_text = {text: token_id for token_id, text in layout.tokens.items()}
        #: the bytes each id renders (b"" past the ranks), the table decode() joins
        self._bytes: tuple[bytes, ...] = (*ranks, *(b"",) * (size - num_ranks))
        # decode_incremental and token_pieces are TableMethods' (the compiled engine).
        self._table = byte_table(self._bytes, self._special)
        self._audio = _audio_option(audio_ids, size)
        self._encoding = LazyEncoding(self._tiktoken_encoding)

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> TiktokenTokenizer:
        reject_unknown_options(spec.options, _OPTIONS, KIND_NAME)
        tokenizer = cls(
            spec.file("tiktoken"),
            spec.options.get("special_tokens"),
            config=spec.files.get("tokenizer_config"),
            pattern=spec.options.get("pattern"),
            audio_ids=spec.options.get("audio_ids"),
        )
        tokenizer.spec = spec
        return tokenizer

    # -- the vocabulary -----------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """tiktoken's n_vocab: the highest id (rank or special) + 1."""
        return self._vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        """Every id past the ranks: the special tokens (and any hole between them)."""
        return self._special

    @property
    def num_ranks(self) -> int:
        """How many ranks the file holds (ids 0 ... num_ranks - 1)."""
        return self._num_ranks

    @property
    def pattern(self) -> str | None:
        """The split regex encode gives tiktoken (None: encode needs option pattern)."""
        return self._pattern

    @property
    def special_tokens_source(self) -> str:
        """Where the special tokens came from, in a sentence."""
        return self._layout.source

    @property
    def special_token_ids(self) -> dict[str, int]:
        """Special token text -> id, as tiktoken's `Encoding._special_tokens` (a fresh copy)."""
        return dict(self._by_text)

    @property
    def audio_ids(self) -> AudioIds | None:
        """The audio-codec ids this checkpoint declares (option audio_ids, from Kimi-Audio's
        config.json), for new_stream(envelope="audio"); None when it declares none."""
        return self._audio

    def special_token_id(self, text: str) -> int:
        """The id of the special token `text` ("<|eot_id|>")."""
        try:
            return self._by_text[text]
        except (KeyError, TypeError):
            raise KeyError(f"{self._path} has no special token {text!r}") from None

    def id_to_piece(self, token_id: int) -> str:
        """The vocabulary's spelling of an id: a special token's text; a rank's bytes in the
        byte-level alphabet ("Ġthe"), as the tokenizer.json converted from the same file
        (transformers' TikTokenConverter) spells it; "" for a hole."""
        token_id = self.check_ids([token_id])[0]
        if token_id >= self._num_ranks:
            return self._layout.tokens.get(token_id, "")
        return "".join([BYTE_TO_CHAR[b] for b in self._ranks[token_id]])

    def id_to_bytes(self, token_id: int) -> bytes:
        """The bytes a rank renders (b"" for a special id): tiktoken's decode_single_token_bytes
        of a rank."""
        return self._bytes[self.check_ids([token_id])[0]]

    # -- decoding -----------------------------------------------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        """`Encoding.decode` of the ids with the special ids taken out."""
        # (join_pieces reads and checks the ids as check_ids does; special ids render b"")
        return join_pieces(self._bytes, ids).decode("utf-8", "replace")

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """`Encoding.decode_bytes` of the ids with the special ids taken out."""
        return join_pieces(self._bytes, ids)

    # -- encoding -----------------------------------------------------------------------------

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """tiktoken's `Encoding.encode` with the layout's pattern: special-token text in `text`
        is that one id (`allowed_special="all"`), or ordinary text with split_special_tokens
        (`disallowed_special=()`, Meta's encode default). add_special_tokens=True puts bos in
        front where the layout says (Meta's: `encode(s, bos=True, eos=False)`)."""
        text = checked_text(text, KIND_NAME)
        encoding = self._encoding.get()
        if split_special_tokens:
            ids = encoding.encode(text, disallowed_special=())
        else:
            ids = encoding.encode(text, allowed_special="all")
        return self.add_bos_eos(ids) if add_special_tokens else ids

    def _tiktoken_encoding(self) -> Any:
        if self._pattern is None:
            raise EncodeError(
                f"tiktoken: {self._path} has no split pattern of its own (special tokens: {self._layout.source}); "
                "give option pattern, the regex the checkpoint's tokenizer code hands tiktoken as pat_str"
            )
        try:
            return tiktoken_encoding(
                name=os.path.basename(self._path),
                pattern=self._pattern,
                ranks=self._ranks,
                specials=dict(self._by_text),
                path=self._path,
                who="tiktoken encode",
                extra="tiktoken",
            )
        except MalformedAssetError as exc:
            if not self._pattern_given:
                raise
            raise SpecError(f"tiktoken: option pattern {short_repr(self._pattern)}: {exc}") from None

    # -- the prompt side (docs/prompts.md) ---------------------------------------------------

    def _special_tokens(self) -> SpecialTokens:
        layout = self._layout
        builder = SpecialTokensBuilder(self._vocab_size)
        if self._config_path is not None:
            # transformers' rule: with a tokenizer_config.json, a role it does not name is absent.
            for role in ROLES:
                text = layout.roles.get(role)
                token_id = self._by_text.get(text) if text is not None else None
                where = f"tokenizer_config.json {role}_token {text!r}" if role in layout.roles else None
                builder.set(role, token_id, where or "not declared in tokenizer_config.json")
        else:
            for role, text in layout.roles.items():
                builder.set(role, self._by_text.get(text) if text else None, f"{layout.source}: {text}")
        for text in layout.stops:
            builder.stop(self._by_text.get(text), f"{layout.source}: stop token {text}")
        builder.add_bos = layout.add_bos
        return builder.build(self._by_text, self._special)

    def _vocabulary(self) -> dict[str, int]:
        table: dict[str, int] = {}
        for token_id in range(self._num_ranks - 1, -1, -1):  # downward: the lowest id wins
            table["".join([BYTE_TO_CHAR[b] for b in self._ranks[token_id]])] = token_id
        table.update(self._by_text)  # a special token's text is its id
        return table

    def _keep_specials(self) -> Tokenizer:
        return TiktokenWithSpecials(self)

    def _chat_templates(self) -> dict[str, str]:
        return config_chat_templates(self._config_data, self._config_path or "tokenizer_config.json") or {}


class TiktokenWithSpecials(TableMethods, Tokenizer):
    """`TiktokenTokenizer.with_specials()`: every id rendered, special tokens as their text:
    `Encoding.decode(ids)` exactly (and `decode_bytes`). special_ids is empty; encode is the
    parent's."""

    supports_encode = True

    def __init__(self, parent: TiktokenTokenizer) -> None:
        self._parent = parent
        tokens = parent._layout.tokens
        first = parent.num_ranks
        self._bytes: tuple[bytes, ...] = parent._bytes[:first] + tuple(
            [tokens.get(token_id, "").encode("utf-8") for token_id in range(first, parent.vocab_size)]
        )
        self._table = byte_table(self._bytes, ())

    @property
    def vocab_size(self) -> int:
        return self._parent.vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset()

    def decode(self, ids: Sequence[int]) -> str:
        return join_pieces(self._bytes, ids).decode("utf-8", "replace")

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return join_pieces(self._bytes, ids)

    def id_to_piece(self, token_id: int) -> str:
        return self._parent.id_to_piece(token_id)

    @property
    def audio_ids(self) -> AudioIds | None:
        """The parent's (the "audio" envelope on the view)."""
        return self._parent.audio_ids

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        return self._parent.encode(text, add_special_tokens, split_special_tokens=split_special_tokens)


def _audio_option(value: Any, vocab_size: int) -> AudioIds | None:
    """Option audio_ids, [start, end] or [start] (end: the tokenizer's vocabulary)."""
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or not 1 <= len(value) <= 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in value)
    ):
        raise SpecError(f"tiktoken: option audio_ids must be [start, end] or [start] (integer ids), got {value!r}")
    try:
        return AudioIds(value[0], value[1] if len(value) == 2 else None, source="option audio_ids")
    except ValueError as exc:
        raise SpecError(f"tiktoken: option audio_ids: {exc}") from None


# -- recognising the files (the registry's detector for this kind) ----------------------------

#: The names the kind looks for in a folder, in order (then any *.tiktoken that is not whisper's).
FOLDER_NAMES = ("tiktoken.model", "tokenizer.model")
TIKTOKEN_SUFFIX = ".tiktoken"


def _rank_count(path: str) -> int:
    """How many ranks a rank file holds, from its last line (rank n - 1: the ranks count up
    from 0, which the kind checks when it reads the file), without reading the rest; counted
    line by line when the last line says nothing."""
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        handle.seek(max(0, size - 256))
        fields = handle.read().rstrip().rsplit(b"\n", 1)[-1].split()
        if len(fields) == 2 and fields[1].isdigit() and len(fields[1]) < 12:
            return int(fields[1]) + 1
        handle.seek(0)
        return sum(1 for line in handle if line.strip())


def _kimi_audio_ids(folder: str) -> tuple[list[int], str] | None:
    """Kimi-Audio's audio-codec ids from the config.json beside the tokenizer: from
    `kimia_token_offset`, `kimia_audio_output_vocab` of them (else up to its `vocab_size`)."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        return None
    data = read_json(path, "config.json")
    offset = data.get("kimia_token_offset") if isinstance(data, dict) else None
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        return None
    count = data.get("kimia_audio_output_vocab")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return [offset, offset + count], f"config.json kimia_token_offset {offset} + kimia_audio_output_vocab {count}"
    size = data.get("vocab_size")
    if isinstance(size, int) and not isinstance(size, bool) and size > offset:
        return [offset, size], f"config.json kimia_token_offset {offset} up to its vocab_size {size}"
    return [offset], f"config.json kimia_token_offset {offset}"


def _found(path: str, config: str | None, order: int) -> Found:
    count = _rank_count(path)
    found = Found(KIND_NAME, {"tiktoken": path}, source=os.path.basename(path), order=order)
    found.evidence.append(
        ("kind", f"tiktoken: {os.path.basename(path)} is a tiktoken rank file ({count} 'base64 rank' lines)")
    )
    meta = next((name for name, entry in META_LAYOUTS.items() if entry[0] == count), None)
    if config is not None:
        found.files["tokenizer_config"] = config
        found.evidence.append(
            ("special_ids", f"the added_tokens_decoder of {os.path.basename(config)} beside it, at their ids")
        )
    elif meta is not None:
        found.options["special_tokens"] = meta
        where = META_LAYOUTS[meta][5]
        found.evidence.append(
            (
                "special_ids",
                f"{count} ranks: the size of Meta's {meta} vocabulary; Meta's {meta} special tokens "
                f"({where}, reserved ones included) after them, with its split pattern",
            )
        )
    else:
        found.evidence.append(
            (
                "special_ids",
                "none: no tokenizer_config.json beside it and not one of Meta's vocabularies "
                "(give option special_tokens, and option pattern to encode)",
            )
        )
    audio = _kimi_audio_ids(os.path.dirname(path))
    if audio is not None:
        found.options["audio_ids"], where = audio
        found.evidence.append(("audio_ids", f"{audio[0]}, from {where} (the 'audio' envelope tells them apart)"))
    return found


def detect(path: str) -> list[Detected]:
    """A tiktoken rank file that is not openai-whisper's: tiktoken.model, then tokenizer.model,
    then any *.tiktoken in a folder (with the tokenizer_config.json beside it: its
    added_tokens_decoder are the special tokens; without one, Meta's Llama 3 / 4 layouts by
    the number of ranks), or a single such file."""
    out: list[Detected] = []
    if not os.path.isdir(path):
        if is_tiktoken_ranks(path) and not is_whisper_vocabulary(path):
            beside = os.path.join(os.path.dirname(path), "tokenizer_config.json")
            named = os.path.basename(path) in FOLDER_NAMES or path.endswith(TIKTOKEN_SUFFIX)
            out.append(_found(path, beside if named and os.path.isfile(beside) else None, 0))
        return out
    names = folder_names(path)
    config = os.path.join(path, "tokenizer_config.json") if "tokenizer_config.json" in names else None
    candidates = [n for n in FOLDER_NAMES if n in names]
    candidates += [n for n in names if n.endswith(TIKTOKEN_SUFFIX) and n not in candidates]
    for order, name in enumerate(candidates):
        at = os.path.join(path, name)
        if not is_tiktoken_ranks(at):
            if name == "tiktoken.model":
                out.append(SetAside(name, "not a tiktoken rank file ('base64 rank' lines counting from 0)"))
            continue  # (a tokenizer.model that is not one is SentencePiece's to judge)
        if is_whisper_vocabulary(at):
            continue  # openai-whisper's: the whisper kind's
        out.append(_found(at, config, order))
    return out
