"""The word-timing rules of docs/decoding.md § Word timings, in plain Python.

This is the yardstick for the compiled grouping (oasr_tok/_engine/words.pyx): the benchmark measures
the compiled code against it, and the tests use it as a differential oracle. It is written
differently on purpose — in phases over whole lists, not as one state machine — so that the
two implementations share the rules and nothing else.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from oasr_tok import TimingError, Word

# Scripts written without spaces, by code point range (Unicode Scripts.txt).
NO_SPACE_SCRIPTS = [
    (0x0E01, 0x0E3E),
    (0x0E40, 0x0E7F),  # Thai, without the baht sign
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),
    (0xA9E0, 0xA9FF),
    (0xAA60, 0xAA7F),  # Myanmar
    (0x1780, 0x17FF),
    (0x19E0, 0x19FF),  # Khmer
    (0x2E80, 0x2FDF),  # radicals
    (0x3005, 0x3007),
    (0x3021, 0x3029),
    (0x3038, 0x303B),
    (0x3041, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x3100, 0x312F),
    (0x31A0, 0x31BF),  # Bopomofo
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),  # Han
    (0xFF66, 0xFF9D),  # halfwidth Katakana
    (0x1AFF0, 0x1B16F),
    (0x20000, 0x323AF),
]
# Spacing characters that belong to the character before them.
EXTENDERS = {"\u30fc", "\uff70", "\u309b", "\u309c", "\uff9e", "\uff9f", "\u0e33", "\u0eb3"}
# After these (Myanmar virama, Khmer coeng) the next letter is stacked on the same character.
STACKERS = {"\u1039", "\u17d2"}


def classify(ch: str) -> str:
    if ch.isspace():
        return "space"
    category = unicodedata.category(ch)
    if category in ("Ps", "Pi"):
        return "open"
    if category.startswith("P"):
        return "close"
    if category.startswith("M") or category == "Cf" or ch in EXTENDERS:
        return "extend"
    if category == "Nd":
        return "word"
    if any(low <= ord(ch) <= high for low, high in NO_SPACE_SCRIPTS):
        return "solo"
    return "word"


def characters(text: str) -> list[tuple[int, int, str]]:
    """(start, end, class) of each character: a base plus the marks that extend it."""
    chars: list[tuple[int, int, str]] = []
    for i, ch in enumerate(text):
        kind = classify(ch)
        previous = text[i - 1] if i else " "
        joins = kind == "extend" or (kind == "solo" and previous in STACKERS)
        if joins and not previous.isspace() and chars:
            start, _, base = chars[-1]
            chars[-1] = (start, i + 1, base)
        else:
            chars.append((i, i + 1, "word" if kind == "extend" else kind))
    return chars


def word_spans(text: str) -> list[tuple[int, int]]:
    chars = characters(text)
    # 1. Cores: each character of a script without spaces; each stretch from the first to the
    #    last word character of a whitespace run, not crossing a character without spaces.
    cores: list[list[int]] = []  # [start, end] of each core
    loose: list[tuple[int, int, str, int]] = []  # punctuation outside cores: (start, end, class, cores before it)
    stretch: list[tuple[int, int, str]] = []

    def close_stretch() -> None:
        word_at = [k for k, c in enumerate(stretch) if c[2] == "word"]
        if not word_at:
            loose.extend((a, b, kind, len(cores)) for a, b, kind in stretch)
        else:
            first, last = word_at[0], word_at[-1]
            loose.extend((a, b, kind, len(cores)) for a, b, kind in stretch[:first])
            cores.append([stretch[first][0], stretch[last][1]])
            loose.extend((a, b, kind, len(cores)) for a, b, kind in stretch[last + 1 :])
        stretch.clear()

    for a, b, kind in chars:
        if kind == "space":
            close_stretch()
        elif kind == "solo":
            close_stretch()
            cores.append([a, b])
        else:
            stretch.append((a, b, kind))
    close_stretch()

    if not cores:  # punctuation only: whitespace-separated runs
        runs: list[tuple[int, int]] = []
        for a, b, kind in chars:
            if kind == "space":
                continue
            if runs and runs[-1][1] == a:
                runs[-1] = (runs[-1][0], b)
            else:
                runs.append((a, b))
        return runs

    # 2. Loose punctuation between core k-1 and core k: closing marks before the first opening
    #    one join core k-1, the rest joins core k; before the first core or after the last,
    #    it joins the nearest core.
    first_open: dict[int, int] = {}
    for a, _, kind, k in loose:
        if kind == "open":
            first_open.setdefault(k, a)
    for a, b, _, k in loose:
        goes_back = k == len(cores) or (k > 0 and (k not in first_open or a < first_open[k]))
        target = cores[k - 1] if goes_back else cores[k]
        target[0] = min(target[0], a)
        target[1] = max(target[1], b)
    return [(a, b) for a, b in cores]


def _check(values, name: str, n: int) -> list:
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    if len(values) != n:
        raise TimingError(f"{name} has {len(values)} times for {n} tokens")
    for k, value in enumerate(values):
        try:
            if isinstance(value, (str, bytes, bytearray, bool)):
                raise TypeError("not a number")
            x = float(value)
        except (TypeError, ValueError, OverflowError):
            raise TimingError(f"{name}[{k}] is not a number") from None
        if x != x or x in (float("inf"), float("-inf")):
            raise TimingError(f"{name}[{k}] is not finite")
        if k and x < float(values[k - 1]):
            raise TimingError(f"{name}[{k}] is before {name}[{k - 1}]")
    return values


def group_words(pieces: Sequence[str], starts, ends=None, carriers=None) -> list[Word]:
    """The same contract as oasr_tok.core.words.group_words; with `carriers` (1 per token after which
    bytes of an unfinished character wait), Tokenizer.word_timings' rule for byte-level kinds:
    a word that starts with the first character of a token's piece also takes the tokens that
    carried that character's bytes."""
    pieces = list(pieces)
    n = len(pieces)
    starts = _check(starts, "starts", n)
    if ends is not None:
        ends = _check(ends, "ends", n)
        for k in range(n):
            if float(ends[k]) < float(starts[k]):
                raise TimingError(f"ends[{k}] is before starts[{k}]")
    text = "".join(pieces)
    owner: list[int] = []
    for k, piece in enumerate(pieces):
        owner.extend([k] * len(piece))

    def end_of(k: int):
        if ends is not None:
            return ends[k]
        return starts[k + 1] if k + 1 < n else starts[k]

    # A word is timed by the tokens that printed its characters: the first one's start, the
    # last one's end. Whitespace-only tokens between words printed neither: their time is the gap.
    piece_start = []
    offset = 0
    for piece in pieces:
        piece_start.append(offset)
        offset += len(piece)
    words = []
    for a, b in word_spans(text):
        first, last = owner[a], owner[b - 1]
        if carriers is not None and piece_start[first] == a:
            while first > 0 and carriers[first - 1]:
                first -= 1
        words.append(Word(text[a:b], starts[first], end_of(last), first, last))
    return words
