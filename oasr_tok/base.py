"""The Tokenizer contract every kind implements.

Three promises, for every kind and every input (see docs/decoding.md):

1. ``"".join(tok.token_pieces(ids)) == tok.decode(ids)``, one piece per id, "" for special ids.
2. Feeding any split of ``ids`` through ``decode_incremental`` keeps ``state["text"] ==
   tok.decode(ids so far)``; the deltas plus the ``final=True`` flush concatenate to the decode.
3. No retraction: an emitted delta is a prefix of the decode of every continuation.

The defaults here re-render the whole prefix (Θ(n²) in tokens); kinds override them for speed,
never for behaviour.
"""

from __future__ import annotations

import abc
import os
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

from ._ids import batch_rows, check_ids
from ._textbuf import check_owner, commit_text, table_tag
from .errors import (
    AssetError,
    EncodeError,
    EncodeNotSupportedError,
    KeepSpecialsNotSupportedError,
    PiecesNotSupportedError,
    StreamStateError,
    UnknownPieceError,
    stream_closed_error,
)
from .revisions import decode_hypothesis as _decode_hypothesis  # here, not per call: that import cost ~2 us a call
from .specials import SpecialTokens, SpecialTokensBuilder, split_on_special_text

if TYPE_CHECKING:
    from .spec import TokenizerSpec
    from .words import Times, Word, Words

__all__ = ["Tokenizer"]


class Tokenizer(abc.ABC):
    """Turns recogniser token ids into text (whole, streamed, per token, as timed words) and,
    where `supports_encode` is true, text into ids."""

    #: The spec this tokenizer was built from (set by build_tokenizer / from_spec).
    spec: TokenizerSpec | None = None
    #: Whether encode() works. Test this, never hasattr(tok, "encode").
    supports_encode: bool = False

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of valid ids: 0 ... vocab_size - 1."""

    @property
    @abc.abstractmethod
    def special_ids(self) -> frozenset[int]:
        """Exactly the ids decode() strips."""

    @abc.abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """The transcript of `ids`."""

    def encode(
        self, text: str, add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[int]:
        """Ids for `text` (prompts, hotwords). Special-token text in `text` ("<|im_start|>")
        becomes its one id unless `split_special_tokens`; `add_special_tokens=True` adds
        bos/eos as the checkpoint says (None: the kind's default, False unless its spec says
        otherwise). Decode-only kinds raise EncodeNotSupportedError.

        A kind that encodes overrides this with the same signature; the helpers
        `encode_with_special_text` and `add_bos_eos` do the special-token part for kinds
        whose backend only encodes plain text."""
        raise EncodeNotSupportedError(
            f"{type(self).__name__} is decode-only: it cannot turn text into ids "
            "(check tok.supports_encode before calling encode)"
        )

    def encode_batch(
        self, texts: Sequence[str], add_special_tokens: bool | None = None, *, split_special_tokens: bool = False
    ) -> list[list[int]]:
        """encode() for each text."""
        if isinstance(texts, str):
            raise EncodeError("encode_batch takes a list of str, got one str (use encode)")
        return [self.encode(t, add_special_tokens, split_special_tokens=split_special_tokens) for t in texts]

    # -- vocabulary pieces: an optional capability -------------------------------------------

    def id_to_piece(self, token_id: int) -> str:
        """The vocabulary's own spelling of `token_id` (the table symbol, SentencePiece piece,
        `tokenizers` token string or token-list entry: "▁the", "Ġthe", "<0xE4>", "and@@"), not
        its rendered text. Used by the NeMo-style adapter and `describe`. Kinds with a piece
        vocabulary override this; the default raises PiecesNotSupportedError."""
        raise PiecesNotSupportedError(
            f"{type(self).__name__} does not spell ids as vocabulary pieces (it has no id_to_piece)"
        )

    # -- the prompt side: special tokens, vocabulary, views, chat templates (docs/prompts.md) ---
    #
    # How a kind provides its data: override any of these (each is called once, then cached):
    #   _special_tokens() -> SpecialTokens   roles and stop ids from the checkpoint's own files,
    #       built with SpecialTokensBuilder (set/stop with a provenance sentence, then
    #       build(self.vocabulary, self.special_ids) fills the rest by convention). Default:
    #       the conventional spellings (specials.ROLE_NAMES) found in the vocabulary.
    #   _vocabulary() -> dict[str, int]      piece -> id. Default: id_to_piece over every id,
    #       the lowest id winning, "" (holes) left out.
    #   _keep_specials() -> Tokenizer        the with_specials() view (special ids rendered as
    #       text, special_ids empty). Default: refused, unless the kind has no special ids.
    #   _chat_templates() -> dict[str, str]  named jinja templates the checkpoint ships
    #       ("default" for the unnamed one). Default: none.
    #   _template_variables() -> dict        extra variables for templates (default: bos_token,
    #       eos_token, ... spelled as the vocabulary spells those ids).

    @property
    def special_tokens(self) -> SpecialTokens:
        """bos/eos/pad/unk/sep/cls/mask ids (None when absent) and stop_ids, with provenance."""
        cached = self.__dict__.get("_oasr_special_tokens")
        if cached is None:
            cached = self._special_tokens()
            self.__dict__["_oasr_special_tokens"] = cached
        return cached

    def _special_tokens(self) -> SpecialTokens:
        return SpecialTokensBuilder(self.vocab_size).build(self._vocabulary_or_none(), self.special_ids)

    @property
    def vocabulary(self) -> Mapping[str, int]:
        """A read-only piece -> id view of the vocabulary (PiecesNotSupportedError for kinds
        without pieces). A piece several ids spell maps to the lowest."""
        cached = self.__dict__.get("_oasr_vocabulary")
        if cached is None:
            cached = MappingProxyType(self._vocabulary())
            self.__dict__["_oasr_vocabulary"] = cached
        return cached

    def _vocabulary(self) -> dict[str, int]:
        to_piece = self.id_to_piece
        table: dict[str, int] = {}
        for token_id in range(self.vocab_size - 1, -1, -1):  # downward: the lowest id wins
            piece = to_piece(token_id)
            if piece:
                table[piece] = token_id
        return table

    def _vocabulary_or_none(self) -> Mapping[str, int] | None:
        try:
            return self.vocabulary
        except PiecesNotSupportedError:
            return None

    def piece_to_id(self, piece: str) -> int:
        """The id whose vocabulary piece is `piece` (the inverse of id_to_piece);
        UnknownPieceError when the vocabulary has no such piece."""
        token_id = self.vocabulary.get(piece) if isinstance(piece, str) else None
        if token_id is None:
            kind = self.spec.kind if self.spec is not None else type(self).__name__
            raise UnknownPieceError(f"piece {piece!r} is not in the {kind} vocabulary")
        return token_id

    def with_specials(self) -> Tokenizer:
        """A view of this tokenizer that renders special tokens as their text instead of
        dropping them (its special_ids is empty; the three contracts hold on it). Cached: the
        same view every call; a view's own with_specials() is itself."""
        view = self.__dict__.get("_oasr_specials_view")
        if view is None:
            if not self.special_ids:
                return self
            view = self._keep_specials()
            view.__dict__["_oasr_specials_of"] = self
            view.__dict__["_oasr_specials_view"] = view
            view.__dict__["_oasr_special_tokens"] = self.special_tokens
            view.spec = self.spec
            self.__dict__["_oasr_specials_view"] = view
        return view

    def _keep_specials(self) -> Tokenizer:
        kind = self.spec.kind if self.spec is not None else type(self).__name__
        raise KeepSpecialsNotSupportedError(f"the {kind} tokenizer cannot render its special tokens as text")

    @property
    def chat_template(self) -> str | None:
        """The chat template source the checkpoint ships (its default one), None without one."""
        return self.chat_templates.get("default")

    @property
    def chat_templates(self) -> Mapping[str, str]:
        """Every named chat template the checkpoint ships ("default" for the unnamed one)."""
        cached = self.__dict__.get("_oasr_chat_templates")
        if cached is None:
            parent = self.__dict__.get("_oasr_specials_of")
            cached = parent.chat_templates if parent is not None else MappingProxyType(dict(self._chat_templates()))
            self.__dict__["_oasr_chat_templates"] = cached
        return cached

    def _chat_templates(self) -> dict[str, str]:
        return {}

    def _template_variables(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, token_id in self.special_tokens.as_dict().items():
            if token_id is not None:
                try:
                    out[name.replace("_id", "_token")] = self.id_to_piece(token_id)
                except PiecesNotSupportedError:
                    break
        return out

    def apply_chat_template(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool = False,
        tokenize: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        chat_template: str | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> str | list[int]:
        """Render `messages` with the checkpoint's chat template exactly as transformers'
        apply_chat_template does (same jinja2 sandbox and settings; needs the `chat` extra).
        `chat_template` picks a named template or gives one (a jinja source, or a NeMo-style
        {"roles": ..., "prefix": ...} dict); `kwargs` reach the template as variables.
        tokenize=True returns the ids, special-token text matched as one id."""
        from .chat import apply_chat_template

        return apply_chat_template(  # type: ignore[no-any-return]
            self,
            messages,
            add_generation_prompt=add_generation_prompt,
            tokenize=tokenize,
            tools=tools,
            chat_template=chat_template,
            **kwargs,
        )

    def encode_with_special_text(
        self, text: str, plain: Callable[[str], Sequence[int]], split_special_tokens: bool = False
    ) -> list[int]:
        """For kinds whose backend encodes plain text only: `text` cut at the spelling of
        every special id (longest first), each stretch between encoded by `plain(str)`, each
        special token its one id. With split_special_tokens, `plain(text)` alone."""
        if not isinstance(text, str):
            raise EncodeError(f"encode takes a str, got {type(text).__name__}")
        if split_special_tokens:
            return list(plain(text))
        table = self.__dict__.get("_oasr_special_text")
        if table is None:
            table = {}
            for token_id in sorted(self.special_ids, reverse=True):  # the lowest id wins a spelling
                try:
                    piece = self.id_to_piece(token_id)
                except PiecesNotSupportedError:
                    break
                if piece:
                    table[piece] = token_id
            self.__dict__["_oasr_special_text"] = table
        ids: list[int] = []
        for part in split_on_special_text(text, table):
            if isinstance(part, int):
                ids.append(part)
            else:
                ids.extend(plain(part))
        return ids

    def add_bos_eos(self, ids: list[int]) -> list[int]:
        """`ids` with bos in front / eos at the end where special_tokens.add_bos / add_eos say."""
        specials = self.special_tokens
        if specials.add_bos and specials.bos_id is not None:
            ids = [specials.bos_id, *ids]
        if specials.add_eos and specials.eos_id is not None:
            ids = [*ids, specials.eos_id]
        return ids

    # -- helpers kinds share ----------------------------------------------------------------

    def check_ids(self, ids: Sequence[int]) -> list[int]:
        """`ids` as a list of ints in range; InvalidIdError naming the first bad one."""
        return check_ids(ids, self.vocab_size)

    def settled_length(self, ids: list[int], text: str) -> int:
        """How much of `text` (the decode of `ids`) no continuation can change. The default
        says all of it: right for kinds whose rendering only ever appends. Kinds that may
        rewrite the end of their text override this (or decode_incremental)."""
        return len(text)

    # -- streaming ---------------------------------------------------------------------------

    def decode_incremental(self, new_ids: Sequence[int], state: dict[str, Any], final: bool = False) -> str:
        """Feed `new_ids` to the stream whose state is `state` (a dict the caller owns, {} at
        the start) and return the text that is now settled. state["text"] is the decode of all
        ids so far. final=True flushes what was held back and closes the stream.
        A failed call leaves `state` as it was."""
        new = self.check_ids(new_ids)
        tag = self._stream_tag()
        check_owner(state, tag)
        closed = state.get("_closed", False)
        old_ids = state.get("ids", [])
        old_text = state.get("text", "")
        tail = state.get("_tail", 0)
        if (
            type(closed) is not bool
            or type(old_ids) is not list
            or type(old_text) is not str
            or type(tail) is not int
            or not 0 <= tail <= len(old_text)
            or ("_tok" in state and "ids" not in state)
        ):
            raise StreamStateError(f"this stream state is not a {type(self).__name__} stream state; start from {{}}")
        old_ids = self.check_ids(old_ids)
        # The default keeps every id (it is the quadratic reference, not the fast path), so the
        # whole state can be checked: its text must be the decode of its ids.
        if "text" in state and old_text != self.decode(old_ids):
            raise StreamStateError("this stream state's text is not the decode of its ids; start from {}")
        if closed:
            if new:
                raise stream_closed_error()
            return ""
        ids = old_ids + new if new else old_ids
        text = self.decode(ids) if (new or "text" not in state) else old_text
        emitted = len(old_text) - tail
        if text[:emitted] != old_text[:emitted]:
            raise StreamStateError(
                f"{type(self).__name__}.settled_length let out text that a later token changed; "
                "this is a bug in the kind"
            )
        settled = len(text) if final else max(emitted, min(len(text), self.settled_length(ids, text)))
        delta = text[emitted:settled]
        commit_text(state, delta, text[settled:], tag)
        state["ids"] = ids
        state["_closed"] = bool(final)
        return delta

    if TYPE_CHECKING:
        # Without `times` a pair, with them a triple: the overloads tell a type checker which.
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            times: None = None,
        ) -> tuple[str, str]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            *,
            times: Sequence[float],
        ) -> tuple[str, str, list[Word]]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool,
            agreement: int,
            times: Sequence[float],
        ) -> tuple[str, str, list[Word]]: ...
        @overload
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            times: Sequence[float] | None = None,
        ) -> tuple[str, str] | tuple[str, str, list[Word]]: ...
        def decode_hypothesis(
            self,
            hypothesis_ids: Sequence[int],
            state: dict[str, Any],
            final: bool = False,
            agreement: int = 2,
            times: Sequence[float] | None = None,
        ) -> tuple[str, str] | tuple[str, str, list[Word]]:
            """Stream a hypothesis that the recogniser may rewrite: give its whole current best
            hypothesis each call; get `(committed_delta, partial)`. Committed text is never
            retracted and grows by whole words once the last `agreement` hypotheses agree on their
            ids; `partial` is the rest of this hypothesis's transcript. state["committed"] is all
            committed text; final=True commits everything. With `times` (a start per hypothesis
            id) the committed Words come third. docs/decoding.md § Revisions."""
            return _decode_hypothesis(self, hypothesis_ids, state, final, agreement, times)
    else:
        # The compiled function is the method itself (it binds as one): a Python frame that
        # only passed the arguments on cost a twentieth of a call.
        decode_hypothesis = _decode_hypothesis

    def _stream_tag(self) -> int:
        """What this tokenizer records in its stream states (see _textbuf.h): a fingerprint of
        its kind, options and file contents (not their paths), so an equal tokenizer rebuilt
        from the same files anywhere (a worker's copy) continues a stream and any other refuses
        it. Without a readable spec, this instance alone."""
        tag = self.__dict__.get("_oasr_stream_tag")
        if tag is None:
            described = None
            if self.spec is not None:
                from .pickling import content_identity

                try:
                    described = content_identity(self.spec)
                except (AssetError, OSError, ValueError):  # files gone or too big: this instance alone
                    described = None
            if described is None:
                described = f"instance {id(self)} {os.getpid()} {time.monotonic_ns()}"
            tag = table_tag([type(self).__module__, type(self).__qualname__, described])
            self.__dict__["_oasr_stream_tag"] = tag
        return tag

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        """One string per id, concatenating to decode(ids): what each token settled when
        streamed one at a time. Text held back at the end goes on the last non-special token."""
        ids = self.check_ids(ids)
        state: dict[str, Any] = {}
        pieces = [self.decode_incremental([i], state) for i in ids]
        rest = self.decode_incremental([], state, final=True)
        if rest:
            special = self.special_ids
            last = max((k for k, i in enumerate(ids) if i not in special), default=len(ids) - 1)
            pieces[last] += rest
        return pieces

    # -- convenience -------------------------------------------------------------------------

    def decode_batch(
        self, batch: Sequence[Sequence[int]] | Any, lengths: Sequence[int] | None = None, pad_id: int | None = None
    ) -> list[str]:
        """decode() for each hypothesis of an n-best list, or each row of a padded 2-D batch:
        `lengths` cuts row i to its first lengths[i] ids, then `pad_id` strips each row's
        trailing run of that id (see docs/decoding.md § Id inputs)."""
        return [self.decode(ids) for ids in batch_rows(batch, lengths, pad_id)]

    def word_timings(self, ids: Sequence[int], starts: Times, ends: Times | None = None) -> Words:
        """Timed words cut out of the transcript; see docs/decoding.md § Word timings."""
        from .words import group_words

        return group_words(self.token_pieces(ids), starts, ends)

    # -- pickling: by value (the files travel) or by spec (paths only); oasr_tok/pickling.py ---

    #: "value": a pickle carries the spec's files (for workers without the driver's file
    #: system); "spec": only the spec's paths (a shared file system). docs/scale.md.
    pickle_mode: str = "value"

    # A tokenizer does not change once built (its tables are read-only), so a copy is the
    # tokenizer itself, as for a str. Without these, copy.copy and deepcopy of anything holding
    # one went through __reduce__: every file read and hashed, and another tokenizer built (or
    # the one the unpickling cache holds handed out, the same to every copy).
    def __copy__(self) -> Tokenizer:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokenizer:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        parent = self.__dict__.get("_oasr_specials_of")
        if parent is not None:  # a with_specials() view: rebuilt as the view of its tokenizer
            return (_specials_view_of, (parent,))
        if self.spec is None:
            raise TypeError(f"{type(self).__name__} was not built from a TokenizerSpec and cannot be pickled")
        from .pickling import MODES, reduce_by_value
        from .registry import build_tokenizer

        if self.pickle_mode not in MODES:
            raise TypeError(f"pickle_mode must be one of {MODES}, got {self.pickle_mode!r}")
        if self.pickle_mode == "spec":
            return (build_tokenizer, (self.spec,))
        return reduce_by_value(self)

    def __repr__(self) -> str:
        kind = self.spec.kind if self.spec is not None else type(self).__name__
        return f"<{type(self).__name__} kind={kind!r} vocab_size={self.vocab_size}>"


def _specials_view_of(tokenizer: Tokenizer) -> Tokenizer:
    return tokenizer.with_specials()
