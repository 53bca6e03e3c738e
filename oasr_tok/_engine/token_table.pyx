# cython: language_level=3, boundscheck=True, wraparound=False
"""A table of one str per token id, filled on first use, and the lookup of many ids at once: what
a server's logprobs show per top-k id (oasr_tok.integrations.vllm.token_strings fills it with the
string vLLM shows for an id), for a step's k x batch ids in one call.

The strings are made by a Python function of a list of ids, called once for the ids the table
has not seen; the table keeps them (one reference each) and a flag per id: whether its string
ends in U+FFFD (vLLM re-decodes those with context). A lookup checks every id against the
table's size first (InvalidIdError naming it) and makes nothing but the lists it returns.
"""
from cpython.buffer cimport PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.string cimport memcpy

from oasr_tok._engine.ids cimport IdBuffer, read_ids, release_ids

from oasr_tok.errors import InvalidIdError

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_UCS4 PyUnicode_READ_CHAR(object, Py_ssize_t)

cdef int _one = 1
cdef bint _little = (<char*>&_one)[0] == 1


cdef class TokenTable:
    """One str per id of a vocabulary of `size` ids, made by `fill(list_of_ids) -> list[str]`
    (called with the ids not seen yet, once each) and kept.

    Example:
        >>> table = TokenTable(3, lambda ids: [f"<{i}>" for i in ids])
        >>> table.strings([2, 0, 2])
        ['<2>', '<0>', '<2>']
    """

    cdef Py_ssize_t size
    cdef PyObject** texts          # owned references; NULL: not made yet
    cdef unsigned char* ends_fffd  # 1 where the id's str ends in U+FFFD
    cdef object fill

    def __init__(self, Py_ssize_t size, fill):
        if size < 0:
            raise ValueError("a token table's size is a number of ids (>= 0)")
        if self.texts != NULL:
            raise TypeError("a TokenTable is made once")
        self.texts = <PyObject**>PyMem_Calloc(max(size, 1), sizeof(PyObject*))
        self.ends_fffd = <unsigned char*>PyMem_Calloc(max(size, 1), 1)
        if self.texts == NULL or self.ends_fffd == NULL:
            raise MemoryError()
        self.size = size
        self.fill = fill

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.texts != NULL:
            for i in range(self.size):
                Py_XDECREF(self.texts[i])
            PyMem_Free(self.texts)
        PyMem_Free(self.ends_fffd)

    @property
    def size(self):
        return self.size

    cdef int _bad(self, int64_t value, Py_ssize_t position) except -1:
        raise InvalidIdError(f"token id {value} at position {position} is out of range: "
                             f"valid ids are 0 ... {self.size - 1}")

    cdef int _make(self, list missing) except -1:
        """Fill the ids of `missing` (each in range, not made yet; duplicates allowed)."""
        cdef Py_ssize_t k, i
        wanted = sorted(set(missing))
        made = self.fill(wanted)
        if type(made) is not list or len(made) != len(wanted):
            raise TypeError(f"the token table's fill gave {type(made).__name__}, not a list of {len(wanted)} str")
        for k in range(len(wanted)):
            text = made[k]
            if type(text) is not str:
                raise TypeError(f"the token table's fill gave a {type(text).__name__} for id {wanted[k]}, not a str")
        for k in range(len(wanted)):
            i = wanted[k]
            text = made[k]
            if self.texts[i] == NULL:
                Py_INCREF(text)
                self.texts[i] = <PyObject*>text
                n = PyUnicode_GET_LENGTH(text)
                self.ends_fffd[i] = n > 0 and PyUnicode_READ_CHAR(text, n - 1) == 0xFFFD
        return 0

    def strings(self, ids):
        """The strings of `ids` (a list, tuple, or 1-D integer buffer), in order."""
        cdef IdBuffer buf
        cdef Py_ssize_t k, i
        cdef list out, missing = None
        read_ids(&buf, ids, self.size)
        try:
            for k in range(buf.n):
                if self.texts[buf.ids[k]] == NULL:
                    if missing is None:
                        missing = []
                    missing.append(buf.ids[k])
            if missing is not None:
                self._make(missing)
            out = PyList_New(buf.n)
            for k in range(buf.n):
                i = buf.ids[k]
                Py_INCREF(<object>self.texts[i])
                PyList_SET_ITEM(out, k, <object>self.texts[i])
        finally:
            release_ids(&buf)
        return out

    def fffd_positions(self, ids):
        """The positions in `ids` (ids already looked up) whose string ends in U+FFFD, in order:
        the few a logprobs row re-decodes with context (most rows have none or one)."""
        cdef IdBuffer buf
        cdef Py_ssize_t k
        cdef list out = []
        read_ids(&buf, ids, self.size)
        try:
            for k in range(buf.n):
                if self.texts[buf.ids[k]] == NULL:
                    raise ValueError(f"id {buf.ids[k]} has no string yet (look it up with strings first)")
                if self.ends_fffd[buf.ids[k]]:
                    out.append(k)
        finally:
            release_ids(&buf)
        return out

    def rows(self, list arrays):
        """For each 2-D integer array (rows x k; a NumPy array of any 4- or 8-byte integer type,
        or a list of id lists) in `arrays`: (its rows as lists of strings, bytes with 1 per row
        that holds a string ending in U+FFFD). Every id of every array is checked before any
        string is made; the arrays are read where they are (the buffer protocol)."""
        cdef Py_ssize_t a, r, c, i, n = len(arrays)
        cdef Grid* grids = <Grid*>PyMem_Calloc(max(n, 1), sizeof(Grid))
        cdef Py_ssize_t held = 0
        cdef list lists = [None] * n   # the arrays that are lists of rows, checked
        cdef list missing = None
        cdef list out, row, rows_out
        cdef Grid* g
        cdef bytearray flags
        if grids == NULL:
            raise MemoryError()
        try:
            # 1) every array read and checked, the unseen ids gathered
            for a in range(n):
                g = &grids[a]
                if _open_grid(arrays[a], g):
                    held = a + 1
                    for r in range(g.rows):
                        for c in range(g.cols):
                            i = _grid_id(g, r, c, self.size)
                            if i < 0:
                                raise InvalidIdError(f"token id {_grid_value(g, r, c)} at position {r * g.cols + c} "
                                                     f"is out of range: valid ids are 0 ... {self.size - 1}")
                            if self.texts[i] == NULL:
                                if missing is None:
                                    missing = []
                                missing.append(i)
                else:
                    held = a + 1
                    lists[a] = _checked_rows(arrays[a], self.size)
                    for row in <list>lists[a]:
                        for i in row:
                            if self.texts[i] == NULL:
                                if missing is None:
                                    missing = []
                                missing.append(i)
            if missing is not None:
                self._make(missing)
            # 2) the strings: borrowed from the table, one new reference each
            out = PyList_New(n)
            for a in range(n):
                g = &grids[a]
                if lists[a] is None:
                    rows_out = PyList_New(g.rows)
                    flags = bytearray(g.rows)
                    for r in range(g.rows):
                        row = PyList_New(g.cols)
                        for c in range(g.cols):
                            i = _grid_id(g, r, c, self.size)
                            Py_INCREF(<object>self.texts[i])
                            PyList_SET_ITEM(row, c, <object>self.texts[i])
                            if self.ends_fffd[i]:
                                flags[r] = 1
                        Py_INCREF(row)
                        PyList_SET_ITEM(rows_out, r, row)
                else:
                    rows_out = []
                    flags = bytearray(len(<list>lists[a]))
                    for r in range(len(<list>lists[a])):
                        row = []
                        for i in <list>(<list>lists[a])[r]:
                            row.append(<object>self.texts[i])
                            if self.ends_fffd[i]:
                                flags[r] = 1
                        rows_out.append(row)
                item = (rows_out, bytes(flags))
                Py_INCREF(item)
                PyList_SET_ITEM(out, a, item)
            return out
        finally:
            for a in range(held):
                if grids[a].open:
                    PyBuffer_Release(&grids[a].view)
            PyMem_Free(grids)


cdef struct Grid:
    Py_buffer view
    bint open
    Py_ssize_t rows, cols, stride0, stride1
    int itemsize
    bint signed


cdef bint _open_grid(object array, Grid* g) except -1:
    """Read `array` as a 2-D buffer of 4- or 8-byte integers in the machine's byte order (True,
    the buffer held in g until released), or not (False: read it as rows)."""
    cdef const char* fmt
    cdef char code
    if not PyObject_CheckBuffer(array):
        return False
    if PyObject_GetBuffer(array, &g.view, PyBUF_RECORDS_RO) < 0:
        return False
    g.open = True
    fmt = g.view.format
    if fmt == NULL:
        PyBuffer_Release(&g.view)
        g.open = False
        return False  # (unsigned bytes: read as rows)
    if fmt[0] in (b"@", b"=") or (fmt[0] == b"<" and _little):
        fmt += 1
    code = fmt[0]
    if g.view.ndim != 2:
        ndim = g.view.ndim
        PyBuffer_Release(&g.view)
        g.open = False
        raise InvalidIdError(f"a logprob id array has {ndim} dimensions, not 2 (rows x top-k)")
    if fmt[1] != 0 or code not in (b"i", b"I", b"l", b"L", b"q", b"Q") or g.view.itemsize not in (4, 8):
        PyBuffer_Release(&g.view)
        g.open = False
        return False
    g.rows, g.cols = g.view.shape[0], g.view.shape[1]
    g.stride0, g.stride1 = g.view.strides[0], g.view.strides[1]
    g.itemsize = <int>g.view.itemsize
    g.signed = code in (b"i", b"l", b"q")
    return True


cdef inline long long _grid_value(Grid* g, Py_ssize_t r, Py_ssize_t c) noexcept:
    cdef const char* p = <const char*>g.view.buf + r * g.stride0 + c * g.stride1
    cdef int32_t v32
    cdef uint32_t u32
    cdef int64_t v64
    if g.itemsize == 4:
        if g.signed:
            memcpy(&v32, p, 4)
            return v32
        memcpy(&u32, p, 4)
        return u32
    memcpy(&v64, p, 8)
    if not g.signed and v64 < 0:
        return -1  # (an unsigned 64-bit value past the signed range: out of range all the same)
    return v64


cdef inline Py_ssize_t _grid_id(Grid* g, Py_ssize_t r, Py_ssize_t c, Py_ssize_t size) noexcept:
    """The id at (r, c), or -1 when it is out of 0 ... size - 1."""
    cdef long long v = _grid_value(g, r, c)
    return <Py_ssize_t>v if 0 <= v < size else -1


cdef list _checked_rows(object array, Py_ssize_t size):
    """A list of id lists (or rows of another integer type), each checked against `size`."""
    cdef IdBuffer buf
    cdef Py_ssize_t k
    rows = []
    for r, ids in enumerate(array):
        try:
            read_ids(&buf, ids, size)
        except InvalidIdError as exc:
            raise InvalidIdError(f"logprob row {r}: {exc}") from None
        try:
            rows.append([buf.ids[k] for k in range(buf.n)])
        finally:
            release_ids(&buf)
    return rows
