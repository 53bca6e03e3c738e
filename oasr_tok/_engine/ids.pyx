# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Reading token ids, for every entry point of every kind (docs/decoding.md § Id inputs).

Accepted: a list, tuple, range or other `collections.abc.Sequence` of ints (anything with
`__index__` except bool); any one-dimensional object with the buffer protocol and an integer
format (NumPy int8 ... uint64 arrays in any byte order and stride, `array.array`,
`memoryview`); an object with `__array__` (torch, JAX or CuPy-on-host tensors) that returns
such a buffer. Refused with NonIntegerIdError: str, bytes, bytearray (text, not ids), sets and
dicts (no order / keys), iterators (consumed by looking), bools, float or bool buffers, and
buffers that are not one-dimensional. Buffers are read in C, element by element through
their strides: no Python int is made per id.
"""
cimport cython
from cpython cimport array as carray
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_STRIDES, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New
from cpython.long cimport PyLong_FromLongLong, PyLong_FromSsize_t, PyLong_FromUnsignedLongLong
from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

import operator
from collections.abc import Sequence

from oasr_tok.errors import InvalidIdError, NonIntegerIdError

cdef extern from "Python.h":
    bint PyLong_CheckExact(object)
    bint PyBool_Check(object)
    # Declared without an exception value: an overflow is cleared by _small_int and reported
    # by _exact_int as out of range.
    Py_ssize_t _as_ssize_t "PyLong_AsSsize_t"(object)
    void* PyErr_Occurred()
    void PyErr_Clear()
    PyObject** PySequence_Fast_ITEMS(object)
    void Py_SET_SIZE(object, Py_ssize_t)
    const Py_ssize_t PY_SSIZE_T_MAX
    const Py_ssize_t PY_SSIZE_T_MIN

ctypedef fused integer:
    int8_t
    uint8_t
    int16_t
    uint16_t
    int32_t
    uint32_t
    int64_t
    uint64_t

cdef enum:
    ORDER_NATIVE = 0
    ORDER_LITTLE = 1
    ORDER_BIG = 2

cdef int _one = 1
cdef bint _host_little = (<char*>&_one)[0] == 1

# How a message shows a caller's object: never the whole of it (a 2-D array once gave a
# 150,000-character message).
cdef Py_ssize_t _SHOWN = 60


cdef str _shown(object value):
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__}>"
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


cdef str _what(object ids):
    return type(ids).__name__


cdef object _at(object error, object value, Py_ssize_t i):
    """`error` about the id `value` at position i, which it carries as .value and .position:
    a caller that names its ids otherwise (collapse_ctc's frames) words its own message."""
    error.value = value
    error.position = i
    return error


cdef object _out_of_range(object value, Py_ssize_t i, Py_ssize_t lo, Py_ssize_t hi):
    if lo == 0:
        return _at(InvalidIdError(
            f"token id {_shown(value)} at position {i} is out of range: valid ids are 0 ... {hi - 1}"), value, i)
    return _at(InvalidIdError(f"token id {_shown(value)} at position {i} is not a 64-bit integer"), value, i)


cdef object _not_integer(object value, Py_ssize_t i, Py_ssize_t lo, Py_ssize_t hi):
    rule = f"ids must be ints in 0 ... {hi - 1}" if lo == 0 else "ids must be ints"
    return _at(NonIntegerIdError(f"token id {_shown(value)} at position {i} is not an integer: {rule}"), value, i)


cdef object _not_ids(object ids, str why=""):
    return NonIntegerIdError(
        f"ids must be a sequence of integer token ids (list, tuple, range, or a 1-D integer array), "
        f"got {_what(ids)}{why}")


# -- the buffer that receives the ids -------------------------------------------------------

cdef Py_ssize_t* _reserve(IdBuffer* out, Py_ssize_t n) except NULL:
    if n <= SMALL_IDS:
        out.ids = out.small
        return out.small
    out.heap = <Py_ssize_t*>PyMem_Malloc(n * sizeof(Py_ssize_t))
    if out.heap == NULL:
        raise MemoryError()
    out.ids = out.heap
    return out.heap


cdef Py_ssize_t* _grow(IdBuffer* out, Py_ssize_t* capacity) except NULL:
    """Room for more ids than reserved: a list an id's __index__ lengthened while we read it."""
    cdef Py_ssize_t wanted = capacity[0] * 2
    cdef Py_ssize_t* grown
    if out.heap == NULL:
        grown = <Py_ssize_t*>PyMem_Malloc(wanted * sizeof(Py_ssize_t))
        if grown == NULL:
            raise MemoryError()
        memcpy(grown, out.small, capacity[0] * sizeof(Py_ssize_t))
    else:
        grown = <Py_ssize_t*>PyMem_Realloc(out.heap, wanted * sizeof(Py_ssize_t))
        if grown == NULL:
            raise MemoryError()
    out.heap = grown
    out.ids = grown
    capacity[0] = wanted
    return grown


cdef void release_ids(IdBuffer* buf) noexcept:
    PyMem_Free(buf.heap)
    buf.heap = NULL
    buf.ids = buf.small
    buf.n = 0
    Py_XDECREF(buf.in_place)
    buf.in_place = NULL
    if buf.column != NULL:
        buf.column = NULL
        PyBuffer_Release(&buf.view)


#: Lists at least this long are read in place by read_ids_in_place (shorter ones are copied:
#: the copy is on the stack or small, and their readers index buf.ids directly).
cdef Py_ssize_t IN_PLACE_IDS = 4096


class ReadAgain(RuntimeError):
    """id_at met an item of a list read in place that is not an exact int in range: the
    caller reads the ids again with read_ids (see _engine/ids.pxd). Never seen outside this package."""


cdef int read_ids_in_place(IdBuffer* out, object ids, Py_ssize_t vocab_size,
                           Py_ssize_t shortest_column=IN_PLACE_IDS) except -1:
    """read_ids, or for a long list or a buffer of 4- or 8-byte native integers (of
    shortest_column ids or more), the ids where they are, each checked as id_at reads it (see
    _engine/ids.pxd)."""
    out.heap = NULL
    out.ids = out.small
    out.limit = vocab_size
    out.in_place = NULL
    out.column = NULL
    if type(ids) is list and PyList_GET_SIZE(ids) >= IN_PLACE_IDS:
        out.n = PyList_GET_SIZE(ids)
        Py_INCREF(ids)
        out.in_place = <PyObject*>ids
        return 0
    if type(ids) is not list and type(ids) is not tuple and PyObject_CheckBuffer(ids) and not _refused(ids):
        if _column_in_place(out, ids, shortest_column):
            return 0
    return read_ids(out, ids, vocab_size)


cdef bint _column_in_place(IdBuffer* out, object ids, Py_ssize_t shortest) except -1:
    """Whether `ids` is a buffer read_ids_in_place reads where it is (then out holds its view)."""
    cdef Column col
    try:
        PyObject_GetBuffer(ids, &out.view, PyBUF_STRIDES | PyBUF_FORMAT)
    except (BufferError, TypeError, ValueError):
        return False  # read_ids words the refusal
    if (out.view.ndim != 1 or out.view.shape[0] < shortest
            or not _integer_format(out.view.format, out.view.itemsize, &col) or col.order != ORDER_NATIVE
            or col.itemsize < 4):
        PyBuffer_Release(&out.view)
        return False
    if col.itemsize == 8:
        out.column_kind = COLUMN_INT64 if col.is_signed else COLUMN_UINT64
    else:
        out.column_kind = COLUMN_INT32 if col.is_signed else COLUMN_UINT32
    out.n = out.view.shape[0]
    out.stride = out.view.strides[0] if out.view.strides != NULL else out.view.itemsize
    out.column = <const char*>out.view.buf
    return True


cdef Py_ssize_t in_place_id(const IdBuffer* buf, Py_ssize_t i) except -1:
    cdef object ids = <object>buf.in_place if buf.in_place != NULL else None
    cdef Py_ssize_t value
    if ids is None:
        raise ReadAgain(f"id {i} of the buffer is out of range")
    if i < PyList_GET_SIZE(ids):
        item = <object>PyList_GET_ITEM(ids, i)
        if PyLong_CheckExact(item) and _small_int(item, 0, buf.limit, &value):
            return value  # an exact int of more digits
    raise ReadAgain(f"item {i} of the id list is not an exact int in range, or the list changed")


cdef const Py_ssize_t* id_block(const IdBuffer* buf, Py_ssize_t start, Py_ssize_t count,
                                Py_ssize_t* scratch) except NULL:
    """The ids start ... start + count - 1 (within 0 ... buf.n; count <= ID_BLOCK), each checked
    as id_at checks it: buf.ids itself when the ids were copied, else `scratch` filled with
    them. A column is copied by one loop of its own integer type (no per-id dispatch on the
    type, and nothing between the loads for the compiler to fear), a value out of range
    raising ReadAgain as id_at does."""
    cdef Column col
    cdef Py_ssize_t j, got
    cdef PyObject** items
    if buf.in_place == NULL:
        if buf.column == NULL:
            return buf.ids + start
        col.base = buf.column + start * buf.stride
        col.n = count
        col.stride = buf.stride
        if buf.column_kind == COLUMN_INT64:
            got = _copy[int64_t](&col, scratch, 0, buf.limit, 0)
        elif buf.column_kind == COLUMN_INT32:
            got = _copy[int32_t](&col, scratch, 0, buf.limit, 0)
        elif buf.column_kind == COLUMN_UINT32:
            got = _copy[uint32_t](&col, scratch, 0, buf.limit, 0)
        else:
            got = _copy[uint64_t](&col, scratch, 0, buf.limit, 0)
        if got < count:
            raise ReadAgain(f"id {start + got} of the buffer is out of range")
        return scratch
    # A list read in place: no code runs here, so its length holds for the whole block.
    if start + count > oasr_list_size(buf.in_place):
        raise ReadAgain("the id list changed while it was read")
    items = PySequence_Fast_ITEMS(<object>buf.in_place) + start
    j = oasr_compact_ids(items, count, buf.limit, scratch)
    while j < count:
        scratch[j] = in_place_id(buf, start + j)  # a value of more digits, or ReadAgain
        # That may have made an error or an int, and so run a collection and a finalizer that
        # changed the list: its items are looked up again.
        if start + count > oasr_list_size(buf.in_place):
            raise ReadAgain("the id list changed while it was read")
        items = PySequence_Fast_ITEMS(<object>buf.in_place) + start
        j += 1
        j += oasr_compact_ids(items + j, count - j, buf.limit, scratch + j)
    return scratch


# -- Python objects, one at a time ----------------------------------------------------------

cdef inline bint _small_int(object item, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t* value) noexcept:
    """Whether an exact int is in lo ... hi - 1 (stored in value): the common case, without the
    exception handling of _exact_int (which then names a value that is not)."""
    cdef Py_ssize_t v
    if oasr_compact_id(<PyObject*>item, &v):
        value[0] = v
        return lo <= v < hi
    v = _as_ssize_t(item)
    if v == -1 and PyErr_Occurred() != NULL:
        PyErr_Clear()
        return False
    value[0] = v
    return lo <= v < hi


cdef inline Py_ssize_t _exact_int(object item, Py_ssize_t i, Py_ssize_t lo, Py_ssize_t hi) except? -1:
    # An exact int runs no user code; Cython reads small ones straight from their digits.
    cdef Py_ssize_t value
    try:
        value = item
    except OverflowError:
        raise _out_of_range(item, i, lo, hi) from None
    if value < lo or value >= hi:
        raise _out_of_range(item, i, lo, hi)
    return value


cdef Py_ssize_t _other_id(object item, Py_ssize_t i, Py_ssize_t lo, Py_ssize_t hi) except? -1:
    """Anything but an exact int: __index__ (which may run any code), bools and text refused."""
    if PyBool_Check(item) or item is None or isinstance(item, (float, str, bytes, bytearray)):
        raise _not_integer(item, i, lo, hi)
    try:
        number = operator.index(item)
    except TypeError:
        raise _not_integer(item, i, lo, hi) from None
    return _exact_int(int(number), i, lo, hi)


cdef int _read_list(IdBuffer* out, list ids, Py_ssize_t lo, Py_ssize_t hi) except -1:
    cdef Py_ssize_t i = 0, capacity = max(PyList_GET_SIZE(ids), <Py_ssize_t>SMALL_IDS)
    cdef Py_ssize_t* dst = _reserve(out, capacity)
    cdef Py_ssize_t value
    cdef object item
    # The length is read again on every step: an id's __index__ may shrink or grow the list
    # (as a Python for loop over it would see), and the item is held while it runs.
    while i < PyList_GET_SIZE(ids):
        item = <object>PyList_GET_ITEM(ids, i)
        if PyLong_CheckExact(item):
            if not _small_int(item, lo, hi, &value):
                value = _exact_int(item, i, lo, hi)
        else:
            value = _other_id(item, i, lo, hi)
        if i == capacity:
            dst = _grow(out, &capacity)
        dst[i] = value
        i += 1
    out.n = i
    return 0


cdef int _read_tuple(IdBuffer* out, tuple ids, Py_ssize_t lo, Py_ssize_t hi) except -1:
    cdef Py_ssize_t i, n = PyTuple_GET_SIZE(ids), value
    cdef Py_ssize_t* dst = _reserve(out, n)
    cdef object item
    for i in range(n):
        item = <object>PyTuple_GET_ITEM(ids, i)
        if PyLong_CheckExact(item):
            if not _small_int(item, lo, hi, &value):
                value = _exact_int(item, i, lo, hi)
        else:
            value = _other_id(item, i, lo, hi)
        dst[i] = value
    out.n = n
    return 0


# -- buffers --------------------------------------------------------------------------------

cdef struct Column:
    const char* base  # the first element
    Py_ssize_t n
    Py_ssize_t stride  # in bytes; negative for a reversed view
    Py_ssize_t itemsize
    bint is_signed
    int order


cdef int _integer_format(const char* fmt, Py_ssize_t itemsize, Column* col) noexcept:
    """1 if the buffer format is a single integer (struct-module syntax), filling col."""
    cdef char code
    if fmt == NULL:
        fmt = b"B"
    col.order = ORDER_NATIVE
    if fmt[0] == b"<":
        col.order = ORDER_LITTLE
        fmt += 1
    elif fmt[0] == b">" or fmt[0] == b"!":
        col.order = ORDER_BIG
        fmt += 1
    elif fmt[0] == b"@" or fmt[0] == b"=":
        fmt += 1
    code = fmt[0]
    if code == 0 or fmt[1] != 0:
        return 0
    if code in b"bhilqn":
        col.is_signed = True
    elif code in b"BHILQN":
        col.is_signed = False
    else:
        return 0
    if itemsize != 1 and itemsize != 2 and itemsize != 4 and itemsize != 8:
        return 0
    if (col.order == ORDER_LITTLE and _host_little) or (col.order == ORDER_BIG and not _host_little):
        col.order = ORDER_NATIVE
    col.itemsize = itemsize
    return 1


cdef Py_ssize_t _copy(const Column* col, Py_ssize_t* dst, Py_ssize_t lo, Py_ssize_t hi,
                      integer kind) noexcept nogil:
    """Copy a native-order column of `integer` into dst; the index of the first value outside
    lo ... hi - 1, or n when all are inside."""
    cdef Py_ssize_t i, x
    cdef integer v
    cdef const char* p = col.base
    for i in range(col.n):
        memcpy(&v, p, sizeof(integer))  # a load; memcpy because a buffer need not be aligned
        p += col.stride
        if integer is uint64_t:
            if v > <uint64_t>PY_SSIZE_T_MAX:
                return i
        x = <Py_ssize_t>v
        if x < lo or x >= hi:
            return i
        dst[i] = x
    return col.n


cdef object _value_at(const Column* col, Py_ssize_t i):
    """Element i as a Python int, in any byte order (for messages and the swapped path)."""
    cdef const unsigned char* p = <const unsigned char*>(col.base + i * col.stride)
    cdef uint64_t u = 0
    cdef Py_ssize_t k
    cdef bint big = col.order == ORDER_BIG or (col.order == ORDER_NATIVE and not _host_little)
    for k in range(col.itemsize):
        u = (u << 8) | p[k if big else col.itemsize - 1 - k]
    if col.is_signed and col.itemsize < 8 and (u >> (8 * col.itemsize - 1)) & 1:
        u |= ~((<uint64_t>1 << (8 * col.itemsize)) - 1)
    if col.is_signed:
        return PyLong_FromLongLong(<int64_t>u)
    return PyLong_FromUnsignedLongLong(u)


cdef Py_ssize_t _copy_column(const Column* col, Py_ssize_t* dst, Py_ssize_t lo, Py_ssize_t hi) except -2:
    cdef Py_ssize_t i
    cdef object value
    if col.order == ORDER_NATIVE:
        if col.itemsize == 8:
            return _copy[int64_t](col, dst, lo, hi, 0) if col.is_signed else _copy[uint64_t](col, dst, lo, hi, 0)
        if col.itemsize == 4:
            return _copy[int32_t](col, dst, lo, hi, 0) if col.is_signed else _copy[uint32_t](col, dst, lo, hi, 0)
        if col.itemsize == 2:
            return _copy[int16_t](col, dst, lo, hi, 0) if col.is_signed else _copy[uint16_t](col, dst, lo, hi, 0)
        return _copy[int8_t](col, dst, lo, hi, 0) if col.is_signed else _copy[uint8_t](col, dst, lo, hi, 0)
    for i in range(col.n):  # the other byte order: rare enough to go through a Python int
        value = _value_at(col, i)
        if not (lo <= value < hi):
            return i
        dst[i] = value
    return col.n


cdef int _open_buffer(object ids, Py_buffer* view) except -1:
    try:
        PyObject_GetBuffer(ids, view, PyBUF_STRIDES | PyBUF_FORMAT)
    except (BufferError, TypeError, ValueError) as exc:
        raise _not_ids(ids, f" (its buffer cannot be read: {_shown(str(exc))})") from None
    return 0


cdef str _shape(Py_buffer* view):
    cdef Py_ssize_t d
    return "(" + ", ".join([str(view.shape[d]) for d in range(view.ndim)]) + ("," if view.ndim == 1 else "") + ")"


cdef int _column_of(object ids, Py_buffer* view, Column* col, int ndim) except -1:
    fmt = view.format.decode("ascii", "replace") if view.format != NULL else "B"
    if not _integer_format(view.format, view.itemsize, col):
        raise _not_ids(ids, f" holding {_shown(fmt)} items (a float, bool or other non-integer format)")
    if view.ndim != ndim:
        raise _not_ids(ids, f" of {view.ndim} dimensions, shape {_shape(view)}")
    col.base = <const char*>view.buf
    if ndim == 1:
        col.n = view.shape[0]
        col.stride = view.strides[0] if view.strides != NULL else view.itemsize
    return 0


cdef int _read_buffer(IdBuffer* out, object ids, Py_ssize_t lo, Py_ssize_t hi) except -1:
    cdef Py_buffer view
    cdef Column col
    cdef Py_ssize_t bad
    cdef Py_ssize_t* dst
    _open_buffer(ids, &view)
    try:
        _column_of(ids, &view, &col, 1)
        dst = _reserve(out, col.n)
        bad = _copy_column(&col, dst, lo, hi)
        if bad < col.n:
            raise _out_of_range(_value_at(&col, bad), bad, lo, hi)
        out.n = col.n
    finally:
        PyBuffer_Release(&view)
    return 0


# -- the intake -----------------------------------------------------------------------------

cdef bint _refused(object ids):
    return ids is None or isinstance(ids, (str, bytes, bytearray, set, frozenset, dict, int, float))


cdef object _as_array(object ids):
    """What a tensor's __array__ gives (on the CPU; a device tensor's own error is reported)."""
    to_array = getattr(type(ids), "__array__", None)
    if to_array is None:
        return None
    try:
        return ids.__array__()
    except Exception as exc:
        raise _not_ids(ids, f" (its __array__ failed: {_shown(str(exc))}; move it to the CPU first)") from None


cdef int _read(IdBuffer* out, object ids, Py_ssize_t lo, Py_ssize_t hi) except -1:
    out.heap = NULL
    out.ids = out.small
    out.n = 0
    out.in_place = NULL
    out.column = NULL
    try:
        return _read_into(out, ids, lo, hi)
    except BaseException:
        release_ids(out)  # a caller only releases what was read: a bad id must not leak the copy
        raise


cdef bint _read_short_int_array(IdBuffer* out, object ids, Py_ssize_t lo, Py_ssize_t hi) noexcept:
    """A short array.array of C ints ("i": how SGLang's scheduler sends a step's ids), every id
    in range, read straight from its memory: True (out holds them). False for anything else,
    which the buffer path reads or refuses in its own words (the same ids either way)."""
    cdef carray.array values = <carray.array>ids
    cdef Py_ssize_t i, n = len(values), value
    if values.ob_descr.typecode != b"i" or n > SMALL_IDS:
        return False
    for i in range(n):
        value = values.data.as_ints[i]
        if value < lo or value >= hi:
            return False
        out.small[i] = value
    out.ids = out.small
    out.n = n
    return True


cdef int _read_into(IdBuffer* out, object ids, Py_ssize_t lo, Py_ssize_t hi) except -1:
    if type(ids) is list:
        return _read_list(out, <list>ids, lo, hi)
    if type(ids) is tuple:
        return _read_tuple(out, <tuple>ids, lo, hi)
    if type(ids) is carray.array and _read_short_int_array(out, ids, lo, hi):
        return 0
    if _refused(ids):
        raise _not_ids(ids)
    if PyObject_CheckBuffer(ids):
        return _read_buffer(out, ids, lo, hi)
    array = _as_array(ids)
    if array is not None:
        if not PyObject_CheckBuffer(array) or _refused(array):
            raise _not_ids(ids, f" (its __array__ gave {_what(array)}, which has no buffer)")
        return _read_buffer(out, array, lo, hi)
    if isinstance(ids, range) or (isinstance(ids, Sequence) and not isinstance(ids, (set, frozenset))):
        return _read_list(out, list(ids), lo, hi)
    raise _not_ids(ids)


cdef int read_ids(IdBuffer* out, object ids, Py_ssize_t vocab_size) except -1:
    return _read(out, ids, 0, vocab_size)


# -- for the Python side of the kinds -------------------------------------------------------

cdef bint _plain_list(list ids, Py_ssize_t vocab_size, const unsigned char* skip) noexcept:
    """Whether every item is an exact int in range and not skipped (then the list itself is
    the answer: no copy, and no user code can have run)."""
    cdef Py_ssize_t i, value
    cdef object item
    for i in range(PyList_GET_SIZE(ids)):
        item = <object>PyList_GET_ITEM(ids, i)
        if not (PyLong_CheckExact(item) and _small_int(item, 0, vocab_size, &value)):
            return False
        if skip != NULL and skip[value]:
            return False
    return True


cdef struct CachedInt:
    PyObject* value  # an int owned by the cache, or NULL
    Py_ssize_t key


cdef enum:
    INT_CACHE = 4096  # slots at most (a power of two): 64 KB, more than the distinct ids of most transcripts
    SHARED_INTS = 1 << 19  # values the shared table below covers at most (a 4 MB table)

cdef extern from *:
    """
    /* A refcount and a table that one thread fills while another reads it need a GIL. */
    #ifdef Py_GIL_DISABLED
    #define OASR_SHARED_INTS 0
    #else
    #define OASR_SHARED_INTS 1
    #endif
    """
    bint OASR_SHARED_INTS

# _shared_ints[v]: the int of value v that _int_list made first, kept for every later list (ints
# are immutable: lists share them, as a recogniser's own lists share theirs), or NULL. The per-call
# cache (the fallback below) makes an int for every id it has not met in that call: for the
# first thousand ids of a transcript most of them (about half, a measurable part of a
# decode: benchmarks/RESULTS.md § Measurements behind the code). The table covers the
# largest vocabulary read so far, up to SHARED_INTS ids; what it holds is at most one int per
# id of that vocabulary.
cdef PyObject** _shared_ints = NULL
cdef Py_ssize_t _shared_len = 0


@cython.final
cdef class _SharedIntsOwner:
    """The module's one instance owns _shared_ints: when the module is torn down (interpreter
    exit), it drops the table's ints and frees the table."""

    def __dealloc__(self):
        global _shared_ints, _shared_len
        cdef Py_ssize_t value
        for value in range(_shared_len):
            Py_XDECREF(_shared_ints[value])
        PyMem_Free(_shared_ints)
        _shared_ints = NULL
        _shared_len = 0


_shared_ints_owner = _SharedIntsOwner()


cdef bint _share_ints(Py_ssize_t limit) except -1:
    """Whether _shared_ints covers the values 0 ... limit - 1 (grown to, if it can)."""
    global _shared_ints, _shared_len
    cdef PyObject** grown
    if not OASR_SHARED_INTS or limit > SHARED_INTS:
        return False
    if limit > _shared_len:
        grown = <PyObject**>PyMem_Realloc(_shared_ints, limit * sizeof(PyObject*))
        if grown == NULL:
            return False  # the per-call cache still works
        memset(grown + _shared_len, 0, (limit - _shared_len) * sizeof(PyObject*))
        _shared_ints = grown
        _shared_len = limit
    return True


cdef PyObject* _new_shared_int(Py_ssize_t value) except NULL:
    """The shared table's int of `value`, made (the table's reference is never dropped)."""
    item = PyLong_FromSsize_t(value)
    Py_INCREF(item)
    _shared_ints[value] = <PyObject*>item
    return <PyObject*>item


cdef list _int_list(const IdBuffer* buf, const unsigned char* drop, Py_ssize_t vocab_size):
    """The ids (less those whose drop byte is set, with drop; each in 0 ... vocab_size - 1, as
    buf was read) as a list of Python ints, equal
    ids sharing one int: the shared table's, or where a vocabulary is too large for it (or the
    build has no GIL), a small direct-mapped cache of this call's recent ones. A transcript
    repeats a few thousand ids: a fresh int for each of a million costs an allocation and,
    when the list goes, a free (as much as some decodes that read the list cost), and
    spreads the list over 32 MB where a list of the same ints a recogniser built has a few.
    The list is made with room for every id and cut to the ones kept (no pass to count them)."""
    cdef Py_ssize_t j, n = buf.n, k = 0, value, slot, slots = 64, start, count
    cdef Py_ssize_t scratch[ID_BLOCK]
    cdef const Py_ssize_t* block
    cdef PyObject** items
    cdef CachedInt* cache = NULL
    cdef CachedInt* entry
    cdef PyObject* item
    cdef object fresh
    cdef bint shared = _share_ints(vocab_size)
    cdef list out = PyList_New(n)
    items = PySequence_Fast_ITEMS(out)
    if not shared and n >= 64:  # (below, the cache is not worth it)
        while slots < n and slots < INT_CACHE:  # no more slots than ints: zeroed and swept every call
            slots *= 2
        cache = <CachedInt*>PyMem_Calloc(slots, sizeof(CachedInt))
        if cache == NULL:
            raise MemoryError()
    try:
        for start in range(0, n, ID_BLOCK):
            count = min(<Py_ssize_t>ID_BLOCK, n - start)
            block = id_block(buf, start, count, scratch)
            for j in range(count):
                value = block[j]  # 0 <= value < vocab_size (as read)
                if drop != NULL and drop[value]:
                    continue
                if shared:
                    if <size_t>value >= <size_t>_shared_len:  # never: a bug, not a crash
                        raise AssertionError(f"id {value} outside the shared int table")
                    item = _shared_ints[value]
                    if item == NULL:
                        item = _new_shared_int(value)
                elif cache == NULL:
                    fresh = PyLong_FromSsize_t(value)  # (held by `fresh` until the next one)
                    item = <PyObject*>fresh
                else:
                    entry = &cache[value & (slots - 1)]
                    if entry.value == NULL or entry.key != value:
                        fresh = PyLong_FromSsize_t(value)
                        Py_XDECREF(entry.value)
                        Py_INCREF(fresh)  # the cache's reference
                        entry.value = <PyObject*>fresh
                        entry.key = value
                    item = entry.value
                Py_INCREF(<object>item)  # the list's reference
                items[k] = item
                k += 1
    finally:
        if cache != NULL:
            for slot in range(slots):
                Py_XDECREF(cache[slot].value)
            PyMem_Free(cache)
    Py_SET_SIZE(out, k)
    return out


def check_ids(ids, Py_ssize_t vocab_size, bytes skip=None):
    """`ids` as a list of ints, each in 0 ... vocab_size - 1 (InvalidIdError, a ValueError,
    naming the first offending id and its position otherwise; NonIntegerIdError for what is not
    an id sequence). With `skip` (one byte per id), the ids whose byte is non-zero are left out.
    A list that is already all that comes back as it is."""
    cdef const unsigned char* drop = NULL
    cdef IdBuffer buf
    if skip is not None:
        if len(skip) != vocab_size:
            raise ValueError("check_ids: skip must hold one byte per id")
        drop = skip
    if type(ids) is list and _plain_list(<list>ids, vocab_size, drop):
        return ids
    read_ids_in_place(&buf, ids, vocab_size)  # a long buffer is not copied first
    try:
        return _int_list(&buf, drop, vocab_size)
    except ReadAgain:
        pass
    finally:
        release_ids(&buf)
    read_ids(&buf, ids, vocab_size)
    try:
        return _int_list(&buf, drop, vocab_size)
    finally:
        release_ids(&buf)


def runtime_ids(ids, Py_ssize_t vocab_size, bytes skip=None):
    """check_ids for a reader that takes any sequence and iterates it once (the `tokenizers`
    runtime): a list that is already all that comes back as it is; anything else as a
    CheckedIds, which hands out the same ints check_ids' list would hold, one at a time,
    without that list. (Built, filled and freed, that list made an array come back slower than
    the list of the same ids.)"""
    cdef const unsigned char* drop = NULL
    if skip is not None:
        if len(skip) != vocab_size:
            raise ValueError("runtime_ids: skip must hold one byte per id")
        drop = skip
    if type(ids) is list:
        if _plain_list(<list>ids, vocab_size, drop):
            return ids
        return check_ids(ids, vocab_size, skip)  # a list of other ints: read once, as check_ids
    cdef CheckedIds out = CheckedIds.__new__(CheckedIds)
    out.source = ids
    out.skip = skip
    out.drop = drop
    read_ids_in_place(&out.buf, ids, vocab_size, 0)  # a column is read where it is, however short
    out.ready = True
    out.shared = _share_ints(vocab_size)
    return out


cdef Py_ssize_t _table_items(const Column* col, PyObject** items, Py_ssize_t limit,
                             const unsigned char* drop, Py_ssize_t* kept, integer kind) except -2:
    """items[...] = the shared table's ints (borrowed) of a native-order column of `integer`,
    less the ids whose drop byte is set (their count in kept); the index of the first value
    outside 0 ... limit - 1, or n when all are inside. The table covers limit (_share_ints)."""
    cdef Py_ssize_t i, x, k = 0
    cdef integer v
    cdef const char* p = col.base
    cdef PyObject** table = _shared_ints
    cdef PyObject* item
    if limit > _shared_len:  # never: a bug, not a crash
        raise AssertionError("the shared int table does not cover the vocabulary")
    for i in range(col.n):
        memcpy(&v, p, sizeof(integer))  # a load; memcpy because a buffer need not be aligned
        p += col.stride
        if integer is uint64_t:
            if v > <uint64_t>PY_SSIZE_T_MAX:
                kept[0] = k
                return i
        x = <Py_ssize_t>v
        if x < 0 or x >= limit:
            kept[0] = k
            return i
        if drop != NULL and drop[x]:
            continue
        item = table[x]
        if item == NULL:
            item = _new_shared_int(x)
            table = _shared_ints  # (making an int may run code that grew the table)
        items[k] = item
        k += 1
    kept[0] = k
    return col.n


@cython.no_gc  # what it holds (the caller's ids, a bytes) cannot lead back to it
@cython.freelist(4)
cdef class CheckedIds:
    """The checked ids of one input as Python ints (equal ids share the shared table's int),
    less the skipped ones, for one pass: a sequence only as far as the runtime's reader needs
    (its length is the number of ids read, an upper bound of what comes out). A buffer is read
    where it is, a block of ids at a time, each id checked as it comes: a bad one raises
    InvalidIdError from inside that reader, which passes a ValueError through as it is."""
    cdef IdBuffer buf
    cdef bint ready
    cdef bint shared  # items borrowed from the shared table (else owned by the block)
    cdef object source
    cdef bytes skip  # holds `drop`
    cdef const unsigned char* drop
    cdef Py_ssize_t read  # ids of buf read into blocks so far
    cdef Py_ssize_t j  # the next of items[0 ... count - 1]
    cdef Py_ssize_t count
    cdef PyObject* items[ID_BLOCK]  # the ints of the block's ids that are not skipped
    cdef Py_ssize_t scratch[ID_BLOCK]

    def __dealloc__(self):
        self._drop_items()
        if self.ready:
            release_ids(&self.buf)

    def __len__(self):
        return self.buf.n if self.ready else 0

    def __getitem__(self, key):
        raise TypeError("CheckedIds is read by iterating it once")

    def __iter__(self):
        return self

    def __next__(self):
        # The runtime's own walk over a list costs little more than a load an id: this is kept
        # to one, the ids' checks and ints being made a block at a time by _next_block.
        if self.j == self.count and not self._next_block():
            raise StopIteration  # (Cython returns NULL here: no exception is made)
        self.j += 1
        return <object>self.items[self.j - 1]  # (a new reference)

    cdef void _drop_items(self) noexcept:
        cdef Py_ssize_t k
        if not self.shared:
            for k in range(self.count):
                Py_XDECREF(self.items[k])
        self.j = self.count = 0

    cdef bint _next_block(self) except -1:
        """Reads blocks of ids until one holds an id not skipped: False at the end."""
        cdef Py_ssize_t k, n, value, kept, got
        cdef const Py_ssize_t* block = NULL
        cdef Column col
        cdef object fresh
        self._drop_items()
        while self.ready and self.read < self.buf.n:
            n = min(<Py_ssize_t>ID_BLOCK, self.buf.n - self.read)
            kept = 0
            if self.shared and self.buf.column != NULL:
                # A column read where it is: each id checked and turned into its int in one
                # loop of the column's own type (not copied into a block first).
                col.base = self.buf.column + self.read * self.buf.stride
                col.n = n
                col.stride = self.buf.stride
                if self.buf.column_kind == COLUMN_INT64:
                    got = _table_items[int64_t](&col, self.items, self.buf.limit, self.drop, &kept, 0)
                elif self.buf.column_kind == COLUMN_INT32:
                    got = _table_items[int32_t](&col, self.items, self.buf.limit, self.drop, &kept, 0)
                elif self.buf.column_kind == COLUMN_UINT32:
                    got = _table_items[uint32_t](&col, self.items, self.buf.limit, self.drop, &kept, 0)
                else:
                    got = _table_items[uint64_t](&col, self.items, self.buf.limit, self.drop, &kept, 0)
                if got < n:
                    self._bad_block()
            else:
                try:
                    block = id_block(&self.buf, self.read, n, self.scratch)
                except ReadAgain:
                    self._bad_block()
                if self.shared:  # (the ids in block are checked: this finds no bad one)
                    col.base = <const char*>block
                    col.n = n
                    col.stride = sizeof(Py_ssize_t)
                    if sizeof(Py_ssize_t) == 8:
                        _table_items[int64_t](&col, self.items, self.buf.limit, self.drop, &kept, 0)
                    else:
                        _table_items[int32_t](&col, self.items, self.buf.limit, self.drop, &kept, 0)
                else:
                    for k in range(n):
                        value = block[k]
                        if self.drop != NULL and self.drop[value]:
                            continue
                        fresh = PyLong_FromSsize_t(value)
                        Py_INCREF(fresh)  # the block's reference, dropped with the block
                        self.items[kept] = <PyObject*>fresh
                        kept += 1
                        self.count = kept  # (for _drop_items, should the next int fail)
            self.read += n
            self.count = kept
            if kept:
                return True
        return False

    cdef void _bad_block(self) except *:
        # A column read in place holds an id out of range: read_ids names it, as check_ids does.
        cdef IdBuffer again
        self.read = self.buf.n  # (nothing more comes out)
        read_ids(&again, self.source, self.buf.limit)
        release_ids(&again)
        raise InvalidIdError("an id of the buffer changed to one out of range while it was read")


# -- batches --------------------------------------------------------------------------------

cdef object _row(const Py_ssize_t* ids, Py_ssize_t n):
    """A row as a compact int64 memoryview (read back through the buffer path)."""
    cdef bytearray data = bytearray(n * 8)
    cdef int64_t* p = <int64_t*><char*>data
    cdef Py_ssize_t i
    for i in range(n):
        p[i] = ids[i]
    return memoryview(data).cast("q")


cdef object _cut(object row, Py_ssize_t r, object length, object pad_id):
    """One row, cut to its length and stripped of trailing padding."""
    cdef IdBuffer buf
    cdef Py_ssize_t n, pad = 0
    try:
        _read(&buf, row, PY_SSIZE_T_MIN, PY_SSIZE_T_MAX)
    except NonIntegerIdError as exc:
        raise NonIntegerIdError(f"batch row {r}: {exc}") from None
    except InvalidIdError as exc:
        raise InvalidIdError(f"batch row {r}: {exc}") from None
    try:
        n = buf.n
        if length is not None:
            if length > n:
                raise InvalidIdError(f"batch row {r} has {n} ids, fewer than its length {length}")
            n = length
        if pad_id is not None:
            pad = pad_id
            while n and buf.ids[n - 1] == pad:
                n -= 1
        return _row(buf.ids, n)
    finally:
        release_ids(&buf)


cdef list _rows_of_buffer(object batch, object source):
    cdef Py_buffer view
    cdef Column col
    cdef Py_ssize_t r, bad
    cdef IdBuffer buf
    cdef Py_ssize_t* dst
    cdef list rows = []
    _open_buffer(source, &view)
    try:
        if view.ndim == 1:
            raise _not_ids(batch, ": a batch is a 2-D array or a sequence of id sequences, this is one sequence")
        _column_of(batch, &view, &col, 2)
        col.n = view.shape[1]
        col.stride = view.strides[1]
        buf.heap = NULL
        buf.in_place = NULL
        buf.column = NULL
        dst = _reserve(&buf, col.n)
        try:
            for r in range(view.shape[0]):
                col.base = <const char*>view.buf + r * view.strides[0]
                bad = _copy_column(&col, dst, PY_SSIZE_T_MIN, PY_SSIZE_T_MAX)
                if bad < col.n:
                    raise InvalidIdError(f"batch row {r}: {_out_of_range(_value_at(&col, bad), bad, -1, 0)}")
                rows.append(_row(buf.ids, col.n))
        finally:
            release_ids(&buf)
    finally:
        PyBuffer_Release(&view)
    return rows


def batch_rows(batch, lengths=None, pad_id=None):
    """The hypotheses of `batch`: a sequence of id sequences (an n-best list, a list of 1-D
    arrays) or a 2-D integer array, one row per hypothesis. `lengths` (one per row) cuts each
    row to its length; then `pad_id` strips the row's trailing run of that id (the -1 /
    ignore_id padding ESPnet, WeNet and NeMo collate into). Rows are not checked against a
    vocabulary here: decode does that, naming the id."""
    cdef list rows
    cdef Py_ssize_t r
    if pad_id is not None:
        if PyBool_Check(pad_id):
            raise NonIntegerIdError("pad_id must be an integer id, got a bool")
        try:
            pad_id = operator.index(pad_id)
        except TypeError:
            raise NonIntegerIdError(f"pad_id must be an integer id, got {_shown(pad_id)}") from None
        if not -(1 << 63) <= pad_id < (1 << 63):
            raise InvalidIdError(f"pad_id {_shown(pad_id)} is outside the range any id can have (a 64-bit integer)")
    if type(batch) is list or type(batch) is tuple:
        rows = list(batch)
    elif getattr(getattr(batch, "dtype", None), "kind", None) == "O" and getattr(batch, "ndim", 0) == 1:
        rows = list(batch)  # a 1-D object array of id lists (a Ray / pandas column): one row each
    elif _refused(batch):
        raise _not_ids(batch)
    elif PyObject_CheckBuffer(batch):
        rows = _rows_of_buffer(batch, batch)
    elif _as_array(batch) is not None:
        rows = _rows_of_buffer(batch, _as_array(batch))
    elif isinstance(batch, Sequence):
        rows = list(batch)
    else:
        raise _not_ids(batch)
    if lengths is None and pad_id is None:
        return rows
    cdef list cuts = [None] * len(rows)
    if lengths is not None:
        try:
            cuts = check_ids(lengths, PY_SSIZE_T_MAX)
        except InvalidIdError as exc:
            raise type(exc)(f"lengths: {exc}") from None
        if len(cuts) != len(rows):
            raise InvalidIdError(f"lengths has {len(cuts)} entries for {len(rows)} batch rows")
    return [_cut(rows[r], r, cuts[r], pad_id) for r in range(len(rows))]


cdef int some_address_twice(list states, Py_ssize_t n) except -1:
    """1 when one object is given for two streams (it would be prepared twice and advanced
    twice over), else 0: an open-addressing set of the n addresses (linear in n; a sort was
    a fifth of a 1,024-stream step)."""
    cdef size_t size = 16, mask, slot, address
    cdef size_t* seen
    cdef Py_ssize_t k
    while size < <size_t>(2 * n):
        size <<= 1
    mask = size - 1
    seen = <size_t*>PyMem_Calloc(size, sizeof(size_t))
    if seen == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            address = <size_t>PyList_GET_ITEM(states, k)
            slot = ((address >> 4) * <size_t>0x9E3779B97F4A7C15) & mask  # (objects are 16-byte aligned)
            while seen[slot] != 0:
                if seen[slot] == address:
                    return 1
                slot = (slot + 1) & mask
            seen[slot] = address
        return 0
    finally:
        PyMem_Free(seen)
