"""Where grouped Words live (oasr_tok/_wordmem.h): one call packs its Words into chunks of its
own, freed with the last Word in them, with a bounded number of freed 2 MiB chunks kept for
the next call. These tests hold the allocator to what a Python object must guarantee: a Word
outlives its list and any later call, and every reference it took is given back."""
from __future__ import annotations

import copy
import gc
import pickle
import sys

import pytest

from oasr_tok import Word
from oasr_tok._words import _allocator_stats
from oasr_tok.words import group_words

STATS = _allocator_stats()
#: Enough words to fill the small chunks and several 2 MiB mappings.
MANY = 3 * STATS["chunk_bytes"] // STATS["word_bytes"]


def _transcript(n_words: int, tag: str) -> tuple[list[str], list[int]]:
    pieces = [f" {tag}{k}" for k in range(n_words)]
    return pieces, list(range(n_words))


def test_a_kept_word_outlives_its_list_and_later_calls():
    pieces, starts = _transcript(MANY, "w")
    words = group_words(pieces, starts)
    assert len(words) == MANY
    picks = [0, 1, 63, 64, 500, MANY // 3, MANY // 2, MANY - 1]  # small chunks and mappings
    kept = [words[k] for k in picks]
    del words
    gc.collect()
    # Later calls reuse freed chunks; none of them may be one the kept words live in.
    for tag in "xyz":
        other = group_words(*_transcript(MANY, tag))
        assert other[0].text == f"{tag}0"
        del other
    for k, word in zip(picks, kept):
        assert word.text == f"w{k}"
        assert (word.start, word.end, word.first_token, word.last_token) == (k, min(k + 1, MANY - 1), k, k)


def test_spare_chunks_stay_bounded():
    for tag in "abcdef":
        words = group_words(*_transcript(2 * MANY, tag))
        assert words[-1].text == f"{tag}{2 * MANY - 1}"
        del words
        assert 0 <= _allocator_stats()["spare_chunks"] <= STATS["spare_limit"]


def test_every_reference_taken_is_given_back():
    transcript = "".join(f" word{k}" for k in range(MANY))  # one piece: join returns it as is
    start, end = float(sys.maxsize), float(sys.maxsize) + 1.0  # objects no one else holds
    before = (sys.getrefcount(transcript), sys.getrefcount(start), sys.getrefcount(end))
    words = group_words([transcript], [start], [end])
    assert len(words) == MANY
    assert words[7].text == "word7" and words[7].start is start and words[7].end is end
    assert sys.getrefcount(start) > before[1]
    del words
    gc.collect()
    assert (sys.getrefcount(transcript), sys.getrefcount(start), sys.getrefcount(end)) == before


def test_an_error_gives_everything_back():
    transcript = "".join(f" w{k}" for k in range(MANY))
    before = sys.getrefcount(transcript)
    with pytest.raises(TypeError):
        group_words([transcript, 5], [0, 1])
    with pytest.raises(ValueError):
        group_words([transcript], [float("nan")])
    gc.collect()
    assert sys.getrefcount(transcript) == before


def test_grouped_words_behave_like_constructed_ones():
    words = group_words([" to", " be", ","], [0, 1, 2])
    made = [Word("to", 0, 1, 0, 0), Word("be,", 1, 2, 1, 2)]
    assert words == made and [hash(w) for w in words] == [hash(w) for w in made]
    assert pickle.loads(pickle.dumps(words)) == made
    assert copy.deepcopy(words) == made and copy.copy(words[1]) == made[1]
    assert [w.to_dict() for w in words] == [w.to_dict() for w in made]
    for attribute in ("text", "start", "end", "first_token", "last_token"):
        with pytest.raises(AttributeError):
            setattr(words[0], attribute, None)


def test_a_word_made_without_init_fails_cleanly():
    word = Word.__new__(Word)
    with pytest.raises(AttributeError):
        word.text
    with pytest.raises(AttributeError):
        word.start
    del word
    gc.collect()
