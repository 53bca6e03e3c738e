# cython: language_level=3, boundscheck=True, wraparound=False
"""The record a stream made by new_stream keeps in state["_srv"] (serving.py has its rules).

Compiled so that the usual token of a stream with stop strings (one id, no held text, no
character that could start a stop string) is stepped by _piece_table.pyx's TableMethods with
no Python frame: a few nanoseconds to check the delta's characters against the stop strings'
first characters, where the Python rule cost six times the step itself (issue 33's target:
4 stop strings at most 1.2 times the cost of none; benchmarks/test_server.py::test_stop_strings).
"""
from cpython.mem cimport PyMem_Malloc, PyMem_Free

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    int PyUnicode_KIND(object)
    void* PyUnicode_DATA(object)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index) noexcept


cdef class StreamRecord:
    """What a stream new_stream made keeps: its stop strings (the order given: vLLM's rule),
    whether the output keeps the stop string, the output held back (it could start a stop
    string), how much output went out and how many generated ids came in, the prompt's
    held-back text not yet seen again, whether it is closed, the StopMatch once it stopped,
    and the envelope parser (envelopes.py) or None."""

    def __init__(self, tuple stops, bint keeps_stop, str prompt_rest, object envelope=None):
        cdef list firsts = []
        cdef str s
        for s in stops:
            if type(s) is not str or not s:
                raise TypeError("a stop string is a non-empty str")
            if s[0] not in firsts:
                firsts.append(s[0])
        PyMem_Free(self.first_chars)  # (NULL unless __init__ is called again)
        self.first_chars = <Py_UCS4*>PyMem_Malloc(max(len(firsts), 1) * sizeof(Py_UCS4))
        if self.first_chars == NULL:
            raise MemoryError()
        for k, c in enumerate(firsts):
            self.first_chars[k] = ord(c)
        self.n_first = len(firsts)
        self.stops = stops
        self.keeps_stop = keeps_stop
        self.pending = ""
        self.emitted = 0
        self.tokens = 0
        self.prompt_rest = prompt_rest
        self.closed = False
        self.stop = None
        self.envelope = envelope
        # What a held-back suffix can end with, and the proper prefixes of the stop strings.
        self.ends = frozenset(s[k] for s in stops for k in range(len(s) - 1))
        self.firsts = frozenset(s[:k] for s in stops for k in range(1, len(s)))

    def __dealloc__(self):
        PyMem_Free(self.first_chars)

    cdef bint starts_no_stop(self, str text) noexcept:
        """Whether no character of `text` is the first of a stop string: then, with nothing
        held back, no stop string is in it and no end of it could begin one."""
        cdef Py_ssize_t i, k, n = PyUnicode_GET_LENGTH(text)
        cdef int kind = PyUnicode_KIND(text)
        cdef void* data = PyUnicode_DATA(text)
        cdef Py_UCS4 c
        for i in range(n):
            c = PyUnicode_READ(kind, data, i)
            for k in range(self.n_first):
                if self.first_chars[k] == c:
                    return False
        return True

    def fields(self):
        return (self.stops, self.keeps_stop, self.pending, self.emitted, self.tokens, self.prompt_rest, self.closed,
                self.stop, self.envelope)

    def copy(self):
        """An equal record of its own (a forked stream's): the envelope parser copied too."""
        cdef StreamRecord other = StreamRecord(self.stops, self.keeps_stop, self.prompt_rest,
                                               None if self.envelope is None else self.envelope.copy())
        other.pending, other.emitted, other.tokens = self.pending, self.emitted, self.tokens
        other.closed, other.stop = self.closed, self.stop
        return other

    def __reduce__(self):
        return (_rebuilt, self.fields())

    def __eq__(self, other):
        return type(other) is StreamRecord and self.fields() == (<StreamRecord>other).fields()

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = None  # mutable, compared by value

    def __repr__(self):
        return f"<stream record: stops={self.stops!r}, tokens={self.tokens}, closed={self.closed}>"


def _rebuilt(stops, keeps_stop, pending, emitted, tokens, prompt_rest, closed, stop, envelope):
    """A record from its fields (pickle, deepcopy)."""
    cdef StreamRecord record = StreamRecord(stops, keeps_stop, prompt_rest, envelope)
    record.pending, record.emitted, record.tokens, record.closed, record.stop = pending, emitted, tokens, closed, stop
    return record
