# What a Stream keeps of its server rules (oasr_tok/_engine/stream_record.pyx).
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

    cdef bint starts_no_stop(self, str text) noexcept nogil
    cdef str filter(self, str delta, Py_ssize_t token, bint final)
    cdef StreamRecord copy_record(self)
    cdef int check_against(self, object settled, str tail) except -1
