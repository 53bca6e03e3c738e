# The one intake of token ids for compiled code (implemented in _ids.pyx; the rules of what is
# accepted are in docs/decoding.md § Id inputs). A kind's compiled entry point does:
#
#     cdef IdBuffer ids
#     read_ids(&ids, new_ids, vocab_size)     # raises InvalidIdError / NonIntegerIdError
#     try:
#         ... ids.ids[0 ... ids.n - 1], each in 0 ... vocab_size - 1 ...
#     finally:
#         release_ids(&ids)
#
# The ids are copied once into C memory, so no user code (an id's __index__) can run while a
# kind walks them, and the caller's container may change afterwards without harm.

cdef enum:
    SMALL_IDS = 16  # a streamed chunk this short needs no heap allocation

cdef struct IdBuffer:
    const Py_ssize_t* ids  # n checked ids (points at `small` or `heap`)
    Py_ssize_t n
    Py_ssize_t* heap       # owned, or NULL
    Py_ssize_t small[SMALL_IDS]

cdef int read_ids(IdBuffer* out, object ids, Py_ssize_t vocab_size) except -1
cdef void release_ids(IdBuffer* buf) noexcept
