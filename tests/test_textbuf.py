"""The stream text buffer: state["text"] == settled + tail, canonical strings whatever the
widths involved, never mutating a string someone else holds."""
from __future__ import annotations

import sys

from hypothesis import given, strategies as st

from oasr_tok._textbuf import commit_text, held_tail, settled_text

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
