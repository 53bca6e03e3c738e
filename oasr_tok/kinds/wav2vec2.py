"""wav2vec2: a CTC character vocabulary (wav2vec2, HuBERT, XLS-R, MMS), as transformers'
`Wav2Vec2CTCTokenizer` reads it.

Files: `vocab` (vocab.json: piece -> id; MMS nests one such table per language, picked with
the `target_lang` option or the config's own `target_lang`), optional `tokenizer_config`
(tokenizer_config.json), `special_tokens_map` (special_tokens_map.json, whose entries win
over the config's, as transformers loads them) and `added_tokens` (added_tokens.json).

`decode(ids)` equals `Wav2Vec2CTCTokenizer.decode(ids, group_tokens=False,
skip_special_tokens=True)`: ids are *tokens* (collapse frames first with
oasr_tok.collapse_ctc). Its rules, in transformers' order:

1. every id becomes its vocabulary string (an id the table lacks becomes the unk token);
2. tokens whose string is a special token (bos, eos, unk, pad, additional specials) are
   dropped, except the word delimiter;
3. the pad token is dropped (it is the CTC blank), the word delimiter becomes
   `replace_word_delimiter_char` (a space);
4. the strings are joined and `.strip()`ped; then lower-cased when `do_lower_case`;
5. `clean_up_tokenization` when `clean_up_tokenization_spaces` is set (transformers 5 defaults
   it to false; older configs may say true).

Streaming runs on the compiled PieceTable behind a CTCStream (oasr_tok/_engine/ctc.pyx): leading
whitespace is the table's lead rule, trailing whitespace is held back until something visible
follows it (a run of word delimiters at the end is not part of the transcript yet). Two
settings make the rendering depend on neighbours beyond that, and stream by re-decoding
instead (correct, but linear per token in the transcript length; see docs/kinds/wav2vec2.md):
`clean_up_tokenization_spaces: true`, and `do_lower_case` over a vocabulary holding `Σ`
(Python lower-cases a final sigma by its context).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._common import reject_unknown_options
from .api import (
    FLAG_SKIP,
    CTCStream,
    Detected,
    Found,
    KindRecord,
    MalformedAssetError,
    PieceTable,
    SetAside,
    SpecError,
    StreamStateError,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    check_id_span,
    check_owner,
    commit_text,
    delimited_words,
    existing_file,
    folder_names,
    json_id,
    parse_json,
    read_json,
    read_text,
    scored,
    short_repr,
    stream_closed_error,
    table_tag,
)

if TYPE_CHECKING:
    from .api import Scores, Times, Words

__all__ = ["Wav2Vec2Tokenizer", "read_vocab"]


_OPTIONS = ["target_lang"]
_SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token")
#: Special tokens a config may name besides those (transformers counts them all special).
_OTHER_SPECIAL_KEYS = ("cls_token", "sep_token", "mask_token")
_DEFAULTS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
# Python's str.lower() maps U+03A3 by its neighbours (final sigma); nothing else in its case
# tables depends on context.
_CONTEXT_LOWER = "\u03a3"


def _no_duplicates(path: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise MalformedAssetError(f"{path}: the piece {key!r} is given twice", path=path)
            out[key] = value
        return out

    return hook


def _load_json(path: str, what: str) -> Any:
    return parse_json(path, read_text(path, what), what, object_pairs_hook=_no_duplicates(path))


def _check_table(table: Any, path: str, where: str) -> dict[str, int]:
    if not isinstance(table, dict) or not table:
        raise MalformedAssetError(
            f"{path}: {where} must be a non-empty JSON object mapping a piece to an id", path=path
        )
    by_id: dict[int, str] = {}
    for piece, token_id in table.items():
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise MalformedAssetError(
                f"{path}: {where}[{short_repr(piece)}] must be a non-negative integer id, got {short_repr(token_id)}",
                path=path,
            )
        if token_id in by_id:
            raise MalformedAssetError(
                f"{path}: {where} gives id {token_id} to both {by_id[token_id]!r} and {piece!r}", path=path
            )
        by_id[token_id] = piece
    # Before any table is sized by it: one entry at id 10**8 would otherwise allocate gigabytes.
    check_id_span(max(by_id), len(by_id), path, f"{where}[{short_repr(by_id[max(by_id)])}]")
    return table


def read_vocab(path: str, target_lang: str | None, strict: bool = True) -> tuple[dict[str, int], str | None]:
    """The piece -> id table of a vocab.json, and the language picked (None for a flat one).
    A nested (MMS) table needs `target_lang`; over a flat one it is an error when `strict`
    (asked for by the caller), ignored otherwise (named by a config). Typed errors name the
    file and the key."""
    data = _load_json(path, "vocab.json")
    if not isinstance(data, dict) or not data:
        raise MalformedAssetError(f"{path}: vocab.json must be a non-empty JSON object", path=path)
    nested = all(isinstance(v, dict) for v in data.values())
    if not nested:
        if target_lang is not None and strict:
            raise SpecError(f"{path}: target_lang {target_lang!r} given, but vocab.json is not nested per language")
        return _check_table(data, path, "vocab.json"), None
    if target_lang is None:
        raise SpecError(
            f"{path}: vocab.json holds one table per language ({', '.join(sorted(data)[:10])}"
            f"{', ...' if len(data) > 10 else ''}); choose one with the option target_lang"
        )
    if target_lang not in data:
        raise SpecError(f"{path}: no language {target_lang!r} in vocab.json; it has {', '.join(sorted(data))}")
    return _check_table(data[target_lang], path, f"vocab.json[{target_lang!r}]"), target_lang


def _token_text(value: Any, path: str, key: str) -> str | None:
    # transformers writes a special token as a string or as a serialized AddedToken.
    if value is None:
        return None
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        content: str = value["content"]
        return content
    if isinstance(value, str):
        return value
    raise MalformedAssetError(
        f"{path}: {key} must be a token string (or an object with 'content'), got {value!r}", path=path
    )


def read_settings(config_path: str | None, specials_path: str | None) -> dict[str, Any]:
    """The tokenizer settings of a checkpoint: the config, then special_tokens_map.json on top."""
    settings: dict[str, Any] = dict(
        _DEFAULTS,
        word_delimiter_token="|",
        replace_word_delimiter_char=" ",
        do_lower_case=False,
        target_lang=None,
        clean_up_tokenization_spaces=False,
        additional_special_tokens=[],
        added_tokens={},
    )
    for path, what in ((config_path, "tokenizer_config.json"), (specials_path, "special_tokens_map.json")):
        if path is None:
            continue
        data = _load_json(existing_file(path, what), what)
        if not isinstance(data, dict):
            raise MalformedAssetError(f"{path}: {what} must hold a JSON object", path=path)
        for key in (*_SPECIAL_KEYS, *_OTHER_SPECIAL_KEYS, "word_delimiter_token"):
            if key in data:
                settings[key] = _token_text(data[key], path, key)
        for key in ("additional_special_tokens", "extra_special_tokens"):
            extra = data.get(key)
            if extra is None:
                continue
            if isinstance(extra, dict):  # transformers 5 may name them
                extra = list(extra.values())
            if not isinstance(extra, list):
                raise MalformedAssetError(f"{path}: {key} must be a list of tokens", path=path)
            settings["additional_special_tokens"] += [_token_text(t, path, key) for t in extra]
        decoder = data.get("added_tokens_decoder")
        if decoder is not None:
            settings["added_tokens"] = {**settings["added_tokens"], **_added_tokens(decoder, path)}
        for key, kind in (
            ("replace_word_delimiter_char", str),
            ("do_lower_case", bool),
            ("clean_up_tokenization_spaces", bool),
            ("target_lang", str),
        ):
            if key in data and data[key] is not None:
                if not isinstance(data[key], kind):
                    raise MalformedAssetError(f"{path}: {key} must be a {kind.__name__}, got {data[key]!r}", path=path)
                settings[key] = data[key]
    return settings


def merge_added_tokens_json(settings: dict[str, Any], path: str) -> None:
    """added_tokens.json (content -> id: what save_pretrained writes beside vocab.json for
    added tokens, and all that older checkpoints have of them), as transformers loads it: each
    token at its id unless added_tokens_decoder placed one there already, special when it is
    one of the special tokens the settings name."""
    data = _load_json(existing_file(path, "added_tokens.json"), "added_tokens.json")
    if not isinstance(data, dict):
        raise MalformedAssetError(f"{path}: added_tokens.json must map tokens to ids", path=path)
    special = {
        *(settings.get(k) for k in (*_SPECIAL_KEYS, *_OTHER_SPECIAL_KEYS)),
        *settings["additional_special_tokens"],
    }
    added = dict(settings["added_tokens"])
    for content, token_id in data.items():
        if json_id(token_id) is None or not content:
            raise MalformedAssetError(
                f"{path}: added token {short_repr(content)} has id {short_repr(token_id)}", path=path
            )
        added.setdefault(token_id, (content, content in special))
    settings["added_tokens"] = added


def _added_tokens(decoder: Any, path: str) -> dict[int, tuple[str, bool]]:
    """tokenizer_config.json's added_tokens_decoder, as transformers loads it: id -> (content,
    special). Tokens added after the vocabulary (add_tokens, add_special_tokens) live only here."""
    if not isinstance(decoder, dict):
        raise MalformedAssetError(f"{path}: added_tokens_decoder must be an object of id -> token", path=path)
    out: dict[int, tuple[str, bool]] = {}
    for key, value in decoder.items():
        try:
            token_id = int(key)
        except ValueError:
            raise MalformedAssetError(f"{path}: added_tokens_decoder key {key!r} is not an id", path=path) from None
        content = _token_text(value, path, f"added_tokens_decoder[{key!r}]")
        if token_id < 0 or token_id > 1 << 24 or content is None:
            raise MalformedAssetError(f"{path}: added_tokens_decoder[{key!r}] is not a token with an id", path=path)
        special = isinstance(value, dict) and value.get("special") is True
        out[token_id] = (content, special)
    return out


def clean_up_tokenization(text: str) -> str:
    # transformers' PreTrainedTokenizerBase.clean_up_tokenization, in its order.
    for old, new in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(old, new)
    return text


class Wav2Vec2Tokenizer(TableMethods, Tokenizer):
    """A wav2vec2 CTC vocabulary. Decode-only (a recogniser's vocabulary of characters: encode
    is a character lookup transformers offers, but no prompt or hotword path needs it)."""

    supports_encode = False

    def __init__(self, vocab: Mapping[str, int], settings: Mapping[str, Any], where: str = "vocab.json") -> None:
        self.settings = dict(settings)
        added: Mapping[int, tuple[str, bool]] = settings.get("added_tokens") or {}
        size = max([*vocab.values(), *added]) + 1
        by_id: list[str | None] = [None] * size
        for piece, token_id in vocab.items():
            by_id[token_id] = piece
        for token_id, (content, _) in added.items():  # transformers looks an id up there first
            by_id[token_id] = content
        unk = settings["unk_token"]
        # transformers turns an id the table lacks into the unk token, which is special.
        tokens: list[str] = [unk if t is None else t for t in by_id]
        delimiter = settings["word_delimiter_token"]
        special_text = {
            t
            for t in (
                *(settings[k] for k in _SPECIAL_KEYS),
                *(settings.get(k) for k in _OTHER_SPECIAL_KEYS),
                *settings["additional_special_tokens"],
                *(content for content, special in added.values() if special),
            )
            if t is not None
        } - {delimiter}
        pad = settings["pad_token"]
        self._tokens = tokens
        self._special = frozenset(i for i, t in enumerate(tokens) if t in special_text or t == pad)
        lower = bool(settings["do_lower_case"])
        raw_pieces: list[str] = []
        flags = bytearray(size)
        for i, token in enumerate(tokens):
            if i in self._special:
                raw_pieces.append("")
                flags[i] = FLAG_SKIP
            else:
                raw_pieces.append(settings["replace_word_delimiter_char"] if token == delimiter else token)
        self._raw_pieces = raw_pieces
        # Identifies the vocabulary and rules in a stream state (equal for a rebuilt tokenizer).
        self._fingerprint = hashlib.sha1(
            json.dumps([raw_pieces, lower, bool(settings["clean_up_tokenization_spaces"])]).encode("utf-8")
        ).hexdigest()
        pieces = [p.lower() for p in raw_pieces] if lower else raw_pieces
        self._lower = lower
        self._cleanup = bool(settings["clean_up_tokenization_spaces"])
        self._size = size
        context_free = not self._cleanup and not (lower and any(_CONTEXT_LOWER in t for t in tokens))
        self.streams_at_constant_cost = context_free
        # decode_incremental and token_pieces are TableMethods': the compiled CTCStream, or
        # the re-decoding stream for the settings that are not context-free.
        if context_free:
            self._table = CTCStream(PieceTable(pieces, flags=bytes(flags), lead="whitespace"), None, strip=True)
        else:
            self._table = _RedecodingStream(self)

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> Wav2Vec2Tokenizer:
        reject_unknown_options(spec.options, _OPTIONS, "wav2vec2")
        vocab_path = existing_file(spec.file("vocab"), "vocab.json")
        config = spec.files.get("tokenizer_config")
        specials = spec.files.get("special_tokens_map")
        settings = read_settings(config, specials)
        if "added_tokens" in spec.files:
            merge_added_tokens_json(settings, spec.file("added_tokens"))
        option = spec.options.get("target_lang")
        if option is not None and not isinstance(option, str):
            raise SpecError(f"wav2vec2: option target_lang must be a language code string, got {option!r}")
        target = option if option is not None else settings["target_lang"]
        vocab, settings["target_lang"] = read_vocab(vocab_path, target, strict=option is not None)
        tokenizer = cls(vocab, settings, where=vocab_path)
        tokenizer.spec = spec
        return tokenizer

    # -- the contract --------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    @property
    def word_delimiter_id(self) -> int | None:
        """The id of the word delimiter (`|`), if the vocabulary has it."""
        delimiter = self.settings["word_delimiter_token"]
        return next((i for i, t in enumerate(self._tokens) if t == delimiter), None)

    @property
    def blank_id(self) -> int | None:
        """The CTC blank: the pad token's id (what collapse_ctc needs)."""
        pad = self.settings["pad_token"]
        return next((i for i, t in enumerate(self._tokens) if t == pad), None)

    def id_to_piece(self, token_id: int) -> str:
        return self._tokens[self.check_ids([token_id])[0]]

    def decode(self, ids: Sequence[int]) -> str:
        pieces = self._raw_pieces
        special = self._special
        raw = "".join([pieces[i] for i in self.check_ids(ids) if i not in special]).strip()
        if self._lower:
            raw = raw.lower()
        return clean_up_tokenization(raw) if self._cleanup else raw

    def word_timings(
        self,
        ids: Sequence[int],
        starts: Times,
        ends: Times | None = None,
        scores: Scores | None = None,
        *,
        reduction: str = "mean",
    ) -> Words:
        """Words as Wav2Vec2CTCTokenizer's `output_word_offsets` cuts them: the runs between
        word delimiters, each timed by the tokens that printed its first and last characters
        (the delimiter lends no time). With ids, starts and ends from oasr_tok.collapse_ctc,
        the words and frame spans are transformers' word offsets (the text is lower-cased
        when do_lower_case is set, as the transcript is; transformers' offsets keep the
        vocabulary's case). A CTC character model marks its own word boundaries, so this kind
        uses that rule rather than the general one of docs/decoding.md. `scores` give each
        word a confidence as every kind's word_timings does."""
        return scored(delimited_words, self.token_pieces(ids), starts, ends, scores, reduction)

    #: The same words under transformers' name for them.
    word_offsets = word_timings

    def _redecode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str:
        """The re-decoding stream, for the settings whose rendering looks at neighbours."""
        tag = self.__dict__.get("_redecode_tag")
        if tag is None:
            tag = self.__dict__["_redecode_tag"] = table_tag(["wav2vec2 re-decoding", self._fingerprint])
        check_owner(state, tag)  # whose state it is, before anything in it is read
        new = self.check_ids(new_ids)
        if ("_w2v" not in state and state) or ("_w2v" in state and "_tok" not in state):
            raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
        held = state.get("_w2v", ([], 0, False, self._fingerprint))
        if (
            type(held) is not tuple
            or len(held) != 4
            or type(held[0]) is not list
            or type(held[1]) is not int
            or type(held[2]) is not bool
            or held[3] != self._fingerprint
            or not all(type(i) is int and 0 <= i < self._size for i in held[0])
        ):
            raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
        ids, emitted, closed, _ = held
        if closed:
            if new:
                raise stream_closed_error()
            return ""
        ids = ids + new
        text = self.decode(ids)
        if not 0 <= emitted <= len(text):
            raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
        settled = len(text) if final else max(emitted, min(len(text), self.settled_length(ids, text)))
        delta = text[emitted:settled]
        commit_text(state, delta, text[settled:], tag)
        state["_w2v"] = (ids, settled, bool(final), self._fingerprint)
        return delta

    def settled_length(self, ids: list[int], text: str) -> int:
        # Only used when the rendering is not context-free (see the module docstring). A
        # continuation changes the transcript only near its end: the clean-up patterns are at
        # most 4 characters, applied 10 times in a row, and a final sigma is settled once a
        # whitespace follows it; 48 characters before the last whitespace is safely settled.
        cut = max(text.rfind(" "), 0)
        return max(0, cut - 48)


class _RedecodingStream:
    """The streaming engine of a Wav2Vec2Tokenizer whose rendering looks at neighbours: each
    call re-decodes the held ids (see the module docstring)."""

    def __init__(self, tokenizer: Wav2Vec2Tokenizer) -> None:
        self._tokenizer = tokenizer

    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str:
        return self._tokenizer._redecode_incremental(new_ids, state, final)

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        return Tokenizer.token_pieces(self._tokenizer, ids)


# -- recognising the files (the registry's detector for this kind) ----------------------------


def _found(folder: str, names: tuple[str, ...]) -> Detected:
    """vocab.json as a wav2vec2 CTC vocabulary, or the reason it is not one."""
    at = lambda name: os.path.join(folder, name)
    data = read_json(at("vocab.json"), "vocab.json")
    config: Any = (
        read_json(at("tokenizer_config.json"), "tokenizer_config.json") if "tokenizer_config.json" in names else {}
    )
    config = config if isinstance(config, dict) else {}
    if not isinstance(data, dict) or not data:
        return SetAside("vocab.json", "not a JSON object of piece -> id")
    nested = all(isinstance(v, dict) for v in data.values())
    tables = list(data.values()) if nested else [data]
    delimiter = config.get("word_delimiter_token", "|")
    delimiter = delimiter.get("content", "|") if isinstance(delimiter, dict) else delimiter
    delimiter = delimiter if isinstance(delimiter, str) else "|"
    named = "Wav2Vec2" in str(config.get("tokenizer_class", "")) or "CTC" in str(config.get("tokenizer_class", ""))
    has_delimiter = all(isinstance(t, dict) and delimiter in t for t in tables)
    if not named and ("merges.txt" in names or not has_delimiter):
        return SetAside(
            "vocab.json",
            "not a CTC character vocabulary (no Wav2Vec2 tokenizer_class, and "
            + (
                "merges.txt beside it: GPT-2 style BPE)"
                if "merges.txt" in names
                else f"no {delimiter!r} word delimiter)"
            ),
        )
    files = {"vocab": at("vocab.json")}
    for role in ("tokenizer_config", "special_tokens_map", "added_tokens"):
        if f"{role}.json" in names:
            files[role] = at(f"{role}.json")
    found = Found("wav2vec2", files, source=" + ".join(os.path.basename(p) for p in files.values()))
    why = (
        f"tokenizer_class {config.get('tokenizer_class')}"
        if named
        else f"the {delimiter!r} word delimiter, no merges.txt"
    )
    shape = f"{len(data)} per-language tables (MMS)" if nested else f"{len(data)} pieces"
    found.evidence.append(("kind", f"wav2vec2: vocab.json with {shape}; {why}"))
    if nested:
        target = config.get("target_lang")
        if isinstance(target, str):
            found.evidence.append(("options", f"target_lang {target!r} from tokenizer_config.json"))
        else:
            found.notes.append(
                "vocab.json is nested per language and no target_lang is configured: pass "
                "TokenizerSpec(..., options={'target_lang': code}) with one of " + ", ".join(sorted(data)[:12])
            )
    found.evidence.append(
        ("special_ids", "the ids of bos/eos/unk/pad and additional special tokens (pad is the CTC blank)")
    )
    return found


def detect(path: str) -> list[Detected]:
    """A vocab.json of a CTC character model: wav2vec2 when tokenizer_config.json names a
    Wav2Vec2 CTC tokenizer class, or the table has the word delimiter and no merges.txt lies
    beside it (that would be GPT-2 style BPE). Given alone, its folder's side files count."""
    if os.path.isdir(path):
        return [_found(path, folder_names(path))] if "vocab.json" in folder_names(path) else []
    if os.path.basename(path) != "vocab.json":
        return []
    folder = os.path.dirname(path)
    return [_found(folder, folder_names(folder))]


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: a CTC vocab.json, after the
# tokenizer.json kinds.
KIND = KindRecord("wav2vec2", Wav2Vec2Tokenizer.from_spec, detect, precedence=30)
