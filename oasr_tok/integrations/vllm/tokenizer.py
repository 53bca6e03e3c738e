"""`tokenizer_mode="oasr"`: any checkpoint oasr_tok resolves, as vLLM's `TokenizerLike`
(vllm/tokenizers/protocol.py, vLLM 0.33) — docs/engines.md § vLLM.

`OasrTokenizer.from_pretrained(path)` loads the checkpoint with `oasr_tok.load` (the files beside
the weights, in oasr_tok's order of evidence: a tokenizer.json, a SentencePiece model, a GGUF file,
a .nemo archive, a Whisper or tekken vocabulary, ...), so one mode serves every kind. Where vLLM's
mode "hf" reads the same tokenizer.json, the answers are the same (tests/integrations/test_vllm_tokenizer.py
checks them against it): decode with and without special tokens, convert_ids_to_tokens,
convert_tokens_to_string, the vocabulary, the added vocabulary, the special ids by role.

What differs from mode "hf", by design:

* ``vocab_size`` and ``len()`` are the number of ids the tokenizer knows (added and special ones
  included, Whisper's timestamps too); transformers' ``vocab_size`` leaves the added tokens out.
* ``all_special_ids`` are the ids ``skip_special_tokens`` drops (oasr_tok's ``special_ids``);
  transformers lists only the ones its config names, so on a tokenizer.json without a
  tokenizer_config.json (Moonshine) it lists none although its decode skips them.
* An id outside the vocabulary is an ``InvalidIdError`` naming it and the range, never "" or None.
* ``encode`` of a decode-only kind (symbol_table, wav2vec2 ...) raises ``EncodeNotSupportedError``
  naming the kind: such a checkpoint serves token-id prompts only.

Loading it installs oasr_tok's detokenizer in vLLM's output step, once per process
(patches.py): the streams of requests of this mode are stepped in one batch per engine step.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

from transformers import BatchEncoding
from vllm.tokenizers.protocol import TokenizerLike

import oasr_tok
from oasr_tok import Tokenizer
from oasr_tok.errors import EncodeNotSupportedError, PiecesNotSupportedError, TokenizerError

from .patches import install
from .plugin import ModeTokenizer
from .token_strings import TokenStrings

__all__ = ["OasrTokenizer"]


class OasrTokenizer(TokenizerLike, ModeTokenizer):
    """An oasr_tok tokenizer as vLLM's TokenizerLike; `self.tokenizer` is the oasr_tok one.

    Example (in a process where vLLM is installed and oasr_tok's plug-in has run):
        >>> from vllm.tokenizers import get_tokenizer
        >>> tok = get_tokenizer("models/qwen3-asr", tokenizer_mode="oasr")  # doctest: +SKIP
        >>> tok.decode(tok.encode("the café opens", add_special_tokens=False))  # doctest: +SKIP
        'the café opens'
    """

    @classmethod
    def from_pretrained(
        cls,
        path_or_repo_id: str | Path,
        *args: Any,
        trust_remote_code: bool = False,
        revision: str | None = None,
        download_dir: str | None = None,
        **kwargs: Any,
    ) -> OasrTokenizer:
        """The tokenizer of a checkpoint: a local folder or file (oasr_tok.load), or a Hub
        repository whose files other than weights vLLM downloads first (as mode "hf" does).
        `truncation_side` ("left" for generation, vLLM's default) is kept; vLLM's other
        keyword arguments (trust_remote_code, config, code_revision ...) concern transformers'
        loading and are not read. Loading installs oasr_tok's detokenizer in vLLM's output
        step (patches.install: an IntegrationError names what this vLLM lacks)."""
        path = os.fspath(path_or_repo_id)
        if not os.path.exists(path):
            from vllm.transformers_utils.repo_utils import get_non_weight_snapshot_path

            path = get_non_weight_snapshot_path(
                path, revision=revision, cache_dir=download_dir, token=kwargs.get("token")
            )
        install()
        return cls(
            oasr_tok.load(path),
            name_or_path=os.fspath(path_or_repo_id),
            truncation_side=kwargs.get("truncation_side", "left"),
        )

    def __init__(self, tokenizer: Tokenizer, name_or_path: str = "", truncation_side: str = "left") -> None:
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"OasrTokenizer wraps an oasr_tok.Tokenizer, got {type(tokenizer).__name__}")
        if truncation_side not in ("left", "right"):
            raise ValueError(f"truncation_side must be 'left' or 'right', got {truncation_side!r}")
        self.tokenizer = tokenizer
        self.name_or_path = name_or_path
        self._truncation_side = truncation_side
        self._kind = tokenizer.spec.kind if tokenizer.spec is not None else type(tokenizer).__name__
        self._strings: TokenStrings | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The oasr_tok tokenizer pickles by its files (rebuilt once per process); the per-process
        # caches (the logprob string table ...) are made again where it lands.
        state = dict(self.__dict__)
        state["_strings"] = None
        for cache in ("_max_chars", "_added", "_framing_ids", "_vocab"):
            state.pop(cache, None)
        return state

    def __repr__(self) -> str:
        return f"<OasrTokenizer kind={self._kind!r} vocab_size={self.vocab_size} name_or_path={self.name_or_path!r}>"

    # -- the two renderings: special tokens dropped (oasr_tok's decode) or shown ----------------

    @property
    def kind(self) -> str:
        """The oasr_tok kind of the checkpoint ("huggingface", "whisper", "gguf" ...)."""
        return self._kind

    def view(self, skip_special_tokens: bool) -> Tokenizer:
        """The oasr_tok tokenizer that renders as vLLM asks: special tokens dropped (the
        tokenizer itself) or shown as their text (its with_specials() view; a
        KeepSpecialsNotSupportedError names a kind that cannot show them)."""
        return self.tokenizer if skip_special_tokens else self.tokenizer.with_specials()

    @property
    def token_strings(self) -> TokenStrings:
        """The strings and bytes vLLM's logprobs show per id (token_strings.py), made once."""
        if self._strings is None:
            self._strings = TokenStrings(self)
        return self._strings

    # -- sizes and special ids ---------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def __len__(self) -> int:
        return self.tokenizer.vocab_size

    def __hash__(self) -> int:
        return hash(id(self))

    @property
    def max_token_id(self) -> int:
        return self.tokenizer.vocab_size - 1

    @property
    def max_chars_per_token(self) -> int:
        cached = self.__dict__.get("_max_chars")
        if cached is None:
            try:
                cached = max((len(piece) for piece in self.get_vocab()), default=1)
            except PiecesNotSupportedError:
                cached = max((len(p) for p in self.view(False).token_pieces(range(self.vocab_size))), default=1)
            self.__dict__["_max_chars"] = cached
        return int(cached)

    @property
    def truncation_side(self) -> str:
        return self._truncation_side

    @property
    def is_fast(self) -> bool:
        # vLLM warns about "a slow tokenizer" otherwise; oasr_tok's decode and streams are compiled.
        return True

    @property
    def all_special_ids(self) -> list[int]:
        return sorted(self.tokenizer.special_ids)

    @property
    def all_special_tokens(self) -> list[str]:
        return [self._piece(i) for i in self.all_special_ids]

    @property
    def bos_token_id(self) -> int | None:
        return self.tokenizer.special_tokens.bos_id

    @property
    def eos_token_id(self) -> int | None:
        return self.tokenizer.special_tokens.eos_id

    @property
    def pad_token_id(self) -> int | None:
        return self.tokenizer.special_tokens.pad_id

    def num_special_tokens_to_add(self) -> int:
        """How many special ids encode(add_special_tokens=True) puts around a text (a BOS ...)."""
        return len(self._framing()[0]) + len(self._framing()[1])

    def _framing(self) -> tuple[list[int], list[int]]:
        """The special ids encode(add_special_tokens=True) puts before and after a text."""
        cached = self.__dict__.get("_framing_ids")
        if cached is None:
            if not self.tokenizer.supports_encode:
                cached = ([], [])
            else:
                plain = self.tokenizer.encode("x", add_special_tokens=False)
                full = self.tokenizer.encode("x", add_special_tokens=True)
                at = next((k for k in range(len(full) - len(plain) + 1) if full[k : k + len(plain)] == plain), 0)
                cached = (full[:at], full[at + len(plain) :])
            self.__dict__["_framing_ids"] = cached
        return cached

    # -- the vocabulary ----------------------------------------------------------------------

    def _piece(self, token_id: int) -> str:
        try:
            return self.tokenizer.id_to_piece(token_id)
        except PiecesNotSupportedError:
            return self.view(False).decode([token_id])

    def get_vocab(self) -> dict[str, int]:
        """piece -> id (oasr_tok's vocabulary: a piece several ids spell maps to the lowest); one
        dict made once, as vLLM's cached Hugging Face tokenizer keeps one."""
        cached = self.__dict__.get("_vocab")
        if cached is None:
            cached = self.__dict__["_vocab"] = dict(self.tokenizer.vocabulary)
        return cached

    def get_added_vocab(self) -> dict[str, int]:
        """The added tokens by content: a tokenizer.json's added_tokens (and those its
        tokenizer_config.json declares), as transformers reports them; for other kinds the
        special ids by their pieces."""
        cached = self.__dict__.get("_added")
        if cached is None:
            backend = getattr(self.tokenizer, "backend", None)
            decoder = getattr(backend, "get_added_tokens_decoder", None)
            if decoder is not None:
                cached = {token.content: i for i, token in sorted(decoder().items())}
            else:
                cached = {}
                for i in self.all_special_ids:
                    piece = self._piece(i)
                    if piece:
                        cached.setdefault(piece, i)
            self.__dict__["_added"] = cached
        return dict(cached)

    @overload
    def convert_tokens_to_ids(self, tokens: str) -> int: ...

    @overload
    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]: ...

    def convert_tokens_to_ids(self, tokens: str | list[str]) -> int | list[int]:
        """A piece's id; a piece the vocabulary lacks is the unk id (as transformers does) or,
        without one, an UnknownPieceError naming it."""
        if isinstance(tokens, str):
            return self._token_id(tokens)
        return [self._token_id(t) for t in tokens]

    def _token_id(self, token: str) -> int:
        found = self.tokenizer.vocabulary.get(token)
        if found is not None:
            return found
        unk = self.tokenizer.special_tokens.unk_id
        if unk is not None:
            return unk
        return self.tokenizer.piece_to_id(token)  # raises UnknownPieceError naming it

    def convert_ids_to_tokens(self, ids: Sequence[int], skip_special_tokens: bool = False) -> list[str]:
        """The vocabulary's spelling of each id ("Ġthe", "▁the", "<0xE4>"); special ids left
        out with skip_special_tokens. An id outside the vocabulary: InvalidIdError."""
        checked = self.tokenizer.check_ids(ids)
        if skip_special_tokens:
            special = self.tokenizer.special_ids
            checked = [i for i in checked if i not in special]
        return [self._piece(i) for i in checked]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        """The text of vocabulary pieces (special tokens shown), as the checkpoint's decoder
        renders them together."""
        return self.view(False).decode([self._token_id(t) for t in tokens])

    # -- text into ids -----------------------------------------------------------------------

    def encode(
        self,
        text: str,
        truncation: bool | None = None,
        max_length: int | None = None,
        add_special_tokens: bool = True,
        **kwargs: Any,
    ) -> list[int]:
        if not self.tokenizer.supports_encode:
            raise EncodeNotSupportedError(
                f"the {self._kind} tokenizer of {self.name_or_path or 'this checkpoint'} is decode-only: "
                "it cannot turn text into ids; send prompts as token ids (TokensPrompt)"
            )
        ids = self.tokenizer.encode(text, add_special_tokens=add_special_tokens)
        if truncation and max_length is not None and len(ids) > max_length:
            # As transformers truncates: the text's ids, so that they and the special ids around
            # them fit in max_length, cut at the truncation side.
            before, after = self._framing() if add_special_tokens else ([], [])
            plain = ids[len(before) : len(ids) - len(after)]
            room = max(0, max_length - len(before) - len(after))
            plain = plain[len(plain) - room :] if self._truncation_side == "left" else plain[:room]
            ids = before + plain + after
        return ids

    def __call__(
        self,
        text: str | list[str],
        text_pair: str | None = None,
        add_special_tokens: bool = True,
        truncation: bool = False,
        max_length: int | None = None,
        **kwargs: Any,
    ) -> BatchEncoding:
        if text_pair is not None:
            raise TokenizerError("OasrTokenizer does not encode text pairs (text_pair=)")
        if isinstance(text, list):
            rows = [self.encode(t, truncation, max_length, add_special_tokens) for t in text]
            return BatchEncoding({"input_ids": rows, "attention_mask": [[1] * len(r) for r in rows]})
        ids = self.encode(text, truncation, max_length, add_special_tokens)
        return BatchEncoding({"input_ids": ids, "attention_mask": [1] * len(ids)})

    # -- ids into text -----------------------------------------------------------------------

    def decode(self, ids: Sequence[int] | int, skip_special_tokens: bool = False) -> str:
        if isinstance(ids, int):
            ids = [ids]
        return self.view(skip_special_tokens).decode(ids)

    def batch_decode(self, batch: Sequence[Sequence[int]], skip_special_tokens: bool = False) -> list[str]:
        return self.view(skip_special_tokens).decode_batch(batch)

    # -- chat templates ----------------------------------------------------------------------

    @property
    def chat_template(self) -> str | None:
        return self.tokenizer.chat_template

    def get_chat_template(
        self, chat_template: str | None = None, tools: list[dict[str, Any]] | None = None
    ) -> str | None:
        """The template source vLLM's renderer resolves: a named one of the checkpoint's
        templates, the one given, or the checkpoint's default (its "tool_use" one with tools)."""
        templates = self.tokenizer.chat_templates
        if chat_template is not None:
            return templates.get(chat_template, chat_template)
        if tools is not None and "tool_use" in templates:
            return templates["tool_use"]
        return templates.get("default")

    def apply_chat_template(
        self,
        messages: list[Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        chat_template: str | None = None,
        tokenize: bool = False,
        add_generation_prompt: bool = False,
        return_dict: bool = False,
        **kwargs: Any,
    ) -> str | list[int]:
        """oasr_tok's apply_chat_template (transformers' rendering); vLLM's renderer passes the
        messages as `conversation=`."""
        conversation = messages if messages is not None else kwargs.pop("conversation", None)
        if conversation is None:
            raise TokenizerError("apply_chat_template needs the messages (messages= or conversation=)")
        if return_dict:
            raise TokenizerError("OasrTokenizer.apply_chat_template returns the text or the ids, not a dict")
        return self.tokenizer.apply_chat_template(
            conversation,
            add_generation_prompt=add_generation_prompt,
            tokenize=tokenize,
            tools=tools,
            chat_template=chat_template,
            **kwargs,
        )
