"""aggregate: NeMo's AggregateTokenizer (and its Canary face, CanaryTokenizer): an ordered list of
per-language SentencePiece models sharing one id space.

Files: one SentencePiece model per language, the role being the language code (``en``,
``es``, ``spl_tokens`` for Canary's special-token model); they may be members of a `.nemo`
archive (``model.nemo::<32 hex>_tokenizer.model``, oasr_tok/files/archive.py). Options:
``langs`` (the language order: required, it fixes the ids), ``special_lang`` (the
sub-vocabulary of control tokens; default ``spl_tokens`` when present), and for Canary's
timestamps ``window_stride`` (seconds per feature frame) and ``subsampling_factor``.

Ids: the global id of a piece is its local SentencePiece id plus the offset of its language
(the vocabulary sizes of the languages before it, in ``langs`` order). NeMo's `ids_to_text`
turns every id into its sub-model's *piece* (``id_to_piece``), joins them and replaces ``▁``
with a space. Its quirks, reproduced: the leading space of the first word is kept (``" hello
world"``), a `<0xNN>` byte piece stays the literal six characters, a control piece of a
language model (``<unk>``, ``<s>``) appears as its literal spelling. `decode` is that, once the
special ids are dropped: the whole special sub-vocabulary (Canary's ``<|…|>`` tokens,
``<pad>``, and the special model's own pieces). Rendering is piece-local, so streaming and
token pieces run on the compiled PieceTable at constant cost.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._common import reject_unknown_options
from .api import (
    FLAG_SKIP,
    EncodeError,
    KindRecord,
    PieceTable,
    SpecError,
    TableMethods,
    Tokenizer,
    TokenizerSpec,
)
from .sentencepiece import load_processor

if TYPE_CHECKING:
    from .api import Word

__all__ = ["AggregateTokenizer", "CANARY_SPECIAL_LANG"]


_OPTIONS = ["langs", "special_lang", "window_stride", "subsampling_factor"]
CANARY_SPECIAL_LANG = "spl_tokens"
_TIMESTAMP = re.compile(r"<\|(\d+)\|>")
_TASKS = {
    "asr": "<|transcribe|>",
    "transcribe": "<|transcribe|>",
    "ast": "<|translate|>",
    "translate": "<|translate|>",
    "s2t_translation": "<|translate|>",
}


class AggregateTokenizer(TableMethods, Tokenizer):
    """Per-language SentencePiece models in one id space (NeMo AggregateTokenizer /
    CanaryTokenizer). encode(text) needs a language: use encode_language(text, lang)."""

    supports_encode = False

    def __init__(
        self,
        models: dict[str, str],
        langs: Sequence[str],
        special_lang: str | None,
        window_stride: float | None = None,
        subsampling_factor: int | None = None,
    ) -> None:
        self._processors = {lang: load_processor(models[lang]) for lang in langs}
        self.langs = list(langs)
        self.special_lang = special_lang
        self.offsets: dict[str, int] = {}
        pieces: list[str] = []
        owner: list[int] = []
        for index, lang in enumerate(self.langs):
            self.offsets[lang] = len(pieces)
            processor = self._processors[lang]
            pieces.extend(processor.id_to_piece(list(range(processor.get_piece_size()))))
            owner.extend([index] * processor.get_piece_size())
        self._pieces = pieces
        self._owner = owner
        size = len(pieces)
        special: set[int] = set()
        if special_lang is not None:
            start = self.offsets[special_lang]
            special = set(range(start, start + self._processors[special_lang].get_piece_size()))
        self._special = frozenset(special)
        flags = bytearray(size)
        rendered = []
        for i, piece in enumerate(pieces):
            if i in self._special:
                flags[i] = FLAG_SKIP
                rendered.append("")
            else:
                rendered.append(piece.replace("\u2581", " "))
        self._rendered = rendered
        self._table = PieceTable(rendered, flags=bytes(flags))
        self._size = size
        self.window_stride = window_stride
        self.subsampling_factor = subsampling_factor
        # Canary's special tokens: in the special model, `<|…|>` pieces and `<pad>`, as
        # CanaryTokenizer collects them.
        self.canary_tokens: dict[str, int] = {}
        if special_lang is not None:
            start = self.offsets[special_lang]
            for local, piece in enumerate(
                self._processors[special_lang].id_to_piece(list(range(self._processors[special_lang].get_piece_size())))
            ):
                if (piece.startswith("<|") and piece.endswith("|>")) or piece == "<pad>":
                    self.canary_tokens[piece] = start + local
        self._timestamp_frames = {
            i: int(m.group(1)) for p, i in self.canary_tokens.items() if (m := _TIMESTAMP.fullmatch(p))
        }

    @classmethod
    def from_spec(cls, spec: TokenizerSpec) -> AggregateTokenizer:
        reject_unknown_options(spec.options, _OPTIONS, "aggregate")
        langs = spec.options.get("langs")
        if not isinstance(langs, list) or not langs or not all(isinstance(x, str) and x for x in langs):
            raise SpecError(
                "aggregate: option langs must list the language codes in id order, e.g. "
                "['spl_tokens', 'en', 'es'] (NeMo's config order)"
            )
        if len(set(langs)) != len(langs):
            raise SpecError(f"aggregate: option langs names a language twice: {langs}")
        missing = [x for x in langs if x not in spec.files]
        if missing:
            raise SpecError(f"aggregate: no model file for language(s) {missing}; files has {sorted(spec.files)}")
        extra = sorted(set(spec.files) - set(langs))
        if extra:
            raise SpecError(f"aggregate: files {extra} are not in option langs {langs}")
        special = spec.options.get("special_lang", CANARY_SPECIAL_LANG if CANARY_SPECIAL_LANG in langs else None)
        if special is not None and special not in langs:
            raise SpecError(f"aggregate: special_lang {special!r} is not one of langs {langs}")
        stride = spec.options.get("window_stride")
        factor = spec.options.get("subsampling_factor")
        if stride is not None and (isinstance(stride, bool) or not isinstance(stride, (int, float)) or stride <= 0):
            raise SpecError(f"aggregate: window_stride must be a positive number of seconds, got {stride!r}")
        if factor is not None and (isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0):
            raise SpecError(f"aggregate: subsampling_factor must be a positive integer, got {factor!r}")
        tokenizer = cls(dict(spec.files), langs, special, stride, factor)
        tokenizer.spec = spec
        return tokenizer

    # -- the contract --------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def special_ids(self) -> frozenset[int]:
        return self._special

    def id_to_piece(self, token_id: int) -> str:
        return self._pieces[self.check_ids([token_id])[0]]

    def decode(self, ids: Sequence[int]) -> str:
        rendered, special = self._rendered, self._special
        return "".join([rendered[i] for i in self.check_ids(ids) if i not in special])

    # -- languages -----------------------------------------------------------------------

    def language_of(self, token_id: int) -> str:
        """The language (sub-tokenizer) an id belongs to: NeMo's langs_by_token_id."""
        return self.langs[self._owner[self.check_ids([token_id])[0]]]

    def encode_language(self, text: str, lang: str) -> list[int]:
        """NeMo's text_to_ids(text, lang_id): the language's SentencePiece ids, offset. For
        Canary's special-token model (``spl_tokens``) it is CanaryTokenizer's: the text is a run
        of special tokens (``<|startoftranscript|><|en|>...``), each its one id, with no "▁"
        before it (an EncodeError names a piece that is not one)."""
        if not isinstance(text, str):
            raise EncodeError(f"encode takes a str, got {type(text).__name__}")
        if lang not in self._processors:
            raise EncodeError(f"aggregate: no language {lang!r}; languages are {self.langs}")
        if lang == CANARY_SPECIAL_LANG and self.canary_tokens:
            return self._special_prompt_ids(text)
        offset = self.offsets[lang]
        return [offset + i for i in self._processors[lang].encode(text)]

    # -- Canary --------------------------------------------------------------------------

    def _special_prompt_ids(self, text: str) -> list[int]:
        # CanaryTokenizer._tokenize_special_prompt: cut after each ">", every part a special token
        ids: list[int] = []
        rest = text
        while rest:
            end = rest.find(">")
            if end < 0:
                raise EncodeError(f"{rest!r} is not a Canary special token (spl_tokens text is a run of <|...|>)")
            ids.append(self._canary(rest[: end + 1]))
            rest = rest[end + 1 :]
        return ids

    def _canary(self, token: str) -> int:
        try:
            return self.canary_tokens[token]
        except KeyError:
            raise EncodeError(
                f"the special-token model has no {token} (Canary special tokens: "
                f"{', '.join(list(self.canary_tokens)[:20])} ...)"
            ) from None

    def canary_prompt(
        self,
        source_lang: str,
        target_lang: str | None = None,
        *,
        task: str | None = None,
        pnc: bool = True,
        version: int = 2,
        itn: bool = False,
        timestamps: bool = False,
        diarize: bool = False,
        emotion: str = "<|emo:undefined|>",
    ) -> list[int]:
        """The decoder prompt of a Canary request, as ids.

        version 1 (canary-1b): ``<|startoftranscript|><|src|><|transcribe|/|translate|><|tgt|><|pnc|/|nopnc|>``
        (task from `task`, or transcribe when source == target, translate otherwise);
        version 2 (canary-1b-flash, canary-1b-v2, canary-180m-flash; NeMo's Canary2PromptFormatter):
        ``<|startofcontext|><|startoftranscript|><emotion><|src|><|tgt|><|pnc|/|nopnc|><|itn|/|noitn|>
        <|timestamp|/|notimestamp|><|diarize|/|nodiarize|>`` with an empty decoder context."""
        target_lang = source_lang if target_lang is None else target_lang
        src, tgt = self._canary(f"<|{source_lang}|>"), self._canary(f"<|{target_lang}|>")
        flag = lambda on, name: self._canary(f"<|{name}|>" if on else f"<|no{name}|>")
        if version == 1:
            chosen = task or ("asr" if source_lang == target_lang else "ast")
            if chosen not in _TASKS:
                raise EncodeError(f"unknown Canary task {chosen!r}; use one of {sorted(_TASKS)}")
            return [self._canary("<|startoftranscript|>"), src, self._canary(_TASKS[chosen]), tgt, flag(pnc, "pnc")]
        if version != 2:
            raise EncodeError(f"unknown Canary prompt version {version!r} (1 or 2)")
        return [
            self._canary("<|startofcontext|>"),
            self._canary("<|startoftranscript|>"),
            self._canary(emotion),
            src,
            tgt,
            flag(pnc, "pnc"),
            flag(itn, "itn"),
            flag(timestamps, "timestamp"),
            flag(diarize, "diarize"),
        ]

    def timestamp_frame(self, token_id: int) -> int | None:
        """N for a Canary timestamp token `<|N|>`, else None."""
        return self._timestamp_frames.get(token_id)

    def timestamp_words(self, ids: Sequence[int]) -> list[Word]:
        """Words of a Canary hypothesis with timestamps (``<|N|>word<|M|>``): each word is timed
        from the timestamp before it (start) to the one after it (end), frame × window_stride ×
        subsampling_factor seconds. A word without a timestamp on one side takes the other's
        time. Word text is a substring of decode(ids)."""

        if self.window_stride is None or self.subsampling_factor is None:
            raise SpecError(
                "aggregate: timestamp_words needs the options window_stride and subsampling_factor "
                "(from the checkpoint's preprocessor and encoder config)"
            )
        ids = self.check_ids(ids)
        scale = self.window_stride * self.subsampling_factor
        pieces = self.token_pieces(ids)
        text = "".join(pieces)
        words: list[Word] = []
        pos = 0
        last_stamp: int | None = None
        open_word: list[Any] | None = None  # [start char, first token, last token, start frame]
        for k, (token_id, piece) in enumerate(zip(ids, pieces)):
            frame = self._timestamp_frames.get(token_id)
            if frame is not None:
                if open_word is not None:
                    words.append(self._word(text, open_word, pos, frame, scale))
                    open_word = None
                last_stamp = frame
                continue
            for j, char in enumerate(piece):
                if char.isspace():
                    if open_word is not None:
                        words.append(self._word(text, open_word, pos + j, last_stamp, scale))
                        open_word = None
                elif open_word is None:
                    open_word = [pos + j, k, k, last_stamp]
                else:
                    open_word[2] = k
            pos += len(piece)
        if open_word is not None:
            words.append(self._word(text, open_word, pos, last_stamp, scale))
        return words

    @staticmethod
    def _word(text: str, open_word: list[Any], end_char: int, end_frame: int | None, scale: float) -> Word:
        from .api import Word

        start_frame = open_word[3] if open_word[3] is not None else end_frame
        end = end_frame if end_frame is not None else start_frame
        start_s = None if start_frame is None else start_frame * scale
        end_s = None if end is None else end * scale
        # A hypothesis without any timestamp token leaves its words untimed (None), outside
        # Word's declared float times.
        return Word(text[open_word[0] : end_char], start_s, end_s, open_word[1], open_word[2])  # type: ignore[arg-type]


# This kind's record: the registry reads it from the kinds' index without importing this module
# (oasr_tok/core/registry.py). Its precedence in the order of evidence: no detector of its own:
# Canary's per-language models come from a .nemo archive or a spec file.
KIND = KindRecord("aggregate", AggregateTokenizer.from_spec, backend="sentencepiece", extra="sentencepiece")
