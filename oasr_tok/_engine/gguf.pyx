# cython: language_level=3, boundscheck=True, wraparound=False, freethreading_compatible=True
"""The one hot loop of the GGUF reader: an array of length-prefixed strings (a vocabulary of
150k tokens and as many merges). Every length is checked against the bytes left before the
string is made; a bad one is reported by index, for the reader to name file, key and offset."""

cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)


def read_string_array(const unsigned char[:] data, Py_ssize_t pos, Py_ssize_t count, bint big_endian):
    """(strings, end offset) for `count` GGUF strings starting at `pos`; strings are decoded
    as UTF-8 with "surrogateescape" so that invalid bytes survive. Raises
    ValueError(index, offset, message) on the first string that does not fit."""
    cdef Py_ssize_t size = data.shape[0], index, k
    cdef unsigned long long length
    cdef list out = []
    cdef const unsigned char* base
    if size == 0:
        if count:
            raise ValueError(0, pos, "its length is cut off (truncated file)")
        return out, pos
    base = &data[0]
    for index in range(count):
        if pos < 0 or size - pos < 8:
            raise ValueError(index, pos, "its length is cut off (truncated file)")
        length = 0
        if big_endian:
            for k in range(8):
                length = (length << 8) | base[pos + k]
        else:
            for k in range(7, -1, -1):
                length = (length << 8) | base[pos + k]
        if length > <unsigned long long>(size - pos - 8):
            raise ValueError(index, pos, f"it claims {length} bytes but only {size - pos - 8} are left")
        pos += 8
        out.append(PyUnicode_DecodeUTF8(<const char*>base + pos, <Py_ssize_t>length, "surrogateescape"))
        pos += <Py_ssize_t>length
    return out, pos


def skip_string_array(const unsigned char[:] data, Py_ssize_t pos, Py_ssize_t count, bint big_endian):
    """The end offset of `count` GGUF strings starting at `pos`, every length checked, no
    string made (for arrays that are only read when needed). Errors as read_string_array."""
    cdef Py_ssize_t size = data.shape[0], index, k
    cdef unsigned long long length
    cdef const unsigned char* base
    if count == 0:
        return pos
    if size == 0:
        raise ValueError(0, pos, "its length is cut off (truncated file)")
    base = &data[0]
    for index in range(count):
        if pos < 0 or size - pos < 8:
            raise ValueError(index, pos, "its length is cut off (truncated file)")
        length = 0
        if big_endian:
            for k in range(8):
                length = (length << 8) | base[pos + k]
        else:
            for k in range(7, -1, -1):
                length = (length << 8) | base[pos + k]
        if length > <unsigned long long>(size - pos - 8):
            raise ValueError(index, pos, f"it claims {length} bytes but only {size - pos - 8} are left")
        pos += 8 + <Py_ssize_t>length
    return pos
