# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""A transcript that grows at its end: the text of a Stream and the committed text of a
Revisions (oasr_tok/_engine/stream.pyx, oasr_tok/_engine/revisions.pyx).

A str cannot grow: appending to one copies it, or resizes it in place where CPython allows it
and the allocator then moves it (the dict path's in-place write, textbuf.h), so a long stream's
step costs more as its text grows. Here the characters live in a C buffer whose capacity doubles
(amortised O(1) per appended character), stored as wide as the widest character so far needs
(1, 2 or 4 bytes, as CPython stores a str), and the str is made only when it is asked for and
kept until the next change. The buffer is PyMem_Raw memory and the appends are plain C on a
TextData, so a batch that reserved room first appends without the GIL (text_append_reserved).
"""
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.string cimport memcpy

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject*) nogil
    int PyUnicode_KIND(PyObject*) nogil
    void* PyUnicode_DATA(PyObject*) nogil
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) nogil
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value) nogil
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)

cdef Py_ssize_t _MAX_CHARS = (<Py_ssize_t>1 << 62) // 4
# The room a text gets when it first grows. A streamed request's or utterance's text is some
# hundreds of characters: from a smaller room, doubling moved it (realloc and copy) several times
# in its first steps, which a server's batch pays on every request (benchmarks/measurements.md).
cdef Py_ssize_t _FIRST_ROOM = 256


cdef int text_reserve(TextData* t, int kind, Py_ssize_t extra) except -1:
    """Room for `extra` more characters of storage `kind` (what is held widened when `kind` is
    wider): after it, text_append_reserved of that much text cannot fail."""
    if text_reserve_nogil(t, kind, extra) < 0:
        raise MemoryError("a transcript longer than memory can hold")
    return 0


cdef int text_reserve_nogil(TextData* t, int kind, Py_ssize_t extra) noexcept nogil:
    """text_reserve without the GIL: -1 (nothing changed) where memory cannot be had."""
    cdef Py_ssize_t need, size, i
    cdef char* grown
    cdef int wide = kind if kind > t.kind else t.kind
    if extra < 0 or extra > _MAX_CHARS - t.n:
        return -1
    need = t.n + extra
    if need <= t.capacity and wide == t.kind:
        return 0
    size = t.capacity if t.capacity >= _FIRST_ROOM else _FIRST_ROOM
    while size < need:
        size *= 2
    if wide == t.kind:
        grown = <char*>PyMem_RawRealloc(t.data, <size_t>size * wide)
        if grown == NULL:
            return -1
    else:  # every character held is copied once into the wider storage
        grown = <char*>PyMem_RawMalloc(<size_t>size * wide)
        if grown == NULL:
            return -1
        for i in range(t.n):
            PyUnicode_WRITE(wide, grown, i, PyUnicode_READ(t.kind, t.data, i))
        PyMem_RawFree(t.data)
        t.kind = wide
    t.data = grown
    t.capacity = size
    return 0


cdef void text_append_reserved(TextData* t, PyObject* text) noexcept nogil:
    """Append the str `text`, for which text_reserve made room (no check, no allocation, no
    reference taken: a str is immutable and its owner keeps it alive)."""
    cdef Py_ssize_t m = PyUnicode_GET_LENGTH(text), i
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* src = PyUnicode_DATA(text)
    if m == 0:
        return  # (t.data may still be NULL: memcpy takes no NULL, even for no bytes)
    if kind == t.kind:
        memcpy(t.data + t.n * kind, src, <size_t>m * kind)
    else:
        for i in range(m):
            PyUnicode_WRITE(t.kind, t.data, t.n + i, PyUnicode_READ(kind, src, i))
    t.n += m


cdef class GrowText:
    """Characters appended at the end; the str made on request (cached until the next change)."""

    def __cinit__(self):
        self.t.data = NULL
        self.t.n = 0
        self.t.capacity = 0
        self.t.kind = 1
        self.cached = ""

    def __dealloc__(self):
        PyMem_RawFree(self.t.data)

    cdef int append(self, str text) except -1:
        cdef Py_ssize_t m = len(text)
        if m == 0:
            return 0
        text_reserve(&self.t, PyUnicode_KIND(<PyObject*>text), m)
        text_append_reserved(&self.t, <PyObject*>text)
        self.cached = None
        return 0

    cdef int truncate(self, Py_ssize_t n) except -1:
        """Back to the first n characters (a rolled-back step)."""
        if not 0 <= n <= self.t.n:
            raise ValueError("GrowText.truncate past its end")
        if n != self.t.n:
            self.t.n = n
            self.cached = None
        return 0

    cdef str slice(self, Py_ssize_t start):
        """The characters from `start` on, as a str."""
        if start >= self.t.n:
            return ""
        return PyUnicode_FromKindAndData(self.t.kind, self.t.data + start * self.t.kind, self.t.n - start)

    cdef str text(self):
        if self.cached is None:
            self.cached = PyUnicode_FromKindAndData(self.t.kind, self.t.data, self.t.n)
        return <str>self.cached

    cdef GrowText copy_text(self):
        cdef GrowText other = GrowText()
        # The source's capacity, not its length: a copy (a fork, a state copied per round) that
        # grows must not pay for moving the whole text at its next append.
        text_reserve(&other.t, self.t.kind, self.t.capacity if self.t.capacity > 64 else 64)
        if self.t.n:
            memcpy(other.t.data, self.t.data, <size_t>self.t.n * self.t.kind)
        other.t.n = self.t.n
        other.cached = self.cached
        return other

    def __str__(self):
        return self.text()

    def __len__(self):
        return self.t.n

    def __reduce__(self):
        return (_from_text, (self.text(),))


def _from_text(str text):
    """A GrowText holding `text` (a pickle)."""
    cdef GrowText out = GrowText()
    out.append(text)
    return out
