# cython: language_level=3, boundscheck=True, wraparound=False
"""Python access to the stream-text buffer and the stream-state checks (see _textbuf.h), for
kinds written in Python."""
from oasr_tok._textbuf cimport oasr_check_owner, oasr_check_tail, oasr_commit, oasr_commit_tagged, oasr_tag


def commit_text(dict state, str settled, str tail, tag=None):
    """Set state["text"] to its settled part + `settled` + `tail`, in place where possible,
    and remember `tail` as the part the next call may replace. With `tag` (see table_tag),
    refuse a state another tokenizer made, and mark this one as made by `tag`."""
    if tag is None:
        oasr_commit(state, settled, tail)
    else:
        oasr_commit_tagged(state, settled, tail, tag)


def check_state(state, tag, str tail):
    """StreamStateError unless `state` is fresh, or was made by the tokenizer tagged `tag`
    and its text ends with `tail` recorded as its tail (what its decoder state holds back)."""
    oasr_check_owner(state, tag)
    oasr_check_tail(state, tail)


def check_owner(state, tag):
    """StreamStateError unless `state` is a dict that is fresh or made by the tokenizer tagged
    `tag`."""
    oasr_check_owner(state, tag)


def table_tag(data):
    """A fingerprint (an int, the same in every process) of plain data describing how a
    tokenizer renders: str, bytes, int, bool, None and lists/tuples of them."""
    return oasr_tag(data)


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
