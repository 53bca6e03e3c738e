# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""A load-time helper of the tiktoken-format kinds: a rank file (`base64(token bytes) rank` per
line, the ranks counting up from 0: openai-whisper's .tiktoken, Meta's Llama 3 / 4
tokenizer.model, Kimi-Audio's tiktoken.model) read in one C loop (oasr_tok/kinds/_ranks.py
calls it). In Python the lines, their base64 and their checks cost three times what building
tiktoken's own Encoding from the ranks costs; here they cost a tenth of it.

The rules are those the readers of these files apply: a line is two whitespace-separated
fields; the token is base64 as the lenient decoder the readers use takes it (only base64
characters and at most two "=" at the end; "=" alone is the empty token, openai-whisper's rank
50256); the rank is the line's number counting from 0; no two ranks have the same bytes. A
byte-order mark before the first line is not part of it. Every refusal is a MalformedAssetError
naming the file and the line.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_Append
from cpython.object cimport PyObject

from oasr_tok.errors import MalformedAssetError

cdef extern from "Python.h":
    bytes PyBytes_FromStringAndSize(const char*, Py_ssize_t)

# The value of each base64 character, 64 for "=", 255 for any other byte.
cdef unsigned char _VALUE[256]


cdef void _fill_values() noexcept:
    cdef int c
    for c in range(256):
        _VALUE[c] = 255
    for c in range(26):
        _VALUE[ord("A") + c] = c
        _VALUE[ord("a") + c] = 26 + c
    for c in range(10):
        _VALUE[ord("0") + c] = 52 + c
    _VALUE[ord("+")] = 62
    _VALUE[ord("/")] = 63
    _VALUE[ord("=")] = 64


_fill_values()


cdef inline bint _space(unsigned char c) noexcept nogil:
    # str.split()'s whitespace among the bytes a line of this format can hold
    return c == 32 or c == 9 or c == 11 or c == 12 or c == 13 or c == 0x1C or c == 0x1D or c == 0x1E or c == 0x1F


cdef Py_ssize_t _decode(const unsigned char* text, Py_ssize_t n, unsigned char* out) noexcept nogil:
    """The bytes of base64 `text` into `out` (room for n * 3 / 4 + 3), as the lenient decoder
    takes a token of base64 characters with at most two "=" at its end; -1 for anything else
    (another character, "=" inside, a padding the decoder refuses)."""
    cdef Py_ssize_t data = n, k, written = 0
    cdef unsigned int quad = 0, value
    cdef int pads
    while data > 0 and text[data - 1] == 61:  # "="
        data -= 1
    pads = <int>(n - data)
    if pads > 2:
        return -1
    for k in range(data):
        value = _VALUE[text[k]]
        if value >= 64:
            return -1
        quad = (quad << 6) | value
        if k % 4 == 3:
            out[written] = <unsigned char>(quad >> 16)
            out[written + 1] = <unsigned char>(quad >> 8)
            out[written + 2] = <unsigned char>quad
            written += 3
            quad = 0
    # What the lenient decoder makes of the last, partial group: 2 characters need "==", 3 need
    # "=" (more is ignored), 1 is refused; a whole group ignores any padding after it.
    k = data % 4
    if k == 1 or (k == 2 and pads < 2) or (k == 3 and pads < 1):
        return -1
    if k == 2:
        out[written] = <unsigned char>(quad >> 4)
        written += 1
    elif k == 3:
        out[written] = <unsigned char>(quad >> 10)
        out[written + 1] = <unsigned char>(quad >> 2)
        written += 2
    return written


def base64_value(bytes token):
    """The bytes of one base64 token by read_ranks' rule, or None where it refuses the token
    (files/readers.base64_token says the same of a str; the tests hold the two together)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(token), written
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n * 3 // 4 + 3)
    written = _decode(<const unsigned char*>PyBytes_AS_STRING(token), n, <unsigned char*>PyBytes_AS_STRING(out))
    return None if written < 0 else out[:written]


cdef _refuse(str path, Py_ssize_t line, str why):
    raise MalformedAssetError(f"{path}:{line}: {why}", path=path, line=line)


cdef str _shown(const unsigned char* text, Py_ssize_t n):
    return repr(PyBytes_FromStringAndSize(<const char*>text, min(n, 60)).decode("utf-8", "replace"))


def read_ranks(bytes data, str path):
    """The bytes of every rank of the rank file whose content is `data` (read from `path`, which
    the errors name), in rank order. An empty file gives []."""
    cdef const unsigned char* text = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(data), at = 0, end, line = 0, k, token_at, token_end
    cdef Py_ssize_t rank_at, rank_end, written, rank
    cdef list ranks = []
    cdef dict seen = {}
    cdef bytes piece, scratch = PyBytes_FromStringAndSize(NULL, 64)
    cdef unsigned char* out
    cdef PyObject* before
    cdef bint digits
    if size >= 3 and text[0] == 0xEF and text[1] == 0xBB and text[2] == 0xBF:
        at = 3  # a byte-order mark: not part of the first line
    while at < size:
        line += 1
        end = at
        while end < size and text[end] != 10:
            end += 1
        # the two fields: [spaces] token spaces rank [spaces]
        k = at
        while k < end and _space(text[k]):
            k += 1
        token_at = k
        while k < end and not _space(text[k]):
            k += 1
        token_end = k
        while k < end and _space(text[k]):
            k += 1
        rank_at = k
        while k < end and not _space(text[k]):
            k += 1
        rank_end = k
        while k < end and _space(text[k]):
            k += 1
        if token_at == token_end or rank_at == rank_end or k != end:
            _refuse(path, line, f"not a `base64 rank` line: {_shown(text + at, end - at)}")
        digits = rank_end - rank_at <= 18
        rank = 0
        for k in range(rank_at, rank_end):
            if not 48 <= text[k] <= 57:
                digits = False
                break
            if digits:
                rank = rank * 10 + (text[k] - 48)
        if not digits:
            _refuse(path, line, f"not a `base64 rank` line: {_shown(text + at, end - at)}")
        if rank != line - 1:
            _refuse(path, line, f"rank {_shown(text + rank_at, rank_end - rank_at)[1:-1]} where rank {line - 1} "
                                "belongs (the ranks must count up from 0, one per line)")
        if PyBytes_GET_SIZE(scratch) < (token_end - token_at) * 3 // 4 + 3:
            scratch = PyBytes_FromStringAndSize(NULL, (token_end - token_at) * 3 // 4 + 3)
        out = <unsigned char*>PyBytes_AS_STRING(scratch)
        written = _decode(text + token_at, token_end - token_at, out)
        if written < 0:
            _refuse(path, line, f"{_shown(text + token_at, token_end - token_at)} is not base64")
        piece = PyBytes_FromStringAndSize(<const char*>out, written)
        before = PyDict_GetItem(seen, piece)
        if before != NULL:
            _refuse(path, line, f"rank {line - 1} repeats the bytes of rank {<object>before}")
        PyDict_SetItem(seen, piece, line - 1)
        PyList_Append(ranks, piece)
        at = end + 1
    return ranks
