# cython: language_level=3, boundscheck=True, wraparound=False
"""Python access to the stream-text buffer (see _textbuf.h), for kinds written in Python."""
from oasr_tok._textbuf cimport oasr_commit


def commit_text(dict state, str settled, str tail):
    """Set state["text"] to its settled part + `settled` + `tail`, in place where possible,
    and remember `tail` as the part the next call may replace."""
    oasr_commit(state, settled, tail)


def settled_text(dict state):
    """The settled part of state["text"] (everything but the held-back tail)."""
    text = state.get("text", "")
    tail = state.get("_tail", 0)
    return text[: len(text) - tail]


def held_tail(dict state):
    """The held-back tail of state["text"]."""
    text = state.get("text", "")
    tail = state.get("_tail", 0)
    return text[len(text) - tail:]
