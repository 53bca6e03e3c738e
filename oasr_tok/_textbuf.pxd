cdef extern from "_textbuf.h":
    int oasr_commit(object state, object settled, object tail) except -1
