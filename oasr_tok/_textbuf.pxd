cdef extern from "_textbuf.h":
    ctypedef struct oasr_textstate:  # what oasr_check_tail_read read of a state, for oasr_commit_read
        Py_ssize_t n
    int oasr_check_tail_read(object state, object tail, oasr_textstate* ts) except -1
    int oasr_commit_read(object state, const oasr_textstate* ts, object settled, object tail, object tag) except -1
    int oasr_commit(object state, object settled, object tail) except -1
    int oasr_commit_tagged(object state, object settled, object tail, object tag) except -1
    int oasr_check_owner(object state, object tag) except -1
    int oasr_check_tail(object state, object tail) except -1
    object oasr_tag(object data)
    int oasr_append(object state, object key, object delta) except -1
