# cython: language_level=3, boundscheck=False, wraparound=False, freethreading_compatible=True
"""Finding where a JSON array ends without parsing it: files.py leaves out a tokenizer.json's
merges (half of the file, read only by the runtime, which reads the file itself), and
json.loads makes a Python string of every one of them (Qwen3: 151,387)."""


def array_end(const unsigned char[:] data, Py_ssize_t start):
    """The index just past the JSON array that opens at data[start], or -1 when data[start] is
    not "[" or the array never closes. Only strings (with their escapes) and brackets are
    followed; what lies between is not checked (the caller parses the file again in full if
    anything about the cut looks wrong). UTF-8 is read as bytes: no byte of a multi-byte
    character is an ASCII quote, backslash or bracket."""
    cdef Py_ssize_t i, n = data.shape[0], depth = 0
    cdef unsigned char c
    cdef bint in_string = False
    if start < 0 or start >= n or data[start] != 0x5B:  # "["
        return -1
    i = start
    while i < n:
        c = data[i]
        if in_string:
            if c == 0x5C:  # a backslash: the next byte is escaped
                i += 2
                continue
            if c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c == 0x5B or c == 0x7B:  # "[" "{"
            depth += 1
        elif c == 0x5D or c == 0x7D:  # "]" "}"
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1
