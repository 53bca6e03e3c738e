from cpython.array cimport array
from libc.stdint cimport int32_t

# The two result types of word timings, shared with the grouping (_engine/words.pyx), which fills a
# Words column by column through `push`.

cdef class Word:
    cdef readonly str text
    cdef readonly object start
    cdef readonly object end
    cdef readonly Py_ssize_t first_token
    cdef readonly Py_ssize_t last_token
    cdef readonly object confidence   # None, or a float in 0 ... 1


cdef class Words:
    cdef str _transcript      # every word's text is a slice of it
    cdef Py_ssize_t _n, _capacity
    cdef int32_t *_rows       # 4 per word: text start, text end, first token, last token
    # The times: per token (a word takes its first token's start and its last token's end;
    # without token ends, the next token's start), or per word when built from Word records.
    cdef bint _per_word
    cdef list _starts
    cdef list _ends           # None: per-token ends are the next token's start
    # Per-token times read from a buffer, in place of _starts / _ends: array.array of "d"
    # (float formats), "q" or "Q" (integer formats), so a time becomes a Python object only
    # when a Word or a column asks for it. None when the list holds them.
    cdef array _typed_starts
    cdef array _typed_ends
    # One confidence per word ("d"), when the caller gave per-token scores; else None.
    cdef array _confidences

    cdef int reserve(self, Py_ssize_t capacity) except -1
    cdef int push(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t first, Py_ssize_t last) except -1
    cdef object start_of(self, Py_ssize_t i)
    cdef object end_of(self, Py_ssize_t i)
    cdef object confidence_of(self, Py_ssize_t i)
    cdef Word word(self, Py_ssize_t i)
    cdef Py_ssize_t _index(self, object key) except -1
    cdef object _column(self, Py_ssize_t field)


cdef Words new_words(str transcript, object token_starts, object token_ends)
cdef object typed_time(array times, Py_ssize_t k)
