# Types of the compiled word-timing results (oasr_tok/_engine/wordtypes.pyx); tests/house/test_typing.py
# checks these against the built module with mypy's stubtest.
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from typing_extensions import disjoint_base

# Times are the caller's own values, in the caller's unit: floats (seconds) or ints (frames),
# which the type system counts as floats too.

@disjoint_base
class Word:
    """One word of a transcript: its exact text (a substring of the decode), its time span in
    the caller's unit, the indices of the first and last tokens whose pieces overlap it, and
    its `confidence` (a probability in 0 ... 1, from the tokens' scores) or None when no
    scores were given. Immutable; compares by value.

    Example:
        >>> from oasr_tok import Word
        >>> word = Word("café", 0.5, 0.9, 1, 2)
        >>> word
        Word(text='café', start=0.5, end=0.9, first_token=1, last_token=2)
        >>> word.to_dict()
        {'text': 'café', 'start': 0.5, 'end': 0.9, 'first_token': 1, 'last_token': 2}
    """
    @property
    def text(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def first_token(self) -> int: ...
    @property
    def last_token(self) -> int: ...
    @property
    def confidence(self) -> float | None: ...
    def __init__(
        self, text: str, start: float, end: float, first_token: int, last_token: int, confidence: float | None = None
    ) -> None: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def to_dict(self) -> dict[str, Any]: ...

# Registered as a collections.abc.Sequence at import, so it is one for the type system too.
@disjoint_base
class Words(Sequence[Word]):
    """The words of one transcript, in order: a read-only sequence of `Word` that compares
    equal to the list of the same Words, indexes (negative indices too), slices (giving Words)
    and iterates like one, and exposes its columns without making a Word per entry:
    `starts`, `ends` (lists of the caller's time values), `first_token`, `last_token`
    (`array.array("q")`, so `numpy.asarray` takes them without a copy) and `texts`.
    `to_list()` makes every Word at once. `Words(iterable_of_Word)` builds one from records.
    `confidences` is each word's confidence (None for a word without one).

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> ids = tok.encode("the café opens at 9 😀")
        >>> words = tok.word_timings(ids, [40 * k for k in range(len(ids))])
        >>> words.texts, words.starts
        (['the', 'café', 'opens', 'at', '9', '😀'], [0, 40, 80, 200, 280, 360])
        >>> words[1]
        Word(text='café', start=40, end=80, first_token=1, last_token=1)
        >>> words[2:4] == [words[2], words[3]], list(words.first_token)
        (True, [0, 1, 2, 5, 7, 9])
    """
    def __init__(self, words: Iterable[Word] = ()) -> None: ...
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, key: int, /) -> Word: ...
    @overload
    def __getitem__(self, key: slice, /) -> Words: ...
    def __iter__(self) -> Iterator[Word]: ...
    def __reversed__(self) -> Iterator[Word]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]  # unhashable, like the list it equals
    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int: ...
    def count(self, value: Any) -> int: ...
    def to_list(self) -> list[Word]: ...
    @property
    def starts(self) -> list[float]: ...
    @property
    def ends(self) -> list[float]: ...
    @property
    def first_token(self) -> array[int]: ...
    @property
    def last_token(self) -> array[int]: ...
    @property
    def confidences(self) -> list[float | None]: ...
    @property
    def texts(self) -> list[str]: ...

REDUCTIONS: tuple[str, ...]

def attach_confidences(words: Words, scores: array[float], reduction: str = "mean") -> Words: ...
def carry_first_tokens(words: Words, pieces: list[str], carriers: bytes) -> Words: ...
