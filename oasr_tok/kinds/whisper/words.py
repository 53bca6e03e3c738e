"""openai-whisper's word splitting, for the word timings it computes (`add_word_timestamps`):
`split_to_word_tokens` (its Tokenizer's) and `word_tokens` (the words it times, after its
merge_punctuations). WhisperTokenizer's methods of the same names call these."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Protocol

#: Languages openai-whisper splits into words at character boundaries (no spaces between words).
_NO_SPACE_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "my", "yue"})
_PUNCTUATION = string.punctuation
#: openai-whisper's transcribe defaults for merge_punctuations.
PREPEND_PUNCTUATIONS = "\"'“¿([{-"
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"


class WordSplitter(Protocol):
    """What the splitting reads of a Whisper tokenizer."""

    @property
    def eot(self) -> int: ...

    def check_ids(self, ids: Sequence[int]) -> list[int]: ...

    def decode_with_timestamps(self, ids: Sequence[int]) -> str: ...


def split_to_word_tokens(
    tok: WordSplitter, tokens: Sequence[int], language: str | None = None
) -> tuple[list[str], list[list[int]]]:
    """openai-whisper's Tokenizer.split_to_word_tokens: for zh, ja, th, lo, my and yue the
    tokens cut wherever their decode_with_timestamps is whole characters; for any other
    language those pieces joined into words at spaces (a piece starting with a space, a
    special token or a punctuation mark starts a word). Returns (words, tokens of each)."""
    tokens = tok.check_ids(tokens)
    if language in _NO_SPACE_LANGUAGES:
        return _split_on_characters(tok, tokens)
    words: list[str] = []
    word_tokens: list[list[int]] = []
    for piece, piece_tokens in zip(*_split_on_characters(tok, tokens)):
        if piece_tokens[0] >= tok.eot or piece.startswith(" ") or piece.strip() in _PUNCTUATION or not words:
            words.append(piece)
            word_tokens.append(piece_tokens)
        else:
            words[-1] += piece
            word_tokens[-1].extend(piece_tokens)
    return words, word_tokens


def _split_on_characters(tok: WordSplitter, tokens: list[int]) -> tuple[list[str], list[list[int]]]:
    # A piece ends where its tokens decode to whole characters: a U+FFFD in the piece ends
    # it only if the whole decode has one there too (a genuine U+FFFD or a broken byte).
    full = tok.decode_with_timestamps(tokens)
    words: list[str] = []
    word_tokens: list[list[int]] = []
    current: list[int] = []
    offset = 0
    for token in tokens:
        current.append(token)
        decoded = tok.decode_with_timestamps(current)
        at = offset + decoded.index("\ufffd") if "\ufffd" in decoded else -1
        if at < 0 or (at < len(full) and full[at] == "\ufffd"):
            words.append(decoded)
            word_tokens.append(current)
            current = []
            offset += len(decoded)
        elif at >= len(full) and words:
            # Past the end of the whole text (openai-whisper reads full[at] and raises IndexError):
            # the whole decode merged these tokens' broken bytes into the U+FFFD of the piece
            # before, as in [33893, 94], "제" + one U+FFFD for the bytes of both. They join it.
            word_tokens[-1].extend(current)
            current = []
    return words, word_tokens


def word_tokens(
    tok: WordSplitter,
    tokens: Sequence[int],
    language: str | None = None,
    prepend_punctuations: str = PREPEND_PUNCTUATIONS,
    append_punctuations: str = APPEND_PUNCTUATIONS,
) -> list[tuple[str, list[int]]]:
    """The words openai-whisper times in add_word_timestamps, with their tokens: the text
    tokens split by split_to_word_tokens (with eot, as whisper splits them), then its
    merge_punctuations: an opening mark (prepend_punctuations) after a space joins the word
    after it, a closing mark (append_punctuations) joins the word before it unless that
    ends in a space. Words left empty are dropped."""
    text_tokens = [t for t in tok.check_ids(tokens) if t < tok.eot]
    words, groups = split_to_word_tokens(tok, [*text_tokens, tok.eot], language)
    # find_alignment times every word but the last, eot's own (its zip stops there)
    texts, lists = list(words[:-1]), [list(g) for g in groups[:-1]]
    i, j = len(texts) - 2, len(texts) - 1
    while i >= 0:
        if texts[i].startswith(" ") and texts[i].strip() in prepend_punctuations:
            texts[j], lists[j] = texts[i] + texts[j], lists[i] + lists[j]
            texts[i], lists[i] = "", []
        else:
            j = i
        i -= 1
    i, j = 0, 1
    while j < len(texts):
        if not texts[i].endswith(" ") and texts[j] in append_punctuations:
            texts[i], lists[i] = texts[i] + texts[j], lists[i] + lists[j]
            texts[j], lists[j] = "", []
        else:
            i = j
        j += 1
    return [(w, g) for w, g in zip(texts, lists) if w]
