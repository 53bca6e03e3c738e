"""huggingface: a `tokenizers` tokenizer.json, plus the optional tokenizer_config.json merge.

`decode` is the runtime's own decode with special tokens skipped; `encode` is the runtime's
encode without the post-processor's special tokens (option `add_special_tokens`, default
False: a prompt or hotword list is spliced into a longer sequence, so a BOS/CLS in the
middle would be wrong). Streaming and token pieces run on a compiled PieceTable built from
the decoder (see _hf_tables.py); a decoder that cannot be streamed exactly is refused when
the tokenizer is built.

Ids: `vocab_size` covers every id the runtime knows, so it is the larger of
get_vocab_size(with_added_tokens=True) and the highest id + 1 (a model vocabulary may have
holes; get_vocab_size counts tokens, not ids). An id in range with no token ("a hole") is
dropped silently by the runtime's decode, exactly as a special token is, so it is reported
in `special_ids` ("exactly what decode strips"). An id outside the range raises
InvalidIdError, where the runtime would drop it silently.

tokenizer_config.json (the Qwen2-Audio trap): a checkpoint may declare in
`added_tokens_decoder` tokens that its tokenizer.json lacks. They are added in declared-id
order, special ones as special tokens, with the AddedToken flags as declared, as
`transformers` does when it loads the pair. The runtime gives each new token the next free
id (or the id the model vocabulary already has for that text), so a declared id that is not
where the runtime puts it is a silent corruption of the vocabulary: we warn loudly, naming
every id (declared -> actual).
"""
from __future__ import annotations

import json
import warnings
from typing import Any, Sequence

from ..base import Tokenizer
from ..errors import MalformedAssetError, SpecError, short_repr
from ..spec import TokenizerSpec
from ._common import (
    check_id_span,
    checked_text,
    existing_file,
    json_id,
    read_json,
    read_text,
    reject_unknown_options,
)
from ._hf_tables import compile_decoder, stream_for

__all__ = ["HuggingFaceTokenizer", "load_backend", "merge_tokenizer_config"]

_OPTIONS = ["add_special_tokens"]


def load_backend(path: str) -> Any:
    """A `tokenizers.Tokenizer` from a tokenizer.json; typed errors naming the file."""
    from tokenizers import Tokenizer as Backend

    text = read_text(path, "tokenizer.json")
    try:
        return Backend.from_str(text)
    except Exception as exc:  # the runtime raises a bare Exception for bad content
        line = None
        try:
            json.loads(text)
        except json.JSONDecodeError as bad:
            line = bad.lineno
            exc = bad  # the JSON error says more than serde's
        raise MalformedAssetError(
            f"{path}{':' + str(line) if line else ''}: not a tokenizer.json the tokenizers runtime can load: {exc}",
            path=path,
            line=line,
        ) from None


def _read_config(path: str) -> dict[str, dict]:
    """The added_tokens_decoder of a tokenizer_config.json, checked: {id: entry}."""
    config = read_json(path, "tokenizer_config.json")
    if not isinstance(config, dict):
        raise MalformedAssetError(f"{path}: tokenizer_config.json must hold a JSON object", path=path)
    declared = config.get("added_tokens_decoder")
    if declared is None:
        declared = {}
    if not isinstance(declared, dict):
        raise MalformedAssetError(f"{path}: added_tokens_decoder must map ids to tokens", path=path)
    entries: dict[int, dict] = {}
    for key, entry in declared.items():
        # An id key is decimal digits, as transformers writes it ("151643"); int() would also
        # take "-1", "+5", " 7" and "1_000".
        token_id = int(key) if isinstance(key, str) and key.isascii() and key.isdigit() else None
        if json_id(token_id) is None:
            raise MalformedAssetError(
                f"{path}: added_tokens_decoder key {short_repr(key)} is not a token id", path=path
            )
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not entry["content"]:
            raise MalformedAssetError(f"{path}: added_tokens_decoder[{key!r}] must be an object with a non-empty 'content'", path=path)
        entries[token_id] = entry
    return entries


def merge_tokenizer_config(backend: Any, path: str) -> list[tuple[int, int, str]]:
    """Add the tokens `path` declares and `backend` lacks, in declared-id order. Returns (and
    warns about) every (declared id, actual id, content) that landed elsewhere."""
    from tokenizers import AddedToken

    entries = _read_config(path)
    present = backend.get_added_tokens_decoder()
    missing = [(i, entries[i]) for i in sorted(entries) if i not in present]
    # Runs of equal special-ness keep the declared order while adding many tokens per call
    # (each call rebuilds the runtime's added-token matcher).
    run: list[Any] = []
    run_special = False

    def flush() -> None:
        if run:
            (backend.add_special_tokens if run_special else backend.add_tokens)(list(run))
            run.clear()

    for _, entry in missing:
        special = bool(entry.get("special", False))
        token = AddedToken(
            entry["content"],
            single_word=bool(entry.get("single_word", False)),
            lstrip=bool(entry.get("lstrip", False)),
            rstrip=bool(entry.get("rstrip", False)),
            normalized=bool(entry.get("normalized", not special)),
            special=special,
        )
        if special != run_special:
            flush()
            run_special = special
        run.append(token)
    flush()
    moved = []
    for declared, entry in missing:
        actual = backend.token_to_id(entry["content"])
        if actual != declared:
            moved.append((declared, actual, entry["content"]))
    if moved:
        shown = ", ".join(f"{d} -> {a} ({c!r})" for d, a, c in moved[:50])
        more = f" and {len(moved) - 50} more" if len(moved) > 50 else ""
        warnings.warn(
            f"{path}: {len(moved)} token(s) of added_tokens_decoder did not land at their declared id "
            f"(declared -> actual): {shown}{more}. The ids this checkpoint emits will decode to the "
            "wrong tokens; fix tokenizer.json or the config.",
            UserWarning,
            stacklevel=3,
        )
    return moved


def _tokens_by_id(backend: Any, vocab: dict[str, int], size: int) -> list[str | None]:
    """id -> token text (None for holes), as backend.id_to_token answers, from the vocabulary
    already in hand. An id two texts claim (a malformed model vocabulary) is asked of the runtime."""
    tokens: list[str | None] = [None] * size
    clashes = []
    for text, token_id in vocab.items():
        if tokens[token_id] is not None:
            clashes.append(token_id)
        tokens[token_id] = text
    for token_id in clashes:
        tokens[token_id] = backend.id_to_token(token_id)
    return tokens


class HuggingFaceTokenizer(Tokenizer):
    """A tokenizer.json run by `tokenizers`. Options: `add_special_tokens` (encode; default False)."""

    supports_encode = True

    def __init__(self, backend: Any, *, where: str = "tokenizer.json", add_special_tokens: bool = False) -> None:
        self._backend = backend
        self._add_special_tokens = add_special_tokens
        vocab = backend.get_vocab(with_added_tokens=True)
        if vocab:
            highest = max(vocab.values())
            check_id_span(highest, len(vocab), where, f"token {short_repr(backend.id_to_token(highest))}")
        size = max(backend.get_vocab_size(with_added_tokens=True), max(vocab.values(), default=-1) + 1)
        # The runtime skips a special token by its text (any id spelling it), and drops ids
        # with no token at all.
        special_text = {t.content for t in backend.get_added_tokens_decoder().values() if t.special}
        tokens = _tokens_by_id(backend, vocab, size)
        self._special = frozenset(i for i, t in enumerate(tokens) if t is None or t in special_text)
        for i in self._special:
            tokens[i] = None
        decoder = json.loads(backend.decoder.__getstate__()) if backend.decoder is not None else None
        self.decoder_plan = compile_decoder(decoder, where)
        self._table = stream_for(tokens, self.decoder_plan, where)
        self._size = size
        # Bound straight to the compiled engine: no Python frame on the per-token path.
        self.decode_incremental = self._table.decode_incremental  # type: ignore[method-assign]
        self.token_pieces = self._table.token_pieces  # type: ignore[method-assign]

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> "HuggingFaceTokenizer":
        reject_unknown_options(spec.options, _OPTIONS, "huggingface")
        add_special = spec.options.get("add_special_tokens", False)
        if not isinstance(add_special, bool):
            raise SpecError(f"huggingface: option add_special_tokens must be true or false, got {add_special!r}")
        path = existing_file(spec.file("tokenizer"), "tokenizer.json")
        backend = load_backend(path)
        config = spec.files.get("tokenizer_config")
        if config is not None:
            merge_tokenizer_config(backend, existing_file(config, "tokenizer_config.json"))
        tokenizer = cls(backend, where=path, add_special_tokens=add_special)
        tokenizer.spec = spec
        return tokenizer

    def id_to_piece(self, token_id: int) -> str:
        """The runtime's token string for `token_id` ("Ġthe", "▁the", "<0xE4>", "<|im_end|>");
        "" for an id with no token (a hole, which decode drops)."""
        return self._backend.id_to_token(self.check_ids([token_id])[0]) or ""

    @property
    def backend(self) -> Any:
        """The `tokenizers.Tokenizer` underneath (after the tokenizer_config merge)."""
        return self._backend

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    def decode(self, ids: Sequence[int]) -> str:
        return self._backend.decode(self.check_ids(ids), skip_special_tokens=True)

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        checked = [self.check_ids(ids) for ids in batch]
        return self._backend.decode_batch(checked, skip_special_tokens=True)

    def encode(self, text: str) -> list[int]:
        text = checked_text(text, "huggingface")
        return self._backend.encode(text, add_special_tokens=self._add_special_tokens).ids
