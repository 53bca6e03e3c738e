# The one intake of token ids for compiled code (implemented in _engine/ids.pyx; the rules of what is
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
# raises ReadAgain (oasr_tok._engine.ids): the caller drops what it made and walks again over
# read_ids, which copies the ids and names a bad one. So the walk must have no effect the
# caller cannot drop, and a function that stops early (join_pieces at a stop) reads the rest
# first, so that a bad id anywhere is still an error. A long one-dimensional buffer of 4- or
# 8-byte integers in the machine's byte order is read in place the same way (`column`): no
# 8 MB copy of a million int64 ids, each value checked as it is read (another thread may
# write to the array while it is read). An IdBuffer filled by hand rather than by read_ids /
# read_ids_in_place must set heap, in_place and column to NULL before release_ids sees it.
#
# A walk over many ids reads them a block at a time with id_block (ID_BLOCK ids into a scratch
# array on the stack, each checked as id_at checks it, ReadAgain included): a column is copied by
# one loop of its own integer type and a list by one loop over its items, so the walk's own loop
# indexes a plain C array, with no per-id test of what the ids are stored in. (Read one id at a
# time through id_at, a NumPy int64 array cost more than the list of the same ids.)

cdef enum:
    SMALL_IDS = 16  # a streamed chunk this short needs no heap allocation
    ID_BLOCK = 256  # ids id_block hands over at a time (a scratch array of them lives on the stack)

cdef enum:  # IdBuffer.column_kind
    COLUMN_INT64 = 1
    COLUMN_INT32 = 2
    COLUMN_UINT32 = 3
    COLUMN_UINT64 = 4

from cpython.object cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef struct IdBuffer:
    const Py_ssize_t* ids  # n checked ids (points at `small` or `heap`); not with `in_place`
    Py_ssize_t n
    Py_ssize_t* heap       # owned, or NULL
    PyObject* in_place     # a list read where it is (a reference held), or NULL
    Py_ssize_t limit       # with in_place or column: the vocabulary size its ids are checked against
    const char* column     # a buffer read where it is (its first id), or NULL
    Py_ssize_t stride      # with column: bytes from one id to the next (negative when reversed)
    int column_kind        # with column: a COLUMN_* (native byte order)
    Py_buffer view         # with column: the caller's buffer, held until release_ids
    Py_ssize_t small[SMALL_IDS]

cdef int read_ids(IdBuffer* out, object ids, Py_ssize_t vocab_size) except -1
cdef int read_ids_in_place(IdBuffer* out, object ids, Py_ssize_t vocab_size, Py_ssize_t shortest_column=*) except -1
cdef void release_ids(IdBuffer* buf) noexcept
# 1 when one object stands twice among the first n items of a list of streams, else 0.
cdef int some_address_twice(list states, Py_ssize_t n) except -1
cdef Py_ssize_t in_place_id(const IdBuffer* buf, Py_ssize_t i) except -1
cdef const Py_ssize_t* id_block(const IdBuffer* buf, Py_ssize_t start, Py_ssize_t count,
                                Py_ssize_t* scratch) except NULL


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
        /* Py_SIZE is public; a one-digit int's value through the public call, which cannot
           fail for it (no private struct field is read). */
        switch (Py_SIZE(op)) {
        case 0: *out = 0; return 1;
        case 1: *out = PyLong_AsSsize_t(op); return 1;
        default: return 0;
        }
    #endif
    }
    /* out[j] = the value of items[j], for j < count, while each is an exact int of at most one
       digit in 0 ... limit - 1; returns how many were (count when all were). The type and the
       limit are locals: a store to `out` cannot change them, so they are not read again per id. */
    static inline Py_ssize_t oasr_compact_ids(PyObject *const *items, Py_ssize_t count, Py_ssize_t limit,
                                              Py_ssize_t *out)
    {
        PyTypeObject *const long_type = &PyLong_Type;
        Py_ssize_t j, value;
        for (j = 0; j < count; j++) {
            PyObject *op = items[j];
            if (Py_TYPE(op) != long_type) return j;
    #if PY_VERSION_HEX >= 0x030C0000
            if (!PyUnstable_Long_IsCompact((PyLongObject *)op)) return j;
            value = PyUnstable_Long_CompactValue((PyLongObject *)op);
    #else
            switch (Py_SIZE(op)) {
            case 0: value = 0; break;
            case 1: value = PyLong_AsSsize_t(op); break;
            default: return j;
            }
    #endif
            if ((size_t)value >= (size_t)limit) return j;
            out[j] = value;
        }
        return count;
    }
    /* list[i], borrowed, for 0 <= i < len(list) (the caller checks). */
    static inline PyObject *oasr_list_item(PyObject *list, Py_ssize_t i) { return PyList_GET_ITEM(list, i); }
    static inline Py_ssize_t oasr_list_size(PyObject *list) { return PyList_GET_SIZE(list); }
    """
    bint oasr_compact_id(PyObject* op, Py_ssize_t* out) noexcept
    Py_ssize_t oasr_compact_ids(PyObject** items, Py_ssize_t count, Py_ssize_t limit, Py_ssize_t* out) noexcept
    PyObject* oasr_list_item(PyObject* lst, Py_ssize_t i) noexcept
    Py_ssize_t oasr_list_size(PyObject* lst) noexcept


cdef inline Py_ssize_t id_at(const IdBuffer* buf, Py_ssize_t i) except -1:
    """The i-th id (0 <= i < buf.n) of what read_ids or read_ids_in_place read."""
    cdef Py_ssize_t value
    if buf.in_place == NULL:
        if buf.column == NULL:
            return buf.ids[i]
        return column_id(buf, i)
    # The list is read again each time: it may have changed while the GIL was let go.
    if (i < oasr_list_size(buf.in_place) and oasr_compact_id(oasr_list_item(buf.in_place, i), &value)
            and 0 <= value < buf.limit):
        return value
    return in_place_id(buf, i)  # a value of more digits, or ReadAgain


cdef inline Py_ssize_t column_id(const IdBuffer* buf, Py_ssize_t i) except -1:
    cdef const char* p = buf.column + i * buf.stride
    cdef int64_t v64
    cdef int32_t v32
    cdef uint32_t u32
    cdef uint64_t u64
    cdef Py_ssize_t value
    # memcpy: a load (a buffer need not be aligned)
    if buf.column_kind == COLUMN_INT64:
        memcpy(&v64, p, 8)
        value = <Py_ssize_t>v64
    elif buf.column_kind == COLUMN_INT32:
        memcpy(&v32, p, 4)
        value = v32
    elif buf.column_kind == COLUMN_UINT32:
        memcpy(&u32, p, 4)
        value = u32
    else:
        memcpy(&u64, p, 8)
        value = <Py_ssize_t>u64 if u64 < <uint64_t>buf.limit else -1
    if 0 <= value < buf.limit:
        return value
    return in_place_id(buf, i)  # ReadAgain
