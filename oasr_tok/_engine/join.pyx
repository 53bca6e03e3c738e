# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Gathering by id: a kind's decode as its pieces looked up by id and joined in C, the ids read
as check_ids reads them (_engine/ids.pyx: the same inputs, the same errors), with no Python int made
per id."""
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from libc.string cimport memcpy

from oasr_tok._engine.ids cimport ID_BLOCK, IdBuffer, id_at, id_block, read_ids, read_ids_in_place, release_ids

from oasr_tok._engine.ids import ReadAgain

cdef extern from "Python.h":
    bytes PyBytes_FromStringAndSize(const char*, Py_ssize_t)
    char* PyBytes_AS_STRING(object)
    Py_ssize_t PyBytes_GET_SIZE(object)
    PyObject** PySequence_Fast_ITEMS(object)
    bint PyBytes_CheckExact(PyObject*)
    const Py_ssize_t PY_SSIZE_T_MAX
    # The same macros, for the walk without the GIL: they read fields of a bytes object, which
    # never change, of pieces a tuple this call holds keeps alive.
    bint _is_bytes "PyBytes_CheckExact"(PyObject*) noexcept nogil
    Py_ssize_t _bytes_size "PyBytes_GET_SIZE"(PyObject*) noexcept nogil
    const char* _bytes_data "PyBytes_AS_STRING"(PyObject*) noexcept nogil


def gather(list table, ids, bytes skip=None):
    """[table[i] for i in ids if not skip[i]], the ids read as check_ids reads them (the same
    errors), where they are: no Python int is made per id, nor a list of them. `table` holds
    one entry per id; skip (one byte per id), when given, leaves out the ids whose byte is
    non-zero."""
    cdef Py_ssize_t n = PyList_GET_SIZE(table)
    cdef const unsigned char* drop = NULL
    cdef IdBuffer buf
    if skip is not None:
        if len(skip) != n:
            raise ValueError("gather: skip needs one byte per entry of the table")
        drop = skip
    read_ids_in_place(&buf, ids, n)
    try:
        return _gather(&buf, table, n, drop)
    except ReadAgain:
        pass
    finally:
        release_ids(&buf)
    read_ids(&buf, ids, n)
    try:
        return _gather(&buf, table, n, drop)
    finally:
        release_ids(&buf)


cdef list _gather(const IdBuffer* buf, list table, Py_ssize_t n, const unsigned char* drop):
    cdef Py_ssize_t j, k, start, count
    cdef Py_ssize_t scratch[ID_BLOCK]
    cdef const Py_ssize_t* block
    cdef list out = []
    if PyList_GET_SIZE(table) != n:  # an id's __index__ may have run
        raise RuntimeError("gather: the table changed while the ids were read")
    for start in range(0, buf.n, ID_BLOCK):
        count = min(<Py_ssize_t>ID_BLOCK, buf.n - start)
        block = id_block(buf, start, count, scratch)
        for j in range(count):
            k = block[j]
            if drop == NULL or not drop[k]:
                out.append(<object>PyList_GET_ITEM(table, k))
    return out


cdef enum:
    # A join of this many ids or more lets other threads run while it walks the ids and copies
    # (with pieces in a tuple, which nothing can change meanwhile): letting the GIL go and taking
    # it back costs about a microsecond, the join tens of thousands of them.
    RELEASED_IDS = 32768


def join_pieces(pieces, ids, first_pieces=None, bytes keeps_first=None, bytes stops=None):
    """b"".join(pieces[i] for i in ids), the ids read as check_ids reads them (the same errors),
    with no Python int made per id and no Py_buffer per piece (bytes.join fills one per item:
    80 MB of scratch for a million pieces). `pieces` is a list or tuple of bytes, one per id; a
    long join over tuples lets go of the GIL while it gathers.

    first_pieces (with keeps_first, one byte per id): a leading rule. While it is in force an
    id renders its first piece; the first id whose keeps_first byte is 0 ends it (rendering
    its first piece). stops (one byte per id): None comes back when any id's byte is non-zero,
    for the caller to render those ids another way. The rule itself is the caller's: this only
    gathers bytes."""
    cdef Py_ssize_t n
    cdef IdBuffer buf
    cdef const unsigned char* keeps = NULL
    cdef const unsigned char* stop = NULL
    if type(pieces) is not list and type(pieces) is not tuple:
        raise TypeError(f"join_pieces: pieces must be a list or tuple of bytes, not {type(pieces).__name__}")
    n = len(pieces)
    if first_pieces is not None:
        if type(first_pieces) is not type(pieces):
            raise TypeError("join_pieces: first_pieces must be of the type of pieces")
        if keeps_first is None or len(first_pieces) != n or len(keeps_first) != n:
            raise ValueError("join_pieces: first_pieces and keeps_first need one entry per piece")
        keeps = keeps_first
    if stops is not None:
        if len(stops) != n:
            raise ValueError("join_pieces: stops needs one byte per piece")
        stop = stops
    read_ids_in_place(&buf, ids, n)
    if type(pieces) is tuple and buf.n >= RELEASED_IDS:
        if buf.in_place != NULL or buf.column != NULL:
            # A copy: the walk without the GIL reads no Python object or buffer of the caller's.
            release_ids(&buf)
            read_ids(&buf, ids, n)
        try:
            return _join_released(&buf, <tuple>pieces, <tuple>first_pieces if keeps != NULL else None, keeps, stop)
        finally:
            release_ids(&buf)
    try:
        return _join(&buf, pieces, n, first_pieces, keeps, stop)
    except ReadAgain:
        pass
    finally:
        release_ids(&buf)
    read_ids(&buf, ids, n)
    try:
        return _join(&buf, pieces, n, first_pieces, keeps, stop)
    finally:
        release_ids(&buf)


cdef object _join_released(const IdBuffer* buf, tuple pieces, tuple first_pieces, const unsigned char* keeps,
                           const unsigned char* stop):
    """_join over ids read into C (buf.ids) and pieces in tuples: both passes walk without the
    GIL. Tuples and bytes cannot change, and this call holds the tuples; only the result is made
    with the GIL held."""
    cdef Py_ssize_t i, total = 0, size, lead = 0, n = buf.n
    cdef const Py_ssize_t* ids = buf.ids
    cdef PyObject** items = PySequence_Fast_ITEMS(pieces)
    cdef PyObject** first_items = PySequence_Fast_ITEMS(first_pieces) if first_pieces is not None else items
    cdef PyObject* piece
    cdef Py_ssize_t bad = -1  # the id of a piece that is not bytes
    cdef bint stopped = False, overflow = False
    cdef bytes out
    cdef char* dst
    with nogil:
        if keeps != NULL:
            while lead < n and keeps[ids[lead]]:
                lead += 1
            lead = min(lead + 1, n)  # the id that ends the rule renders its first piece too
        for i in range(n):
            if stop != NULL and stop[ids[i]]:
                stopped = True
                break
            piece = (first_items if i < lead else items)[ids[i]]
            if not _is_bytes(piece):
                bad = ids[i]
                break
            size = _bytes_size(piece)
            if size > PY_SSIZE_T_MAX - total:
                overflow = True
                break
            total += size
    if stopped:
        return None
    if bad >= 0:
        raise TypeError(f"join_pieces: piece {bad} is not bytes")
    if overflow:
        raise OverflowError("join_pieces: the joined pieces are too long")
    out = PyBytes_FromStringAndSize(NULL, total)
    dst = PyBytes_AS_STRING(out)
    with nogil:
        for i in range(n):
            piece = (first_items if i < lead else items)[ids[i]]
            size = _bytes_size(piece)
            memcpy(dst, _bytes_data(piece), size)
            dst += size
    return out


cdef object _join(const IdBuffer* buf, object pieces, Py_ssize_t n, object first_pieces, const unsigned char* keeps,
                  const unsigned char* stop):
    cdef Py_ssize_t i, j, k, total = 0, size, lead = 0, start, count
    cdef Py_ssize_t scratch[ID_BLOCK]
    cdef const Py_ssize_t* block
    cdef PyObject** items
    cdef PyObject** first_items
    cdef PyObject* piece
    cdef bytes out
    cdef char* dst
    # An id's __index__ may have run: the lists are ours, but check they still fit.
    if len(pieces) != n or (first_pieces is not None and len(first_pieces) != n):
        raise RuntimeError("join_pieces: the piece lists changed while the ids were read")
    if keeps != NULL:
        while lead < buf.n and keeps[id_at(buf, lead)]:
            lead += 1
        lead = min(lead + 1, buf.n)  # the id that ends the rule renders its first piece too
    # Borrowed: from here on no code runs that could change the lists (id_block runs none).
    items = PySequence_Fast_ITEMS(pieces)
    first_items = PySequence_Fast_ITEMS(first_pieces) if first_pieces is not None else items
    for start in range(0, buf.n, ID_BLOCK):
        count = min(<Py_ssize_t>ID_BLOCK, buf.n - start)
        block = id_block(buf, start, count, scratch)
        for j in range(count):
            k = block[j]
            if stop != NULL and stop[k]:
                if buf.in_place != NULL or buf.column != NULL:
                    for i in range(start + j + 1, buf.n):
                        id_at(buf, i)  # unchecked yet: a bad id after the stop is an error all the same
                return None
            piece = (first_items if start + j < lead else items)[k]
            if not PyBytes_CheckExact(piece):
                raise TypeError(f"join_pieces: piece {k} is not bytes")
            size = PyBytes_GET_SIZE(<object>piece)
            if size > PY_SSIZE_T_MAX - total:
                raise OverflowError("join_pieces: the joined pieces are too long")
            total += size
    out = PyBytes_FromStringAndSize(NULL, total)
    dst = PyBytes_AS_STRING(out)
    for start in range(0, buf.n, ID_BLOCK):
        count = min(<Py_ssize_t>ID_BLOCK, buf.n - start)
        block = id_block(buf, start, count, scratch)
        for j in range(count):
            piece = (first_items if start + j < lead else items)[block[j]]
            size = PyBytes_GET_SIZE(<object>piece)
            if size > total:  # (no code runs between the two passes; said, not assumed)
                raise RuntimeError("join_pieces: the pieces changed while they were joined")
            memcpy(dst, PyBytes_AS_STRING(<object>piece), size)
            dst += size
            total -= size
    if total:  # a buffer another thread wrote to between the passes: never bytes left unset
        raise RuntimeError("join_pieces: the ids changed while they were read")
    return out
