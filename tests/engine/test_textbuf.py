"""The stream text buffer: state["text"] == settled + tail, canonical strings whatever the
widths involved, never mutating a string someone else holds."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasr_tok._engine.textbuf import commit_text, held_tail, settled_text

chars = st.sampled_from(["a", "z", " ", "é", "ÿ", "中", "\ufffd", "😀", "\U0010fffd"])
texts = st.lists(chars, max_size=6).map("".join)


@given(st.lists(st.tuples(texts, texts), max_size=30), st.booleans())
def test_commit_keeps_settled_plus_tail(steps, keep_references):
    state: dict = {}
    settled = ""
    held = []
    for delta, tail in steps:
        commit_text(state, delta, tail)
        settled += delta
        assert state["text"] == settled + tail
        assert settled_text(state) == settled and held_tail(state) == tail
        # A string the buffer produced must be canonical: equal strings hash and compare alike.
        copy = "".join(list(state["text"]))
        assert hash(copy) == hash(state["text"]) and copy == state["text"]
        assert sys.getsizeof(copy) == sys.getsizeof(state["text"])
        if keep_references:
            held.append((state["text"], settled + tail))
    for seen, expected in held:
        assert seen == expected  # nothing the caller kept was changed in place


def test_replacing_a_tail_in_place_never_leaves_a_stale_utf8_copy():
    """C code (pyo3, PyArg_Parse "s") reads a str through its cached UTF-8 copy; a tail
    replaced in place at the same length must not leave that copy describing the old text."""
    import ctypes

    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8
    as_utf8.restype = ctypes.c_char_p
    as_utf8.argtypes = [ctypes.py_object]
    for settled, old_tail, new_tail in (("é", "ab", "cd"), ("中", "ab", "c"), ("😀", "a", "bcd"), ("é", "\ufffd", "z")):
        state: dict = {}
        commit_text(state, settled, old_tail)
        as_utf8(state["text"])  # make the cache
        commit_text(state, "", new_tail)
        assert as_utf8(state["text"]).decode("utf-8") == settled + new_tail == state["text"]


@pytest.mark.parametrize("wide", ["中", "😀", "\U00020000", "\U0001d400"])
def test_a_same_length_tail_swap_without_cached_copies_is_done_in_place(wide):
    """A byte-level stream often swaps a held "\\ufffd" for the character it completes: the
    text keeps its length. Without a cached UTF-8 copy to go stale, that is written in place
    (the str object is kept), not copied: a copy would make such a step cost O(transcript).
    A text holding a character above U+FFFF is stored as UCS-4, which on Python < 3.12 shares
    its buffer with its wchar_t form: that shared buffer is no stale copy (it was taken for one,
    and every such step of an emoji-bearing transcript copied it)."""
    state: dict = {}
    commit_text(state, wide + "中" * 1000, "\ufffd")
    before = id(state["text"])
    commit_text(state, "", "\ufffd")  # the next byte of the same character: still held
    assert id(state["text"]) == before
    commit_text(state, "文", "")
    assert state["text"] == wide + "中" * 1000 + "文" and id(state["text"]) == before
