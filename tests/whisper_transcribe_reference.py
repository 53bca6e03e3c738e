"""openai-whisper's own rules for timestamp tokens, for the tests: `get_encoding` and
`Tokenizer.decode` / `decode_with_timestamps` of whisper/tokenizer.py, and the segment
splitting of `transcribe` in whisper/transcribe.py (openai-whisper 20250625, MIT License,
Copyright (c) 2022 OpenAI). The torch tensors of transcribe are plain lists here; every other
line is kept, in order, with the original's names, so a reviewer can hold them side by side.
Needs `tiktoken` and the multilingual.tiktoken file (../shared/fixtures/whisper-tiktoken/).
"""

# ruff: noqa
from __future__ import annotations

import base64

import tiktoken

#: LANGUAGES.keys() of whisper/tokenizer.py, in its order.
LANGUAGE_CODES = (
    "en",
    "zh",
    "de",
    "es",
    "ru",
    "ko",
    "fr",
    "ja",
    "pt",
    "tr",
    "pl",
    "ca",
    "nl",
    "ar",
    "sv",
    "it",
    "id",
    "hi",
    "fi",
    "vi",
    "he",
    "uk",
    "el",
    "ms",
    "cs",
    "ro",
    "da",
    "hu",
    "ta",
    "no",
    "th",
    "ur",
    "hr",
    "bg",
    "lt",
    "la",
    "mi",
    "ml",
    "cy",
    "sk",
    "te",
    "fa",
    "lv",
    "bn",
    "sr",
    "az",
    "sl",
    "kn",
    "et",
    "mk",
    "br",
    "eu",
    "is",
    "hy",
    "ne",
    "mn",
    "bs",
    "kk",
    "sq",
    "sw",
    "gl",
    "mr",
    "pa",
    "si",
    "km",
    "sn",
    "yo",
    "so",
    "af",
    "oc",
    "ka",
    "be",
    "tg",
    "sd",
    "gu",
    "am",
    "yi",
    "lo",
    "uz",
    "fo",
    "ht",
    "ps",
    "tk",
    "nn",
    "mt",
    "sa",
    "lb",
    "my",
    "bo",
    "tl",
    "mg",
    "as",
    "tt",
    "haw",
    "ln",
    "ha",
    "ba",
    "jw",
    "su",
    "yue",
)


def get_encoding(vocab_path: str, num_languages: int = 99) -> tiktoken.Encoding:
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in open(vocab_path) if line)}
    n_vocab = len(ranks)
    special_tokens = {}

    specials = [
        "<|endoftext|>",
        "<|startoftranscript|>",
        *[f"<|{lang}|>" for lang in list(LANGUAGE_CODES)[:num_languages]],
        "<|translate|>",
        "<|transcribe|>",
        "<|startoflm|>",
        "<|startofprev|>",
        "<|nospeech|>",
        "<|notimestamps|>",
        *[f"<|{i * 0.02:.2f}|>" for i in range(1501)],
    ]

    for token in specials:
        special_tokens[token] = n_vocab
        n_vocab += 1

    return tiktoken.Encoding(
        name="multilingual.tiktoken",
        explicit_n_vocab=n_vocab,
        pat_str=r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
        mergeable_ranks=ranks,
        special_tokens=special_tokens,
    )


class Tokenizer:
    """The two decode methods of whisper.tokenizer.Tokenizer, over the encoding above."""

    def __init__(self, encoding: tiktoken.Encoding):
        self.encoding = encoding
        self.eot = encoding.eot_token
        self.timestamp_begin = encoding._special_tokens["<|0.00|>"]

    def decode(self, token_ids: list[int], **kwargs) -> str:
        token_ids = [t for t in token_ids if t < self.timestamp_begin]
        return self.encoding.decode(token_ids, **kwargs)

    def decode_with_timestamps(self, token_ids: list[int], **kwargs) -> str:
        return self.encoding.decode(token_ids, **kwargs)


def split_segments(tokenizer: Tokenizer, tokens: list[int], time_offset: float, segment_duration: float) -> list[dict]:
    """The segments transcribe makes from one window's sampled tokens (result.tokens: no sot
    sequence, no eot), with its time_precision of 0.02 s."""
    time_precision = 2 * 160 / 16000  # input_stride * HOP_LENGTH / SAMPLE_RATE
    current_segments: list[dict] = []

    def new_segment(*, start: float, end: float, tokens: list[int]):
        text_tokens = [token for token in tokens if token < tokenizer.eot]
        return {"start": start, "end": end, "text": tokenizer.decode(text_tokens), "tokens": tokens}

    timestamp_tokens = [t >= tokenizer.timestamp_begin for t in tokens]
    single_timestamp_ending = timestamp_tokens[-2:] == [False, True]

    consecutive = [i + 1 for i in range(len(tokens) - 1) if timestamp_tokens[i] and timestamp_tokens[i + 1]]
    if len(consecutive) > 0:
        # if the output contains two consecutive timestamp tokens
        slices = list(consecutive)
        if single_timestamp_ending:
            slices.append(len(tokens))

        last_slice = 0
        for current_slice in slices:
            sliced_tokens = tokens[last_slice:current_slice]
            start_timestamp_pos = sliced_tokens[0] - tokenizer.timestamp_begin
            end_timestamp_pos = sliced_tokens[-1] - tokenizer.timestamp_begin
            current_segments.append(
                new_segment(
                    start=time_offset + start_timestamp_pos * time_precision,
                    end=time_offset + end_timestamp_pos * time_precision,
                    tokens=sliced_tokens,
                )
            )
            last_slice = current_slice
    else:
        duration = segment_duration
        timestamps = [t for t, is_ts in zip(tokens, timestamp_tokens) if is_ts]
        if len(timestamps) > 0 and timestamps[-1] != tokenizer.timestamp_begin:
            # no consecutive timestamps but it has a timestamp; use the last one.
            last_timestamp_pos = timestamps[-1] - tokenizer.timestamp_begin
            duration = last_timestamp_pos * time_precision

        current_segments.append(new_segment(start=time_offset, end=time_offset + duration, tokens=tokens))
    return current_segments


# -- word tokens: Tokenizer.split_to_word_tokens and its two helpers (whisper/tokenizer.py) and
# merge_punctuations with its WordTiming record (whisper/timing.py), copied verbatim.

import string
from dataclasses import dataclass
from typing import List


class WordTokenizer(Tokenizer):
    """Tokenizer with a language, as whisper.tokenizer.Tokenizer carries one."""

    def __init__(self, encoding: tiktoken.Encoding, language: str | None = None):
        super().__init__(encoding)
        self.language = language

    def split_to_word_tokens(self, tokens: List[int]):
        if self.language in {"zh", "ja", "th", "lo", "my", "yue"}:
            # These languages don't typically use spaces, so it is difficult to split words
            # without morpheme analysis. Here, we instead split words at any
            # position where the tokens are decoded as valid unicode points
            return self.split_tokens_on_unicode(tokens)

        return self.split_tokens_on_spaces(tokens)

    def split_tokens_on_unicode(self, tokens: List[int]):
        decoded_full = self.decode_with_timestamps(tokens)
        replacement_char = "\ufffd"

        words = []
        word_tokens = []
        current_tokens = []
        unicode_offset = 0

        for token in tokens:
            current_tokens.append(token)
            decoded = self.decode_with_timestamps(current_tokens)

            if (
                replacement_char not in decoded
                or decoded_full[unicode_offset + decoded.index(replacement_char)] == replacement_char
            ):
                words.append(decoded)
                word_tokens.append(current_tokens)
                current_tokens = []
                unicode_offset += len(decoded)

        return words, word_tokens

    def split_tokens_on_spaces(self, tokens: List[int]):
        subwords, subword_tokens_list = self.split_tokens_on_unicode(tokens)
        words = []
        word_tokens = []

        for subword, subword_tokens in zip(subwords, subword_tokens_list):
            special = subword_tokens[0] >= self.eot
            with_space = subword.startswith(" ")
            punctuation = subword.strip() in string.punctuation
            if special or with_space or punctuation or len(words) == 0:
                words.append(subword)
                word_tokens.append(subword_tokens)
            else:
                words[-1] = words[-1] + subword
                word_tokens[-1].extend(subword_tokens)

        return words, word_tokens


@dataclass
class WordTiming:
    word: str
    tokens: List[int]
    start: float
    end: float
    probability: float


def merge_punctuations(alignment: List[WordTiming], prepended: str, appended: str):
    # merge prepended punctuations
    i = len(alignment) - 2
    j = len(alignment) - 1
    while i >= 0:
        previous = alignment[i]
        following = alignment[j]
        if previous.word.startswith(" ") and previous.word.strip() in prepended:
            # prepend it to the following word
            following.word = previous.word + following.word
            following.tokens = previous.tokens + following.tokens
            previous.word = ""
            previous.tokens = []
        else:
            j = i
        i -= 1

    # merge appended punctuations
    i = 0
    j = 1
    while j < len(alignment):
        previous = alignment[i]
        following = alignment[j]
        if not previous.word.endswith(" ") and following.word in appended:
            # append it to the previous word
            previous.word = previous.word + following.word
            previous.tokens = previous.tokens + following.tokens
            following.word = ""
            following.tokens = []
        else:
            i = j
        j += 1
