# The stream-text buffer and the stream-state checks: compiled once, into oasr_tok._engine.textbuf
# (from textbuf.h), and called from the other compiled modules through these functions.
from cpython.object cimport PyObject

cdef extern from "textstate.h":
    ctypedef struct oasr_textstate:  # what oasr_check_tail_read read of a state, for oasr_commit_read
        PyObject* text  # borrowed; NULL: the state has no text yet
        Py_ssize_t n
        Py_ssize_t keep  # text[keep:n] is the held tail

cdef int oasr_read_text(object state, oasr_textstate* ts) except -1
cdef int oasr_check_tail_read(object state, object tail, oasr_textstate* ts) except -1
# tag: the tokenizer's tag, or NULL for none
cdef int oasr_commit_read(object state, const oasr_textstate* ts, object settled, object tail, PyObject* tag) except -1
cdef int oasr_commit(object state, object settled, object tail) except -1
cdef int oasr_commit_tagged(object state, object settled, object tail, object tag) except -1
cdef int oasr_check_owner(object state, object tag) except -1
cdef int oasr_check_tail(object state, object tail) except -1
cdef object oasr_tag(object data)
cdef int oasr_append(object state, object key, object delta) except -1
