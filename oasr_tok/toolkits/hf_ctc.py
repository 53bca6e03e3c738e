"""transformers' Wav2Vec2CTCTokenizer decode face over a wav2vec2 tokenizer: ``decode`` and
``batch_decode`` with their options (grouping of repeated tokens, ``skip_special_tokens``,
``spaces_between_special_tokens``, ``output_char_offsets``, ``output_word_offsets``,
``clean_up_tokenization_spaces``), ``convert_ids_to_tokens`` and ``convert_tokens_to_string``,
so code written against transformers gets its results from the files alone (no transformers,
no torch). tests/peers/test_transformers_wav2vec2.py replays transformers' own tests on it.

    >>> from oasr_tok.toolkits.hf_ctc import Wav2Vec2CTCDecoder
    >>> ctc = Wav2Vec2CTCDecoder(oasr_tok.load("wav2vec2-base-960h/"))
    >>> ctc.decode(frame_ids)                        # "HELLO": repeats grouped, <pad> dropped
    >>> ctc.decode(frame_ids, output_word_offsets=True).word_offsets

Two choices are the user's (docs/kinds/wav2vec2.md § transformers' face):

* ``unknown_ids``: an id past every table raises InvalidIdError (``"error"``, the default,
  as everywhere in oasr_tok), or renders as the unknown token (``"unk"``, as transformers does).
* ``drop_pad_before_grouping``: transformers' ``skip_special_tokens=True`` drops the CTC blank
  ``<pad>`` with the other special tokens *before* grouping repeats, so ``H E L <pad> L O``
  reads ``HELO``, since the blank is what separates a doubled letter. This class exists to give
  transformers' text, so that is the default; ``drop_pad_before_grouping=False`` drops the
  blank after grouping whatever ``skip_special_tokens`` says (``HELLO``, the CTC-correct
  reading: docs/kinds/wav2vec2.md says when to want it).

The rest is transformers' rule, in its order: ids become vocabulary strings (the tokens'
own case), special tokens other than the word delimiter are dropped when asked, repeats are
grouped, the blank is dropped, the delimiter becomes ``replace_word_delimiter_char``, the
strings are joined (by a space with ``spaces_between_special_tokens``) and stripped, then
lower-cased (``do_lower_case``) and cleaned up. Offsets count the tokens given (frames, for a
recogniser's greedy output) and keep the vocabulary's case.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any

from .._engine.ids import check_ids
from ..core.tokenizer import Tokenizer
from ..errors import SpecError, TokenizerError

if TYPE_CHECKING:
    from ..kinds.wav2vec2 import Wav2Vec2Tokenizer

__all__ = ["CTCDecoderOutput", "Wav2Vec2CTCDecoder", "word_offsets_from_char_offsets"]

_UNKNOWN_IDS = ("error", "unk")


@dataclass
class CTCDecoderOutput:
    """What decode and batch_decode give with offsets asked: transformers'
    Wav2Vec2CTCTokenizerOutput (`text`, `char_offsets`, `word_offsets`; a field not asked for
    is None and not among the keys). Offsets are dicts: {"char" | "word", "start_offset",
    "end_offset"}."""

    text: Any
    char_offsets: Any = None
    word_offsets: Any = None

    def keys(self) -> list[str]:
        return [k for k in ("text", "char_offsets", "word_offsets") if getattr(self, k) is not None]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


def word_offsets_from_char_offsets(
    char_offsets: Sequence[dict[str, Any]], delimiter: str = " "
) -> list[dict[str, Any]]:
    """Words from character offsets, as transformers' _get_word_offsets: a word is a run of
    characters other than `delimiter`, from its first character's start to its last's end
    (runs of delimiters, and delimiters at either end, make no word)."""
    words: list[dict[str, Any]] = []
    in_word = False
    word, start, end = "", 0, 0
    for offset in char_offsets:
        char = offset["char"]
        if char == delimiter:
            if in_word:
                words.append({"word": word, "start_offset": start, "end_offset": end})
            in_word = False
        elif in_word:
            word += char
            end = offset["end_offset"]
        else:
            word, start, end = char, offset["start_offset"], offset["end_offset"]
            in_word = True
    if in_word:
        words.append({"word": word, "start_offset": start, "end_offset": end})
    return words


class Wav2Vec2CTCDecoder:
    """transformers' Wav2Vec2CTCTokenizer decode methods over an oasr_tok wav2vec2 tokenizer."""

    def __init__(self, tokenizer: Tokenizer, *, unknown_ids: str = "error", drop_pad_before_grouping: bool = True):
        from ..kinds.wav2vec2 import Wav2Vec2Tokenizer

        if not isinstance(tokenizer, Wav2Vec2Tokenizer):
            raise SpecError(
                f"Wav2Vec2CTCDecoder wraps a wav2vec2 tokenizer (kind 'wav2vec2'), got {type(tokenizer).__name__}"
            )
        if unknown_ids not in _UNKNOWN_IDS:
            raise SpecError(f"unknown_ids must be one of {_UNKNOWN_IDS}, got {unknown_ids!r}")
        if type(drop_pad_before_grouping) is not bool:
            raise SpecError(f"drop_pad_before_grouping must be True or False, got {drop_pad_before_grouping!r}")
        self.tokenizer: Wav2Vec2Tokenizer = tokenizer
        self.unknown_ids = unknown_ids
        self.drop_pad_before_grouping = drop_pad_before_grouping
        settings = tokenizer.settings
        self.pad_token: str = settings["pad_token"]
        self.unk_token: str = settings["unk_token"]
        self.word_delimiter_token: str = settings["word_delimiter_token"]
        self.replace_word_delimiter_char: str = settings["replace_word_delimiter_char"]
        self.do_lower_case = bool(settings["do_lower_case"])
        self.clean_up_tokenization_spaces = bool(settings["clean_up_tokenization_spaces"])
        self._tokens = [tokenizer.id_to_piece(i) for i in range(tokenizer.vocab_size)]
        # The strings skip_special_tokens drops (the kind's special ids: bos, eos, unk, pad,
        # additional and added specials, never the word delimiter).
        self._special = frozenset(self._tokens[i] for i in tokenizer.special_ids) - {self.word_delimiter_token}

    def _id_of(self, token: str) -> int | None:
        return next((i for i, t in enumerate(self._tokens) if t == token), None)

    @property
    def pad_token_id(self) -> int | None:
        return self._id_of(self.pad_token)

    @property
    def unk_token_id(self) -> int | None:
        return self._id_of(self.unk_token)

    @property
    def word_delimiter_token_id(self) -> int | None:
        return self._id_of(self.word_delimiter_token)

    def convert_ids_to_tokens(self, ids: Any, skip_special_tokens: bool = False) -> Any:
        """Each id's vocabulary string (one id: one string). An id past every table: the
        unknown token with unknown_ids="unk", else InvalidIdError naming it."""
        if isinstance(ids, int) and not isinstance(ids, bool):
            return self.convert_ids_to_tokens([ids])[0]
        tokens = self._tokens
        size = len(tokens)
        if self.unknown_ids == "unk":
            # Integers of any size (a bool, float, str or None: NonIntegerIdError, a negative id:
            # InvalidIdError, as everywhere); past the tables, the unknown token.
            checked = check_ids(ids, sys.maxsize)
            out = [tokens[i] if i < size else self.unk_token for i in checked]
        else:
            out = [tokens[i] for i in self.tokenizer.check_ids(ids)]
        if skip_special_tokens:
            out = [t for t in out if t not in self._special]
        return out

    def convert_tokens_to_string(
        self,
        tokens: Sequence[str],
        group_tokens: bool = True,
        spaces_between_special_tokens: bool = False,
        output_char_offsets: bool = False,
        output_word_offsets: bool = False,
    ) -> dict[str, Any]:
        """transformers' convert_tokens_to_string: {"text", "char_offsets", "word_offsets"}."""
        if not tokens:  # (transformers: both offset lists, asked for or not)
            return {"text": "", "char_offsets": [], "word_offsets": []}
        if group_tokens:
            runs = [(token, sum(1 for _ in run)) for token, run in groupby(tokens)]
        else:
            runs = [(token, 1) for token in tokens]
        pad, delimiter, space = self.pad_token, self.word_delimiter_token, self.replace_word_delimiter_char
        chars = [space if token == delimiter else token for token, _ in runs if token != pad]
        char_offsets: list[dict[str, Any]] | None = None
        word_offsets: list[dict[str, Any]] | None = None
        if output_char_offsets or output_word_offsets:
            char_offsets = []
            end = 0
            for token, repeats in runs:
                start, end = end, end + repeats
                if token != pad:
                    char_offsets.append({"char": chars[len(char_offsets)], "start_offset": start, "end_offset": end})
            if output_word_offsets:
                word_offsets = word_offsets_from_char_offsets(char_offsets, space)
            if not output_char_offsets:
                char_offsets = None
        text = (" " if spaces_between_special_tokens else "").join(chars).strip()
        if self.do_lower_case:
            text = text.lower()
        return {"text": text, "char_offsets": char_offsets, "word_offsets": word_offsets}

    def decode(
        self,
        token_ids: Any,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        output_char_offsets: bool = False,
        output_word_offsets: bool = False,
        group_tokens: bool = True,
        spaces_between_special_tokens: bool = False,
    ) -> str | CTCDecoderOutput:
        """transformers' decode of CTC output (a recogniser's frame ids, or tokens with
        group_tokens=False): the text, or a CTCDecoderOutput when offsets are asked for."""
        tokens = self.convert_ids_to_tokens(token_ids)
        if skip_special_tokens:
            # The blank stays until repeats are grouped, unless transformers' order is asked for.
            keep = "" if self.drop_pad_before_grouping else self.pad_token
            tokens = [t for t in tokens if t not in self._special or t == keep]
        out = self.convert_tokens_to_string(
            tokens,
            group_tokens=group_tokens,
            spaces_between_special_tokens=spaces_between_special_tokens,
            output_char_offsets=output_char_offsets,
            output_word_offsets=output_word_offsets,
        )
        text: str = out["text"]
        cleanup = (
            self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None else clean_up_tokenization_spaces
        )
        if cleanup:
            from ..kinds.wav2vec2 import clean_up_tokenization

            text = clean_up_tokenization(text)
        if output_char_offsets or output_word_offsets:
            return CTCDecoderOutput(text, out["char_offsets"], out["word_offsets"])
        return text

    def batch_decode(
        self,
        sequences: Any,
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
        output_char_offsets: bool = False,
        output_word_offsets: bool = False,
        group_tokens: bool = True,
        spaces_between_special_tokens: bool = False,
    ) -> list[str] | CTCDecoderOutput:
        """decode of each sequence: a list of texts, or one CTCDecoderOutput of lists when
        offsets are asked for (transformers' shape)."""
        if isinstance(sequences, (str, bytes)):
            raise TokenizerError("batch_decode takes a list of id sequences (or a 2-D array), not a string")
        decoded = [
            self.decode(
                row,
                skip_special_tokens=skip_special_tokens,
                clean_up_tokenization_spaces=clean_up_tokenization_spaces,
                output_char_offsets=output_char_offsets,
                output_word_offsets=output_word_offsets,
                group_tokens=group_tokens,
                spaces_between_special_tokens=spaces_between_special_tokens,
            )
            for row in sequences
        ]
        if output_char_offsets or output_word_offsets:
            outputs = [d for d in decoded if isinstance(d, CTCDecoderOutput)]
            # The columns asked for (transformers takes the first row's keys: an empty first row
            # adds a column not asked for, filled with None for the other rows).
            keys = ["text"] + ["char_offsets"] * output_char_offsets + ["word_offsets"] * output_word_offsets
            return CTCDecoderOutput(**{k: [getattr(d, k) for d in outputs] for k in keys})
        return [d for d in decoded if isinstance(d, str)]
