"""tekken: Mistral's tekken.json (Mistral, Pixtral, Voxtral), read as mistral-common reads it.

A tekken.json holds a byte-level BPE for `tiktoken` and a block of special tokens in front of
it::

    {"config": {"pattern", "num_vocab_tokens", "default_vocab_size",
                "default_num_special_tokens", "version"},
     "vocab": [{"rank", "token_bytes" (base64), "token_str"}, ...],
     "special_tokens": [{"rank", "token_str", "is_control"}, ...]}   (absent in old files)

Ids (mistral-common's `Tekkenizer`):

* ids 0 ... S-1 are the special tokens, S = `default_num_special_tokens`. The file lists the
  first of them; the rest are filled in as `<SPECIAL_{id}>`. A file without `special_tokens`
  (versions up to v7: both files mistral-common ships) gets mistral-common's built-in list of
  twenty (`<unk>`, `<s>`, `</s>`, `[INST]`, ...) before the filling;
* id S + r is vocabulary rank r; the vocabulary is cut to `default_vocab_size` - S ranks,
  so `vocab_size` is `default_vocab_size` (the file may hold more ranks: they are unused).

Rendering equals `Tekkenizer.decode(ids, SpecialTokenPolicy.IGNORE)`: the ids are grouped into
runs of ordinary ids between special ids, each run's bytes are decoded on its own as lossy
UTF-8 (one U+FFFD per maximal invalid subpart, tiktoken's `decode`), special ids render
nothing. Unlike the whisper and huggingface kinds, bytes never join across a special id: a
character split by one renders as two U+FFFD groups. The compiled engine does the same with
FLAG_BREAK on the special ids.

Decoding needs nothing but this module; encode() needs `tiktoken` (extra `[tekken]`).
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._common import checked_text, join_bytes, reject_unknown_options
from ._ranks import LazyEncoding, byte_table, tiktoken_encoding
from .api import (
    ROLES,
    Detected,
    Found,
    KindRecord,
    MalformedAssetError,
    SpecialTokens,
    SpecialTokensBuilder,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    base64_token,
    folder_names,
    join_pieces,
    read_json,
)

__all__ = [
    "BUILTIN_SPECIAL_TOKENS",
    "FILLER_TEMPLATE",
    "MAX_SPECIAL_TOKENS",
    "TekkenFile",
    "TekkenTokenizer",
    "TekkenWithSpecials",
    "read_tekken",
]


#: The names mistral-common's Tekkenizer gives its roles (bos_id, eos_id, pad_id, unk_id).
_ROLE_NAMES = {"bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>"}

#: The special tokens mistral-common gives a tekken file that lists none (its
#: `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`, ranks 0 ... 19, all control tokens).
BUILTIN_SPECIAL_TOKENS: tuple[str, ...] = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
#: How mistral-common names the special ids a file does not list.
FILLER_TEMPLATE = "<SPECIAL_{id}>"
#: Files from this version on must list their special tokens (mistral-common refuses them).
_LAST_VERSION_WITHOUT_SPECIALS = 7
#: A bound on the claimed number of special tokens (real files have 1000), so that a corrupt
#: count is refused before anything is allocated for it.
MAX_SPECIAL_TOKENS = 1 << 20
_VERSION = re.compile(r"v(\d+)")
_VOCAB_KEYS = frozenset({"rank", "token_bytes", "token_str"})


@dataclass(frozen=True)
class TekkenFile:
    """What a tekken.json says: the rank bytes in use, the special tokens, the settings."""

    path: str
    pattern: str
    version: str
    vocab_size: int
    num_special: int
    rank_bytes: list[bytes]
    special_names: tuple[str, ...]
    control: tuple[bool, ...]
    listed_specials: bool
    audio: dict[str, Any] | None
    image: dict[str, Any] | None


def _malformed(path: str, key: str, why: str) -> MalformedAssetError:
    return MalformedAssetError(f"{path}: not a tekken.json: {key}: {why}", path=path)


def _count(path: str, config: dict[str, Any], key: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _malformed(path, f"config.{key}", f"must be a non-negative integer, got {value!r}")
    return value


def read_tekken(path: str) -> TekkenFile:
    """Parse and check `path` as mistral-common's `Tekkenizer.from_file` does; every refusal is
    a MalformedAssetError naming the file and the key."""
    data = read_json(path, "tekken.json")
    if not isinstance(data, dict):
        raise _malformed(path, "(top level)", f"must be an object, got {type(data).__name__}")
    config = data.get("config")
    if not isinstance(config, dict):
        raise _malformed(path, "config", "missing or not an object")
    version = config.get("version")
    match = _VERSION.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise _malformed(path, "config.version", f"must be a version string like 'v3', got {version!r}")
    pattern = config.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise _malformed(path, "config.pattern", f"must be a non-empty regex string, got {pattern!r}")
    vocab_size = _count(path, config, "default_vocab_size")
    num_special = _count(path, config, "default_num_special_tokens")
    if num_special > MAX_SPECIAL_TOKENS:
        raise _malformed(
            path, "config.default_num_special_tokens", f"{num_special} is more than {MAX_SPECIAL_TOKENS} special tokens"
        )
    if num_special > vocab_size:
        raise _malformed(
            path,
            "config.default_vocab_size",
            f"{vocab_size} is smaller than default_num_special_tokens ({num_special})",
        )
    vocab = data.get("vocab")
    if not isinstance(vocab, list):
        raise _malformed(path, "vocab", "missing or not a list")
    inner = vocab_size - num_special
    if len(vocab) < inner:
        raise _malformed(
            path,
            "config.default_vocab_size",
            f"{vocab_size} needs {inner} vocabulary ranks after {num_special} special tokens, "
            f"but 'vocab' holds {len(vocab)}",
        )
    rank_bytes = _read_ranks(path, vocab, inner)
    listed = data.get("special_tokens")
    if listed is None:
        if int(match.group(1)) > _LAST_VERSION_WITHOUT_SPECIALS:
            raise _malformed(path, "special_tokens", f"missing, and a {version} file must list its special tokens")
        names, control = list(BUILTIN_SPECIAL_TOKENS), [True] * len(BUILTIN_SPECIAL_TOKENS)
        from_file = False
    else:
        names, control = _read_specials(path, listed)
        from_file = True
    if len(names) > num_special:
        raise _malformed(
            path, "special_tokens", f"{len(names)} special tokens, more than default_num_special_tokens ({num_special})"
        )
    taken = set(names)
    for token_id in range(len(names), num_special):
        filler = FILLER_TEMPLATE.format(id=token_id)
        if filler in taken:  # mistral-common asserts the full list is unique
            raise _malformed(
                path, "special_tokens", f"{filler!r} is listed, but id {token_id} is filled with that name"
            )
        names.append(filler)
        control.append(True)
    audio, image = data.get("audio"), data.get("image", data.get("multimodal"))
    return TekkenFile(
        path=path,
        pattern=pattern,
        version=str(version),
        vocab_size=vocab_size,
        num_special=num_special,
        rank_bytes=rank_bytes,
        special_names=tuple(names),
        control=tuple(control),
        listed_specials=from_file,
        audio=audio if isinstance(audio, dict) else None,
        image=image if isinstance(image, dict) else None,
    )


def _read_ranks(path: str, vocab: list[Any], inner: int) -> list[bytes]:
    """The bytes of ranks 0 ... inner-1, checked as mistral-common's _reload_mergeable_ranks
    checks them (only the ranks in use: the rest of the list is never read)."""
    rank_bytes: list[bytes] = []
    seen: dict[bytes, int] = {}
    for rank in range(inner):
        entry = vocab[rank]
        if type(entry) is not dict or entry.keys() != _VOCAB_KEYS:
            keys = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
            raise _malformed(
                path, f"vocab[{rank}]", f"must be an object with keys rank, token_bytes, token_str; got {keys}"
            )
        if entry["rank"] != rank or type(entry["rank"]) is not int:
            raise _malformed(path, f"vocab[{rank}].rank", f"is {entry['rank']!r}, where rank {rank} belongs")
        encoded = entry["token_bytes"]
        if not isinstance(encoded, str):
            raise _malformed(path, f"vocab[{rank}].token_bytes", f"must be a base64 string, got {encoded!r}")
        piece = base64_token(encoded)
        if piece is None:
            raise _malformed(path, f"vocab[{rank}].token_bytes", f"{encoded[:40]!r} is not base64")
        if rank < 256 and piece != bytes([rank]):
            raise _malformed(
                path,
                f"vocab[{rank}].token_bytes",
                f"rank {rank} must be the single byte {rank:#04x}, got {piece[:16]!r}",
            )
        if piece in seen:
            raise _malformed(path, f"vocab[{rank}].token_bytes", f"{piece[:32]!r} is also rank {seen[piece]}")
        seen[piece] = rank
        rank_bytes.append(piece)
    return rank_bytes


def _read_specials(path: str, listed: Any) -> tuple[list[str], list[bool]]:
    if not isinstance(listed, list):
        raise _malformed(path, "special_tokens", f"must be a list, got {type(listed).__name__}")
    names: list[str] = []
    control: list[bool] = []
    seen: dict[str, int] = {}
    for position, entry in enumerate(listed):
        where = f"special_tokens[{position}]"
        if not isinstance(entry, dict):
            raise _malformed(path, where, f"must be an object, got {type(entry).__name__}")
        rank, name, is_control = entry.get("rank"), entry.get("token_str"), entry.get("is_control", True)
        # mistral-common takes the list's order as the ids (its fillers and KEEP rendering index
        # by position), so a rank other than the position would make two ids disagree.
        if type(rank) is not int or rank != position:
            raise _malformed(
                path,
                f"{where}.rank",
                f"is {rank!r}; special tokens must be listed in rank order from 0, so this one must be {position}",
            )
        if not isinstance(name, str):
            raise _malformed(path, f"{where}.token_str", f"must be a string, got {name!r}")
        if not isinstance(is_control, bool):
            raise _malformed(path, f"{where}.is_control", f"must be true or false, got {is_control!r}")
        if name in seen:
            raise _malformed(path, f"{where}.token_str", f"{name!r} is also special token {seen[name]}")
        seen[name] = position
        names.append(name)
        control.append(is_control)
    return names, control


class TekkenTokenizer(TableMethods, Tokenizer):
    """Mistral's tekken tokenizer. Files: `tekken`. No options. encode() needs `tiktoken`."""

    supports_encode = True

    def __init__(self, path: str) -> None:
        tekken = read_tekken(path)
        self._path = path
        self._file = tekken
        num_special = tekken.num_special
        self._num_special = num_special
        self._vocab_size = tekken.vocab_size
        self._special = frozenset(range(num_special))
        self._special_by_name = {name: token_id for token_id, name in enumerate(tekken.special_names)}
        #: the bytes every id renders (b"" for special ids), the table decode() reads
        self._bytes: tuple[bytes, ...] = (b"",) * num_special + tuple(tekken.rank_bytes)  # (a tuple: _engine/join.pyx)
        #: one byte per id, non-zero for the ids that cut a byte run (decode's join_pieces stops)
        self._run_breaks = bytes([1]) * num_special + bytes(len(tekken.rank_bytes))
        # decode_incremental and token_pieces are TableMethods' (the compiled engine).
        self._table = byte_table(self._bytes, range(num_special), breaks=True)
        self._encoding = LazyEncoding(
            lambda: tiktoken_encoding(
                name=os.path.basename(path).removesuffix(".json"),
                pattern=tekken.pattern,
                ranks=tekken.rank_bytes,
                specials={},
                path=path,
                who="tekken encode",
                extra="tekken",
            )
        )

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> TekkenTokenizer:
        reject_unknown_options(spec.options, [], "tekken")
        tokenizer = cls(spec.file("tekken"))
        tokenizer.spec = spec
        return tokenizer

    # -- the vocabulary -----------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """`default_vocab_size`: the special ids plus the ranks in use."""
        return self._vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        """0 ... num_special_tokens - 1: every special token, listed or filled."""
        return self._special

    @property
    def num_special_tokens(self) -> int:
        return self._num_special

    @property
    def version(self) -> str:
        """The file's `config.version` ("v3", "v7", ...)."""
        return self._file.version

    @property
    def pattern(self) -> str:
        """The pre-tokenizer regex (tiktoken's `pat_str`)."""
        return self._file.pattern

    @property
    def special_token_names(self) -> tuple[str, ...]:
        """The name of every special id, in id order (fillers are `<SPECIAL_{id}>`)."""
        return self._file.special_names

    @property
    def special_token_ids(self) -> dict[str, int]:
        """Special token name -> id, e.g. {"<s>": 1, "[INST]": 3, ...} (a fresh copy)."""
        return dict(self._special_by_name)

    @property
    def lists_special_tokens(self) -> bool:
        """Whether the file lists its special tokens (else mistral-common's built-in twenty)."""
        return self._file.listed_specials

    @property
    def audio_config(self) -> dict[str, Any] | None:
        """The file's `audio` object as written (Voxtral), or None."""
        audio = self._file.audio
        return None if audio is None else dict(audio)

    def special_token_id(self, name: str) -> int:
        """The id of the special token `name` ("[INST]", "[AUDIO]", "[TRANSCRIBE]", ...)."""
        try:
            return self._special_by_name[name]
        except KeyError:
            raise KeyError(f"{self._path} has no special token {name!r}") from None

    def _named(self, name: str) -> int | None:
        return self._special_by_name.get(name)

    @property
    def bos_id(self) -> int | None:
        return self._named("<s>")

    @property
    def eos_id(self) -> int | None:
        return self._named("</s>")

    @property
    def pad_id(self) -> int | None:
        return self._named("<pad>")

    @property
    def unk_id(self) -> int | None:
        return self._named("<unk>")

    def is_control(self, token_id: int) -> bool:
        """Whether `token_id` is a special id the file marks `is_control`: False for any other
        integer, ordinary ids and ids outside the vocabulary alike (mistral-common answers its
        is_special by membership, never by raising)."""
        token_id = _integer(token_id)
        return 0 <= token_id < self._num_special and bool(self._file.control[token_id])

    def is_special(self, token: int | str) -> bool:
        """mistral-common's Tekkenizer.is_special: an id among the special ids, or a special
        token's name; False for anything else of those types, TypeError for other types."""
        if isinstance(token, str):
            return token in self._special_by_name
        return 0 <= _integer(token) < self._num_special

    def is_byte(self, token_id: int) -> bool:
        """mistral-common's Tekkenizer.is_byte: one of the 256 single-byte ranks."""
        return 0 <= _integer(token_id) - self._num_special < 256

    def id_to_piece(self, token_id: int) -> str:
        """mistral-common's `id_to_piece`: a special token's name, an ordinary token's bytes
        decoded on their own (lossy UTF-8: a partial character shows as U+FFFD)."""
        token_id = self.check_ids([token_id])[0]
        if token_id < self._num_special:
            return self._file.special_names[token_id]
        return self._bytes[token_id].decode("utf-8", "replace")

    def id_to_bytes(self, token_id: int) -> bytes:
        """The bytes an id renders (b"" for special ids)."""
        return self._bytes[self.check_ids([token_id])[0]]

    # -- decoding -----------------------------------------------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        """`Tekkenizer.decode(ids, SpecialTokenPolicy.IGNORE)`: each run of ordinary ids between
        special ids decoded on its own, special ids dropped."""
        # Without a special id the ids are one run: gathered where they are (a list or a
        # buffer, checked as check_ids checks them), with no Python int made per id.
        joined = join_pieces(self._bytes, ids, stops=self._run_breaks)
        if joined is not None:
            return joined.decode("utf-8", "replace")
        ids = self.check_ids(ids)
        pieces, num_special = self._bytes, self._num_special
        texts: list[str] = []
        run: list[bytes] = []
        for token_id in ids:
            if token_id < num_special:
                if run:
                    texts.append(join_bytes(run).decode("utf-8", "replace"))
                    run = []
            else:
                run.append(pieces[token_id])
        if run:
            texts.append(join_bytes(run).decode("utf-8", "replace"))
        return "".join(texts)

    # -- encoding -----------------------------------------------------------------------------

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """tiktoken's BPE over the file's pattern and ranks, shifted past the special ids.

        A special token's name written in the text ("[INST]", "<s>") is that one id, as
        transformers matches special-token text; with split_special_tokens=True it is ordinary
        text, which is exactly mistral-common's `encode(text, bos=False, eos=False)` (it never
        matches names). add_special_tokens=True puts bos in front and no eos: mistral-common's
        `encode(text, bos=True, eos=False)`, what transformers' MistralCommonBackend does
        outside fine-tuning mode."""
        text = checked_text(text, "tekken")
        ids = self.encode_with_special_text(text, self._encode_plain, split_special_tokens)
        return self.add_bos_eos(ids) if add_special_tokens else ids

    def _encode_plain(self, text: str) -> list[int]:
        shift = self._num_special
        return [rank + shift for rank in self._encoding.get().encode(text)]

    # -- the prompt side (docs/prompts.md) ---------------------------------------------------

    def _special_tokens(self) -> SpecialTokens:
        """bos <s>, eos </s>, pad <pad>, unk <unk> by name, as mistral-common's Tekkenizer finds
        them; eos is the one stop id (mistral-common knows no other end-of-turn token)."""
        builder = SpecialTokensBuilder(self._vocab_size)
        where = (
            "the tekken.json special token"
            if self._file.listed_specials
            else ("mistral-common's built-in special token")
        )
        for role in ROLES:
            name = _ROLE_NAMES.get(role)
            token_id = self._named(name) if name is not None else None
            builder.set(role, token_id, f"{where} {name!r}" if token_id is not None else "tekken has none")
        builder.add_bos = True
        return builder.build()

    def _vocabulary(self) -> dict[str, int]:
        # Special names first (they win a spelling an ordinary token's bytes also have).
        table: dict[str, int] = {}
        for token_id in range(self._vocab_size - 1, self._num_special - 1, -1):
            table[self._bytes[token_id].decode("utf-8", "replace")] = token_id
        table.update(self._special_by_name)
        return table

    def _keep_specials(self) -> Tokenizer:
        return TekkenWithSpecials(self)


class TekkenWithSpecials(TableMethods, Tokenizer):
    """`TekkenTokenizer.with_specials()`: `Tekkenizer.decode(ids, SpecialTokenPolicy.KEEP)`:
    each special id renders its name ("<s>", "[INST]", "<SPECIAL_42>"), each run of ordinary
    ids between them is decoded on its own. A name is valid UTF-8 that starts with a lead byte,
    so decoding the bytes joined equals decoding each run apart (an incomplete character
    before a name is cut off by it either way); an empty name keeps the run break explicitly.
    special_ids is empty; encode is the parent's."""

    supports_encode = True

    def __init__(self, parent: TekkenTokenizer) -> None:
        self._parent = parent
        names = parent.special_token_names
        self._bytes = tuple([name.encode("utf-8") for name in names]) + parent._bytes[len(names) :]
        self._table = byte_table(self._bytes, [i for i, name in enumerate(names) if not name], breaks=True)
        #: decode's join_pieces stops: only an empty name must cut the run by hand
        self._run_breaks = bytes(0 if name else 1 for name in names) + bytes(len(self._bytes) - len(names))

    @property
    def vocab_size(self) -> int:
        return self._parent.vocab_size

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset()

    def decode(self, ids: Sequence[int]) -> str:
        # A name cuts the byte run before it by itself (see the class docstring): unless an
        # empty name occurs, the bytes are joined where the ids are.
        joined = join_pieces(self._bytes, ids, stops=self._run_breaks)
        if joined is not None:
            return joined.decode("utf-8", "replace")
        ids = self.check_ids(ids)
        pieces, num_special = self._bytes, self._parent.num_special_tokens
        texts: list[str] = []
        run: list[bytes] = []
        for token_id in ids:
            if token_id < num_special:
                if run:
                    texts.append(join_bytes(run).decode("utf-8", "replace"))
                    run = []
                texts.append(pieces[token_id].decode("utf-8"))
            else:
                run.append(pieces[token_id])
        if run:
            texts.append(join_bytes(run).decode("utf-8", "replace"))
        return "".join(texts)

    def id_to_piece(self, token_id: int) -> str:
        return self._parent.id_to_piece(token_id)

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        return self._parent.encode(text, add_special_tokens, split_special_tokens=split_special_tokens)


# -- recognising the files (the registry's detector for this kind) ----------------------------


def _tekken_found(path: str, data: Any) -> Found:
    config = data.get("config") if isinstance(data, dict) else None
    if not isinstance(config, dict) or not isinstance(data.get("vocab"), list):
        raise MalformedAssetError(
            f"{path}: not a tekken.json (it needs a 'config' object and a 'vocab' list)", path=path
        )
    listed = data.get("special_tokens")
    specials = config.get("default_num_special_tokens")
    found = Found("tekken", {"tekken": path}, source=os.path.basename(path))
    found.evidence.append(
        (
            "kind",
            f"tekken: config version {config.get('version')!r}, {len(data['vocab'])} ranks listed, "
            f"default_vocab_size {config.get('default_vocab_size')}, {specials} special ids; "
            + (
                f"{len(listed)} special tokens listed in the file"
                if isinstance(listed, list)
                else "no special_tokens listed (mistral-common's built-in twenty, then <SPECIAL_n> fillers)"
            ),
        )
    )
    found.evidence.append(
        (
            "special_ids",
            f"0 ... {specials - 1 if isinstance(specials, int) else '?'}: every id below default_num_special_tokens",
        )
    )
    return found


def detect(path: str) -> list[Detected]:
    """A folder's tekken.json (a malformed one is an error: the name is Mistral's), or a single
    JSON file with tekken's 'config' object and 'vocab' list."""
    if os.path.isdir(path):
        if "tekken.json" not in folder_names(path):
            return []
        at = os.path.join(path, "tekken.json")
        return [_tekken_found(at, read_json(at, "tekken.json"))]
    if not path.endswith(".json"):
        return []
    data = read_json(path, os.path.basename(path))
    if isinstance(data, dict) and isinstance(data.get("config"), dict) and isinstance(data.get("vocab"), list):
        return [_tekken_found(path, data)]
    return []


def _integer(value: object) -> int:
    """An id asked about (an int or NumPy integer), as mistral-common takes it."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"Expected int or str, got {type(value).__name__}")
    return operator.index(value)


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: the file mistral-common
# loads, even where a tokenizer.json lies beside it: first among the kinds.
KIND = KindRecord("tekken", TekkenTokenizer.from_spec, detect, precedence=10)
