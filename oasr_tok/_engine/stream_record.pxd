# What a Stream keeps of its server rules (oasr_tok/_engine/stream_record.pyx).
cdef extern from "Python.h":
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) noexcept nogil


cdef class StreamRecord:
    cdef readonly tuple stops
    cdef readonly bint keeps_stop
    cdef public str pending
    cdef public Py_ssize_t emitted
    cdef public Py_ssize_t tokens
    cdef public str prompt_rest
    cdef public bint closed
    cdef readonly frozenset ends
    cdef readonly frozenset firsts
    cdef public object stop
    cdef public object envelope
    cdef Py_UCS4* first_chars
    cdef Py_ssize_t n_first
    cdef Py_ssize_t longest

    cdef bint starts_no_stop(self, str text) noexcept
    cdef str filter(self, str delta, Py_ssize_t token, bint final)
    cdef str held_after(self, str tail)
    cdef StreamRecord copy_record(self)
    cdef int check_against(self, object settled, str tail) except -1


cdef inline bint no_first_char(int kind, const void* data, Py_ssize_t start, Py_ssize_t end,
                               const Py_UCS4* firsts, Py_ssize_t n_first) noexcept nogil:
    """Whether no character of the text (kind, data)[start:end] is the first of a stop string
    (`firsts`): then, with nothing pending, no stop string ends in it and no end of it could
    begin one. The one statement of that test: on a delta (StreamRecord.starts_no_stop) and, in
    a step taken without the GIL, on a Stream's text buffer (_engine/stream.pyx's take_text)."""
    cdef Py_ssize_t i, k
    cdef Py_UCS4 c
    for i in range(start, end):
        c = PyUnicode_READ(kind, data, i)
        for k in range(n_first):
            if firsts[k] == c:
                return False
    return True
