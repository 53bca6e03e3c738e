# The two result types of word timings, shared with the grouping (_words.pyx), which fills a
# Words column by column through `push`.

cdef class Word:
    cdef readonly str text
    cdef readonly object start
    cdef readonly object end
    cdef readonly Py_ssize_t first_token
    cdef readonly Py_ssize_t last_token


cdef class Words:
    cdef str _transcript      # every word's text is a slice of it
    cdef Py_ssize_t _n, _capacity
    cdef Py_ssize_t *_rows    # 4 per word: text start, text end, first token, last token
    cdef list _starts         # the caller's time values, one per word
    cdef list _ends

    cdef int push(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t first, Py_ssize_t last,
                  object start, object end) except -1
    cdef Word word(self, Py_ssize_t i)
    cdef Py_ssize_t _index(self, object key) except -1
    cdef object _column(self, Py_ssize_t field)


cdef Words new_words(str transcript)
