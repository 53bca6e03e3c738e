# cython: language_level=3, boundscheck=True, wraparound=False
"""Python access to the stream-text buffer and the stream-state checks (see textbuf.h), for
kinds written in Python."""
from cpython.object cimport PyObject

cdef extern from "textbuf.h":
    int _init "oasr_textbuf_init"() except -1
    int _read_text "oasr_read_text"(object state, oasr_textstate* ts) except -1
    int _check_tail_read "oasr_check_tail_read"(object state, object tail, oasr_textstate* ts) except -1
    int _commit_read "oasr_commit_read"(object state, const oasr_textstate* ts, object settled, object tail,
                                        PyObject* tag) except -1
    int _commit "oasr_commit"(object state, object settled, object tail) except -1
    int _commit_tagged "oasr_commit_tagged"(object state, object settled, object tail, object tag) except -1
    int _check_owner "oasr_check_owner"(object state, object tag) except -1
    int _check_tail "oasr_check_tail"(object state, object tail) except -1
    object _tag "oasr_tag"(object data)
    int _append "oasr_append"(object state, object key, object delta) except -1

_init()


# The one home of textbuf.h's code: the other compiled modules call these (see _engine/textbuf.pxd).

cdef int oasr_read_text(object state, oasr_textstate* ts) except -1:
    return _read_text(state, ts)


cdef int oasr_check_tail_read(object state, object tail, oasr_textstate* ts) except -1:
    return _check_tail_read(state, tail, ts)


cdef int oasr_commit_read(object state, const oasr_textstate* ts, object settled, object tail,
                          PyObject* tag) except -1:
    return _commit_read(state, ts, settled, tail, tag)


cdef int oasr_commit(object state, object settled, object tail) except -1:
    return _commit(state, settled, tail)


cdef int oasr_commit_tagged(object state, object settled, object tail, object tag) except -1:
    return _commit_tagged(state, settled, tail, tag)


cdef int oasr_check_owner(object state, object tag) except -1:
    return _check_owner(state, tag)


cdef int oasr_check_tail(object state, object tail) except -1:
    return _check_tail(state, tail)


cdef object oasr_tag(object data):
    return _tag(data)


cdef int oasr_append(object state, object key, object delta) except -1:
    return _append(state, key, delta)


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
