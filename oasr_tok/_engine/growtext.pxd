# A transcript that grows at its end (oasr_tok/_engine/growtext.pyx): what a Stream and a Revisions
# keep their text in, so that a step appends in amortised O(1) and the str is made on request.
from cpython.object cimport PyObject


cdef struct TextData:
    char* data               # n characters of `kind` bytes each (PyMem_Raw*: usable without the GIL)
    Py_ssize_t n
    Py_ssize_t capacity
    int kind                 # 1, 2 or 4: the widest storage a character appended so far needed


cdef int text_reserve(TextData* t, int kind, Py_ssize_t extra) except -1
cdef int text_reserve_nogil(TextData* t, int kind, Py_ssize_t extra) noexcept nogil
cdef void text_append_reserved(TextData* t, PyObject* text) noexcept nogil


cdef class GrowText:
    cdef TextData t
    cdef object cached       # the str of the text, None until asked for after a change

    cdef int append(self, str text) except -1
    cdef int truncate(self, Py_ssize_t n) except -1
    cdef str slice(self, Py_ssize_t start)
    cdef str text(self)
    cdef GrowText copy_text(self)
