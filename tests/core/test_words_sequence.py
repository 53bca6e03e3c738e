"""What word_timings returns: `Words`, a columnar sequence that behaves as the list of its
`Word`s (len, index, slice, iteration, equality, pickling) and gives its columns without making
a Word per entry. Expected values are the list the same words make, built by hand."""

from __future__ import annotations

import copy
import gc
import pickle
import sys
from collections.abc import Sequence

import numpy as np
import pytest

from oasr_tok import Word, Words
from oasr_tok.core.words import group_words

PIECES = [" to", " be", ",", " or", " not", " 我们"]
STARTS = [0, 10, 20, 30, 40, 50]
EXPECTED = [
    Word("to", 0, 10, 0, 0),
    Word("be,", 10, 30, 1, 2),
    Word("or", 30, 40, 3, 3),
    Word("not", 40, 50, 4, 4),
    Word("我", 50, 50, 5, 5),
    Word("们", 50, 50, 5, 5),
]


@pytest.fixture()
def words() -> Words:
    return group_words(PIECES, STARTS)


def test_is_a_sequence_equal_to_the_list_of_its_words(words):
    assert isinstance(words, Words) and isinstance(words, Sequence)
    assert words == EXPECTED and EXPECTED == words and (words != EXPECTED) is False
    assert words != EXPECTED[:-1] and words != EXPECTED[::-1] and words != tuple(EXPECTED)
    assert len(words) == 6 and bool(words) and not group_words([], [])
    assert list(words) == EXPECTED and words.to_list() == EXPECTED
    assert type(words.to_list()) is list and all(type(w) is Word for w in words)
    assert list(reversed(words)) == EXPECTED[::-1]


def test_indexes_and_slices_like_a_list(words):
    for k in range(-6, 6):
        assert words[k] == EXPECTED[k]
    for bad in (6, -7, 10**30):
        with pytest.raises(IndexError):
            words[bad]
    with pytest.raises(TypeError):
        words["1"]
    for key in (slice(1, 4), slice(None, None, -1), slice(-2, None), slice(0, 6, 2), slice(5, 1, -2), slice(3, 3)):
        part = words[key]
        assert isinstance(part, Words) and part == EXPECTED[key]
    assert words.index(EXPECTED[3]) == 3 and words.count(EXPECTED[4]) == 1
    assert EXPECTED[2] in words and Word("x", 0, 0, 0, 0) not in words
    with pytest.raises(ValueError):
        words.index(Word("x", 0, 0, 0, 0))


def test_columns_without_words(words):
    assert words.texts == [w.text for w in EXPECTED]
    assert words.starts == [w.start for w in EXPECTED] and words.ends == [w.end for w in EXPECTED]
    assert list(words.first_token) == [w.first_token for w in EXPECTED]
    assert list(words.last_token) == [w.last_token for w in EXPECTED]
    # NumPy takes the token columns through the buffer protocol and the time columns as lists.
    assert np.asarray(words.first_token).dtype == np.int64
    assert np.asarray(words.last_token).tolist() == [0, 2, 3, 4, 5, 5]
    assert np.asarray(words.starts).tolist() == [0, 10, 30, 40, 50, 50]
    # Columns are fresh copies: changing one changes nothing in the Words.
    words.starts.append(1)
    words.first_token[0] = 99
    assert words == EXPECTED


def test_times_are_the_callers_own_objects():
    start, end = float(sys.maxsize), float(sys.maxsize) + 1.0  # objects no one else holds
    words = group_words([" a", " b"], [start, start], [end, end])
    assert words[0].start is start and words.ends[1] is end


def test_built_from_records_and_pickled(words):
    rebuilt = Words(EXPECTED)
    assert rebuilt == words == EXPECTED and Words() == [] and len(Words()) == 0
    assert pickle.loads(pickle.dumps(words)) == EXPECTED
    assert isinstance(pickle.loads(pickle.dumps(words)), Words)
    assert copy.deepcopy(words) == EXPECTED and copy.copy(words) == EXPECTED
    with pytest.raises(TypeError):
        Words([EXPECTED[0], ("to", 0, 10, 0, 0)])
    with pytest.raises(TypeError):
        hash(words)  # equal to a list, so unhashable like one


def test_a_word_outlives_its_words_and_every_reference_is_given_back():
    transcript = "".join(f" word{k}" for k in range(50_000))  # one piece: join returns it as is
    start, end = float(sys.maxsize), float(sys.maxsize) + 1.0
    before = (sys.getrefcount(transcript), sys.getrefcount(start), sys.getrefcount(end))
    words = group_words([transcript], [start], [end])
    assert len(words) == 50_000
    kept = words[-1]
    del words
    gc.collect()
    assert kept == Word("word49999", start, end, 0, 0)
    del kept
    gc.collect()
    assert (sys.getrefcount(transcript), sys.getrefcount(start), sys.getrefcount(end)) == before


def test_an_error_gives_everything_back():
    transcript = "".join(f" w{k}" for k in range(1000))
    before = sys.getrefcount(transcript)
    with pytest.raises(TypeError):
        group_words([transcript, 5], [0, 1])
    with pytest.raises(ValueError):
        group_words([transcript], [float("nan")])
    gc.collect()
    assert sys.getrefcount(transcript) == before


def test_word_records_behave_as_values():
    made = Word("be,", 1, 2, 1, 2)
    assert group_words([" to", " be", ","], [0, 1, 2])[1] == made
    assert hash(group_words([" to", " be", ","], [0, 1, 2])[1]) == hash(made)
    assert copy.copy(made) == made and pickle.loads(pickle.dumps(made)) == made
    for attribute in ("text", "start", "end", "first_token", "last_token"):
        with pytest.raises(AttributeError):
            setattr(made, attribute, None)


def test_changing_the_callers_times_afterwards_changes_nothing():
    starts, ends = [0, 10, 20, 30, 40, 50], [5, 15, 25, 35, 45, 55]
    words = group_words(PIECES, starts, ends)
    expected = words.to_list()
    starts[:] = [99] * 6
    ends.clear()
    assert words == expected and words.starts == [0, 10, 30, 40, 50, 50]
    assert words[1:3] == expected[1:3] and words[::-1] == expected[::-1]


def test_without_ends_a_word_ends_where_the_token_after_it_starts():
    words = group_words([" a", " b", "c", " d"], [0, 10, 20, 30])
    assert words.ends == [10, 30, 30] and words[1:].ends == [30, 30]
