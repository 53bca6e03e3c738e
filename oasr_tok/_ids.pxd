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
#
# A kind that walks many ids once (token_pieces, decode) may instead read_ids_in_place and
# read each id with id_at: a long list is then read where it is, each item checked as it is
# read (a copy of a million ids is an 8 MB allocation, and the page faults that come with it
# cost more than the walk; a pass that checks them all first costs a third of it). When id_at
# meets an item that is not an exact int in range (a bad id, an id of another type such as
# np.int64, or a list changed during the walk by another thread while the GIL was let go) it
# raises ReadAgain (oasr_tok._ids): the caller drops what it made and walks again over
# read_ids, which copies the ids and names a bad one. So the walk must have no effect the
# caller cannot drop, and a function that stops early (join_pieces at a stop) reads the rest
# first, so that a bad id anywhere is still an error.

cdef enum:
    SMALL_IDS = 16  # a streamed chunk this short needs no heap allocation

from cpython.object cimport PyObject

cdef struct IdBuffer:
    const Py_ssize_t* ids  # n checked ids (points at `small` or `heap`); not with `in_place`
    Py_ssize_t n
    Py_ssize_t* heap       # owned, or NULL
    PyObject* in_place     # a list read where it is (a reference held), or NULL
    Py_ssize_t limit       # with in_place: the vocabulary size its ids are checked against
    Py_ssize_t small[SMALL_IDS]

cdef int read_ids(IdBuffer* out, object ids, Py_ssize_t vocab_size) except -1
cdef int read_ids_in_place(IdBuffer* out, object ids, Py_ssize_t vocab_size) except -1
cdef void release_ids(IdBuffer* buf) noexcept
cdef Py_ssize_t in_place_id(const IdBuffer* buf, Py_ssize_t i) except -1


cdef extern from *:
    """
    /* An exact int of at most one digit, read from the object itself (no call). */
    static inline int oasr_compact_id(PyObject *op, Py_ssize_t *out)
    {
        if (!PyLong_CheckExact(op)) return 0;
    #if PY_VERSION_HEX >= 0x030C0000
        if (!PyUnstable_Long_IsCompact((PyLongObject *)op)) return 0;
        *out = PyUnstable_Long_CompactValue((PyLongObject *)op);
        return 1;
    #else
        switch (Py_SIZE(op)) {
        case 0: *out = 0; return 1;
        case 1: *out = (Py_ssize_t)((PyLongObject *)op)->ob_digit[0]; return 1;
        default: return 0;
        }
    #endif
    }
    /* list[i], borrowed, for 0 <= i < len(list) (the caller checks). */
    static inline PyObject *oasr_list_item(PyObject *list, Py_ssize_t i) { return PyList_GET_ITEM(list, i); }
    static inline Py_ssize_t oasr_list_size(PyObject *list) { return PyList_GET_SIZE(list); }
    """
    bint oasr_compact_id(PyObject* op, Py_ssize_t* out) noexcept
    PyObject* oasr_list_item(PyObject* lst, Py_ssize_t i) noexcept
    Py_ssize_t oasr_list_size(PyObject* lst) noexcept


cdef inline Py_ssize_t id_at(const IdBuffer* buf, Py_ssize_t i) except -1:
    """The i-th id (0 <= i < buf.n) of what read_ids or read_ids_in_place read."""
    cdef Py_ssize_t value
    if buf.in_place == NULL:
        return buf.ids[i]
    # The list is read again each time: it may have changed while the GIL was let go.
    if (i < oasr_list_size(buf.in_place) and oasr_compact_id(oasr_list_item(buf.in_place, i), &value)
            and 0 <= value < buf.limit):
        return value
    return in_place_id(buf, i)  # a value of more digits, or ReadAgain
