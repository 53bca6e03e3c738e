# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""A load-time helper of the byte-level kinds: a whole vocabulary's token strings turned into
the bytes the ByteLevel decoder renders for each, in one C loop (oasr_tok/kinds/_bytelevel.py
holds the alphabet and calls it)."""
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport Py_INCREF

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_ssize_t PyBytes_GET_SIZE(object)
    char* PyBytes_AS_STRING(object)
    bytes PyBytes_FromStringAndSize(const char*, Py_ssize_t)


def byte_level_pieces(list tokens, bytes in_alphabet, bytes byte_of):
    """The bytes the ByteLevel decoder renders for each token string (b"" for None): each
    character's byte when every character is in the alphabet, else the token's own UTF-8.
    For each code point below len(in_alphabet): whether it is in the alphabet (1 or 0), and
    its byte (_bytelevel.py builds both; its token_bytes says the same for one token). A whole
    vocabulary is converted at load, a tenth of what a str.translate per token costs
    (benchmarks/RESULTS.md § Measurements behind the code)."""
    cdef Py_ssize_t n = PyList_GET_SIZE(tokens), i, k, size, capacity = 0
    cdef Py_ssize_t limit = PyBytes_GET_SIZE(in_alphabet)
    cdef const unsigned char* member = <const unsigned char*>PyBytes_AS_STRING(in_alphabet)
    cdef const unsigned char* table = <const unsigned char*>PyBytes_AS_STRING(byte_of)
    cdef list out
    cdef object token, piece
    cdef str text
    cdef Py_UCS4 c
    cdef unsigned char* buffer = NULL
    cdef unsigned char* grown
    cdef bint mapped
    if PyBytes_GET_SIZE(byte_of) != limit:
        raise ValueError("in_alphabet and byte_of must have one entry per code point each")
    out = PyList_New(n)
    try:
        for i in range(n):
            token = <object>PyList_GET_ITEM(tokens, i)
            if token is None:
                piece = b""
            else:
                if type(token) is not str:
                    raise TypeError(f"byte_level_pieces: token {i} is a {type(token).__name__}, not a str or None")
                text = <str>token
                size = PyUnicode_GET_LENGTH(text)
                if size > capacity:
                    grown = <unsigned char*>PyMem_Realloc(buffer, size)
                    if grown == NULL:
                        raise MemoryError()
                    buffer, capacity = grown, size
                mapped = True
                k = 0
                for c in text:
                    if c >= <Py_UCS4>limit or not member[c]:
                        mapped = False
                        break
                    buffer[k] = table[c]
                    k += 1
                piece = PyBytes_FromStringAndSize(<const char*>buffer, size) if mapped else text.encode("utf-8")
            Py_INCREF(piece)
            PyList_SET_ITEM(out, i, piece)
    finally:
        PyMem_Free(buffer)
    return out
