# cython: language_level=3, boundscheck=True, wraparound=False
"""A table of one str per token id, filled on first use, and the lookup of many ids at once: what
a server's logprobs show per top-k id (oasr_tok.integrations.vllm.token_strings fills it with the
string vLLM shows for an id), for a step's k x batch ids in one call.

The strings are made by a Python function of a list of ids, called once for the ids the table
has not seen; the table keeps them (one reference each) and a flag per id: whether its string
ends in U+FFFD (vLLM re-decodes those with context). A lookup checks every id against the
table's size first (InvalidIdError naming it) and makes nothing but the lists it returns.
"""
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t

from oasr_tok._engine.ids cimport IdBuffer, read_ids, release_ids

from oasr_tok.errors import InvalidIdError

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_UCS4 PyUnicode_READ_CHAR(object, Py_ssize_t)


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

    def ends_in_fffd(self, ids):
        """1 per id (of ids already looked up) whose string ends in U+FFFD, else 0: bytes."""
        cdef IdBuffer buf
        cdef Py_ssize_t k
        read_ids(&buf, ids, self.size)
        try:
            marks = bytearray(buf.n)
            for k in range(buf.n):
                if self.texts[buf.ids[k]] == NULL:
                    raise ValueError(f"id {buf.ids[k]} has no string yet (look it up with strings first)")
                marks[k] = self.ends_fffd[buf.ids[k]]
        finally:
            release_ids(&buf)
        return bytes(marks)

    def rows(self, list arrays):
        """For each 2-D integer array (rows x k; an int64 or int32 NumPy array, or a list of id
        lists) in `arrays`: (its rows as lists of strings, bytes with 1 per row that holds a
        string ending in U+FFFD). Every id of every array is checked before any string is made."""
        cdef Py_ssize_t a, r, c, n_rows, n_cols, i
        cdef const int64_t[:, :] v64
        cdef const int32_t[:, :] v32
        cdef list grids = []
        cdef list missing = None
        cdef list out
        cdef list row
        cdef int64_t value
        # 1) every array read as a grid of ids (C memory, checked), the unseen ids gathered
        for a in range(len(arrays)):
            grid = _grid(arrays[a], self.size)
            grids.append(grid)
            if type(grid) is list:
                for r in range(len(<list>grid)):
                    for i in <list>(<list>grid)[r]:
                        if self.texts[i] == NULL:
                            if missing is None:
                                missing = []
                            missing.append(i)
                continue
            n_rows = grid.shape[0]
            n_cols = grid.shape[1]
            if grid.itemsize == 8:
                v64 = grid
                for r in range(n_rows):
                    for c in range(n_cols):
                        value = v64[r, c]
                        if value < 0 or value >= self.size:
                            self._bad(value, r * n_cols + c)
                        if self.texts[value] == NULL:
                            if missing is None:
                                missing = []
                            missing.append(<Py_ssize_t>value)
            else:
                v32 = grid
                for r in range(n_rows):
                    for c in range(n_cols):
                        value = v32[r, c]
                        if value < 0 or value >= self.size:
                            self._bad(value, r * n_cols + c)
                        if self.texts[value] == NULL:
                            if missing is None:
                                missing = []
                            missing.append(<Py_ssize_t>value)
        if missing is not None:
            self._make(missing)
        # 2) the strings: borrowed from the table, one new reference each
        out = PyList_New(len(grids))
        for a in range(len(grids)):
            grid = grids[a]
            if type(grid) is list:
                rows_out = []
                flags = bytearray(len(<list>grid))
                for r in range(len(<list>grid)):
                    row = []
                    for i in <list>(<list>grid)[r]:
                        row.append(<object>self.texts[i])
                        if self.ends_fffd[i]:
                            flags[r] = 1
                    rows_out.append(row)
            else:
                n_rows = grid.shape[0]
                n_cols = grid.shape[1]
                rows_out = PyList_New(n_rows)
                flags = bytearray(n_rows)
                if grid.itemsize == 8:
                    v64 = grid
                    for r in range(n_rows):
                        row = PyList_New(n_cols)
                        for c in range(n_cols):
                            i = <Py_ssize_t>v64[r, c]
                            Py_INCREF(<object>self.texts[i])
                            PyList_SET_ITEM(row, c, <object>self.texts[i])
                            if self.ends_fffd[i]:
                                flags[r] = 1
                        Py_INCREF(row)
                        PyList_SET_ITEM(rows_out, r, row)
                else:
                    v32 = grid
                    for r in range(n_rows):
                        row = PyList_New(n_cols)
                        for c in range(n_cols):
                            i = <Py_ssize_t>v32[r, c]
                            Py_INCREF(<object>self.texts[i])
                            PyList_SET_ITEM(row, c, <object>self.texts[i])
                            if self.ends_fffd[i]:
                                flags[r] = 1
                        Py_INCREF(row)
                        PyList_SET_ITEM(rows_out, r, row)
            item = (rows_out, bytes(flags))
            Py_INCREF(item)
            PyList_SET_ITEM(out, a, item)
        return out


cdef object _grid(object array, Py_ssize_t size):
    """A 2-D integer array as a memoryview of int64 or int32 (read where it is; its ids are
    checked by the caller), or, for anything else (a list of id lists, another dtype), a list of
    id lists checked against `size` here (InvalidIdError naming the row and the id)."""
    cdef const int64_t[:, :] v64
    cdef const int32_t[:, :] v32
    ndim = getattr(array, "ndim", None)
    if ndim == 2:
        try:
            v64 = array
            return v64
        except (ValueError, TypeError):
            pass
        try:
            v32 = array
            return v32
        except (ValueError, TypeError):
            pass
    if ndim is not None and ndim != 2:
        raise InvalidIdError(f"a logprob id array has {ndim} dimensions, not 2 (rows x top-k)")
    rows = []
    cdef IdBuffer buf
    cdef Py_ssize_t k
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
