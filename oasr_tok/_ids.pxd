# Shared, inlined id validation for the compiled paths.
from cpython.list cimport PyList_GET_SIZE, PyList_GET_ITEM
from cpython.object cimport PyObject


cdef extern from "Python.h":
    bint PyLong_CheckExact(object)
    # Declared without an exception value: an overflow is cleared and reported as out of range.
    Py_ssize_t PyLong_AsSsize_t(object)
    void* PyErr_Occurred()
    void PyErr_Clear()


cdef inline list as_id_list(object ids):
    """ids as a list (no copy for a list; tuples, arrays and NumPy buffers are converted)."""
    if type(ids) is list:
        return <list>ids
    if type(ids) is tuple:
        return list(<tuple>ids)
    if isinstance(ids, (str, bytes)) or ids is None:
        from oasr_tok.errors import NonIntegerIdError
        raise NonIntegerIdError(f"ids must be a sequence of integer token ids, got {type(ids).__name__}")
    tolist = getattr(ids, "tolist", None)
    if tolist is not None:
        ids = tolist()
        if type(ids) is list:
            return <list>ids
    try:
        return list(ids)
    except TypeError:
        from oasr_tok.errors import NonIntegerIdError
        raise NonIntegerIdError(f"ids must be a sequence of integer token ids, got {type(ids).__name__}") from None


cdef extern from "_ids.h":
    bint oasr_small_id(PyObject* op, Py_ssize_t* out) noexcept
    PyObject** oasr_list_items(object lst) noexcept


cdef inline Py_ssize_t id_at(list ids, Py_ssize_t i, Py_ssize_t vocab_size) except -1:
    """The i-th id as a C integer, checked against 0 ... vocab_size - 1."""
    cdef PyObject* raw = PyList_GET_ITEM(ids, i)
    cdef Py_ssize_t value
    if oasr_small_id(raw, &value) and 0 <= value < vocab_size:
        return value
    cdef object item = <object>raw
    if PyLong_CheckExact(item):
        value = PyLong_AsSsize_t(item)
        if value == -1 and PyErr_Occurred() != NULL:
            PyErr_Clear()
    else:
        value = _slow_id(item, i, vocab_size)
    if value < 0 or value >= vocab_size:
        from oasr_tok.errors import InvalidIdError
        raise InvalidIdError(
            f"token id {item!r} at position {i} is out of range: valid ids are 0 ... {vocab_size - 1}"
        )
    return value


cdef inline Py_ssize_t _slow_id(object item, Py_ssize_t i, Py_ssize_t vocab_size) except -2:
    import operator
    if isinstance(item, float) or isinstance(item, (str, bytes)) or item is None:
        ok = False
    else:
        try:
            item = operator.index(item)
            ok = True
        except TypeError:
            ok = False
    if not ok:
        from oasr_tok.errors import NonIntegerIdError
        raise NonIntegerIdError(
            f"token id {item!r} at position {i} is not an integer: ids must be ints in 0 ... {vocab_size - 1}"
        )
    cdef Py_ssize_t value = PyLong_AsSsize_t(item)
    if value == -1 and PyErr_Occurred() != NULL:
        PyErr_Clear()
    return value


cdef inline list checked_ids(object ids, Py_ssize_t vocab_size):
    """ids validated against the vocabulary, as a list of Python ints."""
    cdef list lst = as_id_list(ids)
    cdef Py_ssize_t i, n = PyList_GET_SIZE(lst)
    cdef bint exact = True
    for i in range(n):
        id_at(lst, i, vocab_size)
        if not PyLong_CheckExact(<object>PyList_GET_ITEM(lst, i)):
            exact = False
    if not exact:
        import operator
        lst = [operator.index(x) for x in lst]
    return lst
