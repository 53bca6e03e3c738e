"""huggingface: a `tokenizers` tokenizer.json, plus the optional tokenizer_config.json merge.

`decode` equals the runtime's decode with special tokens skipped; `encode` is the runtime's
encode without the post-processor's special tokens (option `add_special_tokens`, default
False: a prompt or hotword list is spliced into a longer sequence, so a BOS/CLS in the
middle would be wrong). Streaming and token pieces run on a compiled PieceTable built from
the decoder (see _hf_decoder.py), which decode uses too; a decoder that cannot be streamed
exactly is refused when the tokenizer is built. The table is built from the parsed JSON
(vocabulary_of_json); the runtime itself is built on first use (encode, `backend`).

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
import os
import threading
import warnings
from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

from ._common import checked_text, config_chat_templates, declared_roles, read_added_tokens, reject_unknown_options
from ._encode_cuts import SessionPlan, session_plan
from ._hf_decoder import compile_decoder, stream_for
from ._tokenizer_json import TokenizerJson, glance, is_whisper
from .api import (
    ROLES,
    BackendNotInstalledError,
    Detected,
    Found,
    KindRecord,
    MalformedAssetError,
    PieceTable,
    SetAside,
    SpecError,
    SpecialTokens,
    SpecialTokensBuilder,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
    all_json_ids,
    batch_rows,
    check_id_span,
    existing_file,
    folder_names,
    join_pieces,
    read_json,
    read_text,
    short_repr,
)

__all__ = [
    "HuggingFaceTokenizer",
    "Vocabulary",
    "built_runtime",
    "load_backend",
    "merge_tokenizer_config",
    "vocabulary_of_json",
    "vocabulary_of_runtime",
]


_OPTIONS = ["add_special_tokens"]

#: The prompt side's optional files, by spec role, and the name each has beside tokenizer.json
#: (transformers' layout), where they are looked for when the spec does not name them.
PROMPT_FILES = {
    "special_tokens_map": "special_tokens_map.json",
    "generation_config": "generation_config.json",
    "chat_template": "chat_template.jinja",
    "chat_template_json": "chat_template.json",
}
#: Role prefix of a named extra template (additional_chat_templates/<name>.jinja beside tokenizer.json).
EXTRA_TEMPLATE_ROLE = "chat_template:"


def load_backend(path: str) -> Any:
    """A `tokenizers.Tokenizer` from a tokenizer.json; typed errors naming the file."""
    try:
        from tokenizers import Tokenizer as Backend
    except ImportError as exc:
        raise BackendNotInstalledError(
            f"the huggingface kind encodes with the 'tokenizers' package ({exc}); pip install 'oasr_tok[huggingface]'"
        ) from exc

    text = read_text(path, "tokenizer.json")
    try:
        return Backend.from_str(text)
    except Exception as runtime_error:  # the runtime raises a bare Exception for bad content
        line = None
        reason: Exception = runtime_error
        try:
            json.loads(text)
        except json.JSONDecodeError as bad:
            line = bad.lineno
            reason = bad  # the JSON error says more than serde's
        except RecursionError:
            # (the runtime's parser stops at 128 levels; Python's at the interpreter's limit)
            reason = ValueError("its JSON is nested too deeply (a list or object inside another, thousands deep)")
        raise MalformedAssetError(
            f"{path}{':' + str(line) if line else ''}: not a tokenizer.json the tokenizers runtime can load: {reason}",
            path=path,
            line=line,
        ) from None


def merge_tokenizer_config(backend: Any, path: str) -> list[tuple[int, int, str]]:
    """Add the tokens `path` declares and `backend` lacks, in declared-id order. Returns (and
    warns about) every (declared id, actual id, content) that landed elsewhere."""
    from tokenizers import AddedToken

    entries = read_added_tokens(path)
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
    moved: list[tuple[int, int, str]] = []
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


_LLAMA_CLASSES = ("LlamaTokenizer", "LlamaTokenizerFast")


def _llama_encode_rule(backend: Any, config_path: str) -> None:
    """transformers (5.x) rebuilds a tokenizer whose config names LlamaTokenizer(Fast) from
    the file's vocabulary and merges with its own rules: no normalizer and a Metaspace
    pre-tokenizer (prepend "always" for legacy configs, "first" otherwise, "never" without a
    prefix space; split off). Encode follows it, so that encode(text, True) is what
    AutoTokenizer(dir)(text).input_ids gives; the decoder (Replace, ByteFallback, Fuse,
    Strip) is the same in both and stays the file's."""
    config = read_json(config_path, "tokenizer_config.json")
    if not isinstance(config, dict) or config.get("tokenizer_class") not in _LLAMA_CLASSES:
        return
    from tokenizers import pre_tokenizers

    prefix = config.get("add_prefix_space")
    if prefix is None or prefix:
        scheme = "always" if config.get("legacy", False) else "first"
    else:
        scheme = "never"
    backend.normalizer = None
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme=scheme, split=False)


class Vocabulary(NamedTuple):
    """What decoding needs of a tokenizer.json, as the runtime loads it."""

    #: id -> token text as the runtime's id_to_token answers (None: an id with no token)
    texts: list[str | None]
    #: the contents of the special added tokens (decode skips every id spelling one)
    special_text: frozenset[str]
    #: the decoder step as tokenizer.json writes it (None: no decoder)
    decoder: dict[str, Any] | None
    #: whether texts is also the runtime's text -> id map (no text at two ids)
    one_id_per_text: bool


def vocabulary_of_runtime(backend: Any, where: str) -> Vocabulary:
    """The Vocabulary as a built runtime answers it."""
    vocab = backend.get_vocab(with_added_tokens=True)
    if vocab:
        highest = max(vocab.values())
        check_id_span(highest, len(vocab), where, f"token {short_repr(backend.id_to_token(highest))}")
    size: int = max(backend.get_vocab_size(with_added_tokens=True), max(vocab.values(), default=-1) + 1)
    texts: list[str | None] = [None] * size
    clashes = []
    for text, token_id in vocab.items():
        if texts[token_id] is not None:
            clashes.append(token_id)
        texts[token_id] = text
    for token_id in clashes:  # an id two texts claim (a malformed model vocabulary): the runtime's answer
        texts[token_id] = backend.id_to_token(token_id)
    added = backend.get_added_tokens_decoder()
    if backend.normalizer is not None:
        # get_vocab gives an added token's content as written; a normalized one is kept (and
        # decoded) as the normalizer writes it, which id_to_token answers (a ByteLevel
        # normalizer: "međa" is kept as "meÄĳa", which the ByteLevel decoder reads back).
        for token_id, token in added.items():
            if token.normalized and 0 <= token_id < size:
                texts[token_id] = backend.id_to_token(token_id)
    special_text = frozenset(t.content for t in added.values() if t.special)
    decoder = json.loads(backend.decoder.__getstate__()) if backend.decoder is not None else None
    return Vocabulary(texts, special_text, decoder, not clashes)


_MODEL_TYPES = ("BPE", "WordPiece", "WordLevel", "Unigram")


def vocabulary_of_json(data: Any, where: str, config_ids: Collection[int] = ()) -> Vocabulary | None:
    """The Vocabulary read from the parsed tokenizer.json, without building the runtime (a
    third of a second for a 150,000-token BPE, and only encode needs it). The runtime's own
    rules: the model's vocabulary, then each added token at the model's id for its text or
    else at the next free id (tokenizers' AddedVocabulary.add_tokens). None where the file is
    anything but plain (an unknown or untyped model, an id two texts claim, an added token the
    runtime would place elsewhere than its declared id, a config token to merge): the runtime
    is then built and asked, as it always could be."""
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") not in _MODEL_TYPES:
        return None
    vocab = model.get("vocab")
    model_ids: dict[str, int]
    if model["type"] == "Unigram":
        if not isinstance(vocab, list) or not all(
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and isinstance(entry[1], (int, float))
            and not isinstance(entry[1], bool)
            for entry in vocab
        ):
            return None
        model_ids = {entry[0]: i for i, entry in enumerate(vocab)}
        if len(model_ids) != len(vocab):
            return None
    else:
        if not isinstance(vocab, dict) or not all_json_ids(vocab.values()):
            return None
        model_ids = vocab
    model_size = len(model_ids)
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        return None
    added_ids: dict[str, int] = {}
    special_text = set()
    highest = -1
    normalizer = data.get("normalizer")
    for entry in added:
        content = entry.get("content") if isinstance(entry, dict) else None
        if not isinstance(content, str) or not content or content in added_ids:
            return None
        if normalizer is not None and entry.get("normalized", not entry.get("special")):
            # The runtime keeps such a token as the normalizer writes it (a ByteLevel normalizer:
            # in the byte alphabet, which the ByteLevel decoder reads back): it says the text.
            return None
        token_id = model_ids.get(content)
        if token_id is None:
            token_id = model_size if highest < 0 or (highest < model_size and model_size) else highest + 1
        if token_id != entry.get("id") or type(entry.get("id")) is not int:
            return None
        added_ids[content] = token_id
        highest = max(highest, token_id)
        if entry.get("special"):
            special_text.add(content)
    if any(token_id not in added_ids.values() for token_id in config_ids):
        return None  # the config adds tokens: merge_tokenizer_config runs on the runtime
    count = model_size + sum(1 for content in added_ids if content not in model_ids)
    top = max(max(model_ids.values(), default=-1), highest)
    if top >= 0:
        check_id_span(top, count, where, "its vocabulary")
    texts: list[str | None] = [None] * max(count, top + 1)
    for text, token_id in model_ids.items():
        if texts[token_id] is not None:
            return None
        texts[token_id] = text
    for content, token_id in added_ids.items():
        if content not in model_ids:
            if texts[token_id] is not None:
                return None
            texts[token_id] = content
    decoder = data.get("decoder")
    if decoder is not None and not isinstance(decoder, dict):
        return None
    return Vocabulary(texts, frozenset(special_text), decoder, True)


def _runtime_of(path: str, config: str | None) -> Any:
    """The `tokenizers` runtime of the files, as the kind encodes with it (the config merged,
    transformers' Llama encode rule)."""
    backend = load_backend(path)
    if config is not None:
        merge_tokenizer_config(backend, existing_file(config, "tokenizer_config.json"))
        _llama_encode_rule(backend, config)
    return backend


class _Runtime:
    """The runtime, built on first use (encode, `backend`): decoding never needs it."""

    def __init__(self, path: str, config: str | None, built: Any = None) -> None:
        self._path, self._config = path, config
        self._built = built
        self._lock = threading.Lock()

    def get(self) -> Any:
        built = self._built
        if built is None:
            with self._lock:
                if self._built is None:
                    self._built = _runtime_of(self._path, self._config)
                built = self._built
        return built


def built_runtime(path: str, backend: Any) -> _Runtime:
    """The runtime holder of a runtime built otherwise (the wordpiece kind's)."""
    return _Runtime(path, None, backend)


class HuggingFaceTokenizer(TableMethods, Tokenizer):
    """A tokenizer.json run by `tokenizers`. Options: `add_special_tokens` (encode; default False)."""

    supports_encode = True

    def __init__(
        self,
        vocabulary: Vocabulary,
        runtime: _Runtime,
        *,
        where: str = "tokenizer.json",
        add_special_tokens: bool = False,
        config: str | None = None,
        keep_specials: bool = False,
    ) -> None:
        self._runtime = runtime
        self._vocab = vocabulary
        self._add_special_tokens = add_special_tokens
        self._where = where
        self._config_path = config
        self._keeps_specials = keep_specials
        self._split_backend: Any = None
        self._split_lock = threading.Lock()
        # The runtime skips a special token by its text (any id spelling it), and drops ids
        # with no token at all. The with_specials() view keeps the specials (holes stay dropped).
        special_text = frozenset() if keep_specials else vocabulary.special_text
        tokens = list(vocabulary.texts)
        size = len(tokens)
        self._special = frozenset(i for i, t in enumerate(tokens) if t is None or t in special_text)
        for i in self._special:
            tokens[i] = None
        self.decoder_plan = compile_decoder(vocabulary.decoder, where)
        # decode, decode_incremental and token_pieces are the compiled PieceTable's, or a
        # CTCStream's around it when the decoder has a neighbour rule (CTC, BPEDecoder): equal
        # to the runtime's decode by the contract, and 4-6 times faster than it.
        self._table = stream_for(tokens, self.decoder_plan, where)
        self._joined = self._table.joined_form() if isinstance(self._table, PieceTable) else None
        self._size = size

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> HuggingFaceTokenizer:
        reject_unknown_options(spec.options, _OPTIONS, "huggingface")
        add_special = spec.options.get("add_special_tokens", False)
        if not isinstance(add_special, bool):
            raise SpecError(f"huggingface: option add_special_tokens must be true or false, got {add_special!r}")
        path = existing_file(spec.file("tokenizer"), "tokenizer.json")
        config = spec.files.get("tokenizer_config")
        config_ids = read_added_tokens(existing_file(config, "tokenizer_config.json")) if config is not None else {}
        vocabulary = vocabulary_of_json(read_json(path, "tokenizer.json"), path, config_ids)
        if vocabulary is None:
            backend = _runtime_of(path, config)
            runtime = _Runtime(path, config, backend)
            vocabulary = vocabulary_of_runtime(backend, path)
        else:
            runtime = _Runtime(path, config)
        tokenizer = cls(vocabulary, runtime, where=path, add_special_tokens=add_special, config=config)
        tokenizer.spec = spec
        found = tokenizer._prompt_files()
        if any(role not in spec.files for role in found):
            # Pickled by value, the files found beside tokenizer.json travel too (the receiver
            # has only the spec's files), so its special tokens and templates stay the same.
            tokenizer.__dict__["_oasr_value_spec"] = TokenizerSpec(spec.kind, {**spec.files, **found}, spec.options)
        return tokenizer

    def _session_plan(self) -> SessionPlan | None:
        """What a re-decoding session (tok.new_session) needs to re-encode only the end of its
        text, or None (its sessions then re-encode all of it): _encode_cuts.py. Made once (a
        with_specials() view answers its tokenizer's)."""
        parent = self.__dict__.get("_oasr_specials_of")
        if parent is not None:
            return parent._session_plan()  # type: ignore[no-any-return]
        if "_oasr_session_plan" not in self.__dict__:
            view = self.with_specials()  # qwen-asr's prefix is decoded with the special ids' text
            self.__dict__["_oasr_session_plan"] = session_plan(self.backend, getattr(view, "_joined", None))
        plan: SessionPlan | None = self.__dict__["_oasr_session_plan"]
        return plan

    def id_to_piece(self, token_id: int) -> str:
        """The runtime's token string for `token_id` ("Ġthe", "▁the", "<0xE4>", "<|im_end|>");
        "" for an id with no token (a hole, which decode drops)."""
        return self._vocab.texts[self.check_ids([token_id])[0]] or ""

    @property
    def backend(self) -> Any:
        """The `tokenizers.Tokenizer` underneath (after the tokenizer_config merge), built on
        first use."""
        return self._runtime.get()

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    def decode(self, ids: Sequence[int]) -> str:
        # The runtime's decode with special tokens skipped, rendered by the table the streams
        # use: faster than the runtime's at every length (benchmarks/RESULTS.md), and no runtime
        # to build at load.
        if self._joined is not None:
            # A byte-level table (Qwen's, GPT-2's): the runtime's decode is its pieces joined and
            # decoded once, as the table's own stream would render them; a long join lets go of
            # the GIL (_engine/join.pyx).
            pieces, errors = self._joined
            return join_pieces(pieces, ids).decode("utf-8", errors)
        text: str = self._table.decode_incremental(ids, {}, True)
        return text

    def decode_batch(
        self, batch: Sequence[Sequence[int]] | Any, lengths: Sequence[int] | None = None, pad_id: int | None = None
    ) -> list[str]:
        if self._joined is not None:
            return [self.decode(ids) for ids in batch_rows(batch, lengths, pad_id)]
        feed = self._table.decode_incremental
        return [feed(ids, {}, True) for ids in batch_rows(batch, lengths, pad_id)]

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """The runtime's encode: added tokens written in `text` are matched as their ids (as
        transformers does) unless split_special_tokens; add_special_tokens=True runs the
        tokenizer.json post-processor (transformers' `tok(text).input_ids`); None: the
        spec's `add_special_tokens` option (default False)."""
        text = checked_text(text, "huggingface")
        if add_special_tokens is None:
            add_special_tokens = self._add_special_tokens
        backend = self._splitting_backend() if split_special_tokens else self.backend
        ids: list[int] = backend.encode(text, add_special_tokens=bool(add_special_tokens)).ids
        return ids

    def _splitting_backend(self) -> Any:
        # A second runtime with encode_special_tokens on: the flag is shared state on a
        # runtime, so flipping it per call would race between threads.
        with self._split_lock:
            if self._split_backend is None:
                from tokenizers import Tokenizer as Backend

                split = Backend.from_str(self.backend.to_str())
                split.encode_special_tokens = True
                self._split_backend = split
            return self._split_backend

    # -- the prompt side (docs/prompts.md) ---------------------------------------------------

    def _config(self) -> dict[str, Any]:
        # Read once: the prompt side asks for it several times (roles, variables, templates).
        cached = self.__dict__.get("_oasr_config")
        if cached is None:
            config = read_json(self._config_path, "tokenizer_config.json") if self._config_path is not None else {}
            cached = config if isinstance(config, dict) else {}
            self.__dict__["_oasr_config"] = cached
        return cached

    def _prompt_files(self) -> dict[str, str]:
        """role -> path of the prompt side's optional files: the spec's when it names the role,
        else the file of that name beside tokenizer.json (read once)."""
        cached = self.__dict__.get("_oasr_prompt_files")
        if cached is None:
            named = dict(self.spec.files) if self.spec is not None else {}
            cached = {}
            for role, name in PROMPT_FILES.items():
                path = named.get(role) or self._beside(name)
                if path is not None:
                    cached[role] = path
            extra = {role: path for role, path in named.items() if role.startswith(EXTRA_TEMPLATE_ROLE)}
            folder = os.path.join(os.path.dirname(os.path.abspath(self._where)), "additional_chat_templates")
            if not extra and os.path.isdir(folder):
                extra = {
                    EXTRA_TEMPLATE_ROLE + name[: -len(".jinja")]: os.path.join(folder, name)
                    for name in sorted(os.listdir(folder))
                    if name.endswith(".jinja")
                }
            cached.update(extra)
            self.__dict__["_oasr_prompt_files"] = cached
        return cached

    def _beside(self, name: str) -> str | None:
        path = os.path.join(os.path.dirname(os.path.abspath(self._where)), name)
        return path if os.path.isfile(path) else None

    def _declared_roles(self) -> dict[str, str | None]:
        """role -> token text as tokenizer_config.json (and special_tokens_map.json beside it)
        declare them; None for a role declared absent. Empty without a config."""
        sources = [self._config()]
        special_map = self._prompt_files().get("special_tokens_map")
        if special_map is not None and self._config_path is not None:
            data = read_json(special_map, "special_tokens_map.json")
            sources.insert(0, data if isinstance(data, dict) else {})
        return declared_roles(sources)

    def _special_tokens(self) -> SpecialTokens:
        builder = SpecialTokensBuilder(self._size)
        token_to_id = self.vocabulary.get
        if self._config_path is not None:
            # transformers' rule: with a tokenizer_config.json, a role it does not name is absent.
            declared = self._declared_roles()
            for role in ROLES:
                text = declared.get(role)
                token_id = token_to_id(text) if text is not None else None
                where = (
                    f"tokenizer_config.json {role}_token {text!r}"
                    if role in declared
                    else ("not declared in tokenizer_config.json")
                )
                builder.set(role, token_id, where)
        generation = self._prompt_files().get("generation_config")
        if generation is not None:
            data = read_json(generation, "generation_config.json")
            eos = data.get("eos_token_id") if isinstance(data, dict) else None
            for token_id in eos if isinstance(eos, list) else [eos]:
                if isinstance(token_id, int) and not isinstance(token_id, bool):
                    builder.stop(token_id, "generation_config.json eos_token_id")
        return builder.build(self.vocabulary, self._parent_special_ids())

    def _parent_special_ids(self) -> frozenset[int]:
        parent = self.__dict__.get("_oasr_specials_of")
        return parent.special_ids if parent is not None else self._special

    def _template_variables(self) -> dict[str, Any]:
        # transformers passes its special_tokens_map: the roles the config names, as text.
        return {f"{role}_token": text for role, text in self._declared_roles().items() if text is not None}

    def _vocabulary(self) -> dict[str, int]:
        if not self._vocab.one_id_per_text:
            return dict(self.backend.get_vocab(with_added_tokens=True))
        return {text: token_id for token_id, text in enumerate(self._vocab.texts) if text is not None}

    def _keep_specials(self) -> HuggingFaceTokenizer:
        return HuggingFaceTokenizer(
            self._vocab,
            self._runtime,
            where=self._where,
            add_special_tokens=self._add_special_tokens,
            config=self._config_path,
            keep_specials=True,
        )

    def _chat_templates(self) -> dict[str, str]:
        """transformers' order: chat_template.jinja (and additional_chat_templates/*.jinja)
        beside tokenizer.json win over tokenizer_config.json's `chat_template` (a string or a
        list of {"name", "template"}); chat_template.json (processors) comes last."""
        templates: dict[str, str] = {}
        files = self._prompt_files()
        jinja = files.get("chat_template")
        if jinja is not None:
            templates["default"] = read_text(jinja, "chat_template.jinja")
        for role, path in files.items():
            if role.startswith(EXTRA_TEMPLATE_ROLE):
                templates[role[len(EXTRA_TEMPLATE_ROLE) :]] = read_text(path, "chat template")
        if templates:
            return templates
        configured = config_chat_templates(self._config(), self._config_path or "tokenizer_config.json")
        if configured is not None:
            return configured
        processor = files.get("chat_template_json")
        if processor is not None:
            data = read_json(processor, "chat_template.json")
            if isinstance(data, dict) and isinstance(data.get("chat_template"), str):
                return {"default": data["chat_template"]}
        return {}


# -- recognising the files (the registry's detector for this kind) ----------------------------


def _found(summary: TokenizerJson, config: str | None) -> Found:
    path = summary.path
    found = Found("huggingface", {"tokenizer": path}, source=os.path.basename(path))
    found.evidence.append(
        ("kind", f"huggingface: {summary.structure}; no <|startoftranscript|>/<|notimestamps|>, so not Whisper")
    )
    if config is not None:
        found.files["tokenizer_config"] = config
        found.source += f" + {os.path.basename(config)}"
        declared = read_json(config, "tokenizer_config.json")
        extra = 0
        if isinstance(declared, dict) and isinstance(declared.get("added_tokens_decoder"), dict):
            extra = sum(
                1
                for entry in declared["added_tokens_decoder"].values()
                if isinstance(entry, dict)
                and isinstance(entry.get("content"), str)
                and entry["content"] not in summary.added
            )
        found.evidence.append(
            (
                "files",
                f"tokenizer_config.json beside it: {extra} added tokens it declares are missing from "
                "tokenizer.json and are added by the kind in declared-id order",
            )
        )
    found.evidence.append(("special_ids", f"the backend's special added tokens ({summary.special} in tokenizer.json)"))
    return found


def detect(path: str) -> list[Detected]:
    """A folder's tokenizer.json (+ tokenizer_config.json), or a single JSON file with a
    'model' object (its tokenizer_config.json travels with it when it is named tokenizer.json).
    One with Whisper's special tokens is the whisper kind's."""
    if os.path.isdir(path):
        names = folder_names(path)
        if "tokenizer.json" not in names:
            if "tokenizer_config.json" in names and "vocab.json" not in names:
                return [
                    SetAside(
                        "tokenizer_config.json",
                        "a tokenizer_config.json alone does not define a tokenizer (no tokenizer.json)",
                    )
                ]
            return []
        at = os.path.join(path, "tokenizer.json")
        summary = glance(at)
        if summary is None:
            raise MalformedAssetError(f"{at}: not a `tokenizers` tokenizer.json (no 'model' object)", path=at)
        config = os.path.join(path, "tokenizer_config.json") if "tokenizer_config.json" in names else None
        return [] if is_whisper(summary) else [_found(summary, config)]
    name = os.path.basename(path)
    if name == "tokenizer_config.json":
        return [
            SetAside(
                name, "a tokenizer_config.json alone does not define a tokenizer; point at tokenizer.json or its folder"
            )
        ]
    if not name.endswith(".json"):
        return []
    summary = glance(path)
    if summary is None or is_whisper(summary):
        return []
    sibling = os.path.join(os.path.dirname(path), "tokenizer_config.json")
    return [_found(summary, sibling if name == "tokenizer.json" and os.path.isfile(sibling) else None)]


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: a tokenizer.json is this
# kind's unless its added tokens are Whisper's.
KIND = KindRecord(
    "huggingface", HuggingFaceTokenizer.from_spec, detect, precedence=20, backend="tokenizers", extra="huggingface"
)
