# cython: language_level=3, boundscheck=True, wraparound=False
"""What a Stream (oasr_tok/_engine/stream.pyx) keeps of the rules a server adds to a kind's stream: the
prompt's held-back text not yet seen again, and stop strings (serving.py states the rules).

Stop strings follow vLLM's current `check_stop_strings` (vllm/v1/engine/detokenizer.py, 0.34):
after each generated token, of the stop strings found in the text that reaches into the new
characters, the one that ends earliest wins; ties go to the caller's list order. Without
include_stop the output ends before it and no delta holds text that a later token could complete
into a stop string (that possible start is held back); with include_stop the output ends after
it, and since nothing shown can then be taken back, nothing is held back.
"""
from cpython.mem cimport PyMem_Free, PyMem_Malloc

from oasr_tok.errors import StreamStateError
from oasr_tok.outputs.envelopes import EnvelopeParser
from oasr_tok._engine.serving import StopMatch
from oasr_tok._engine.travel import count

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object) nogil
    int PyUnicode_KIND(object) nogil
    void* PyUnicode_DATA(object) nogil


# What a list of stop strings makes (their first characters, the longest one's length, what a
# possible start of one can end with, their proper prefixes), kept per list: a server's streams
# share a few lists, and a thousand unpickled streams would otherwise make them a thousand times.
cdef dict _RULES = {}
cdef Py_ssize_t _MAX_RULES = 256


cdef tuple _stop_rules(tuple stops):
    cdef tuple rules = _RULES.get(stops)
    cdef list firsts = []
    cdef str s
    if rules is not None:
        return rules
    for s in stops:
        if type(s) is not str or not s:
            raise TypeError("a stop string is a non-empty str")
        if s[0] not in firsts:
            firsts.append(s[0])
    rules = (tuple(firsts), max([len(s) for s in stops], default=0),
             frozenset(s[k] for s in stops for k in range(len(s) - 1)),
             frozenset(s[:k] for s in stops for k in range(1, len(s))))
    if len(_RULES) >= _MAX_RULES:
        _RULES.clear()
    _RULES[stops] = rules
    return rules


cdef class StreamRecord:
    """A stream's stop strings (in the order given), whether the output keeps the stop string,
    `pending`: the end of the output that could begin a stop string (held back unless
    keeps_stop), how much output went out and how many generated ids came in, the prompt's
    held-back text not yet seen again, whether it is closed, the StopMatch once it stopped, and
    the envelope parser (envelopes.py) or None."""

    def __init__(self, tuple stops, bint keeps_stop, str prompt_rest, object envelope=None):
        cdef tuple rules = _stop_rules(stops)
        cdef tuple firsts = rules[0]
        PyMem_Free(self.first_chars)  # (NULL unless __init__ is called again)
        self.first_chars = <Py_UCS4*>PyMem_Malloc(max(len(firsts), 1) * sizeof(Py_UCS4))
        if self.first_chars == NULL:
            raise MemoryError()
        for k, c in enumerate(firsts):
            self.first_chars[k] = ord(c)
        self.n_first = len(firsts)
        self.longest = rules[1]
        self.stops = stops
        self.keeps_stop = keeps_stop
        self.pending = ""
        self.emitted = 0
        self.tokens = 0
        self.prompt_rest = prompt_rest
        self.closed = False
        self.stop = None
        self.envelope = envelope
        self.ends = rules[2]
        self.firsts = rules[3]

    def __dealloc__(self):
        PyMem_Free(self.first_chars)

    cdef bint starts_no_stop(self, str text) noexcept:
        """Whether no character of `text` is the first of a stop string (no_first_char)."""
        return no_first_char(PyUnicode_KIND(text), PyUnicode_DATA(text), 0, PyUnicode_GET_LENGTH(text),
                             self.first_chars, self.n_first)

    cdef str filter(self, str delta, Py_ssize_t token, bint final):
        """The part of one token's delta (the kind's text) that leaves the stream: the prompt's
        held text skipped, the output cut at a stop string (vLLM's rule), a possible start of
        one held back. `token`: the index of the generated id whose text this is."""
        cdef Py_ssize_t k, limit, base, at, end, best_at = -1, best_end = -1, size, held
        cdef str rest, text, stop, best = None, out
        if self.prompt_rest:
            # The prompt's own held-back text comes out again only where the continuation did not
            # change it (a character the prompt began and this token completed is new text).
            rest, k = self.prompt_rest, 0
            limit = min(len(rest), len(delta))
            while k < limit and rest[k] == delta[k]:
                k += 1
            self.prompt_rest = rest[k:] if k == len(delta) else ""
            delta = delta[k:]
        if not self.stops:
            self.emitted += len(delta)
            return delta
        text = self.pending + delta if self.pending else delta
        base = len(self.pending)
        for stop in self.stops:
            # Only a match that ends in the new characters is new (vLLM's search start).
            at = text.find(stop, max(0, base - len(stop) + 1))
            if at >= 0 and (best is None or at + len(stop) < best_end):
                best, best_at, best_end = stop, at, at + len(stop)
        if best is not None:
            end = best_end if self.keeps_stop else best_at
            if self.keeps_stop:  # the pending text went out already
                out = text[base:end]
                self.stop = StopMatch(best, token, self.emitted - base + best_at)
            else:
                out = text[:end]
                self.stop = StopMatch(best, token, self.emitted + best_at)
            self.closed = True
            self.pending = ""
            self.emitted += len(out)
            return out
        held = 0
        if not final and text and text[len(text) - 1] in self.ends:
            for size in range(min(len(text), self.longest - 1), 0, -1):
                if text[len(text) - size:] in self.firsts:
                    held = size
                    break
        self.pending = text[len(text) - held:] if held else ""
        if self.keeps_stop:
            out = delta
        else:
            out = text[:len(text) - held] if held else text
        self.emitted += len(out)
        return out

    cdef str held_after(self, str tail):
        """What the stream holds back (Stream.held), given `tail`, the text its decoder holds
        back: that tail without the prompt's own held text at its start (it never comes out as
        it was), after the possible start of a stop string the output holds back (none with
        keeps_stop: what is shown is never taken back). Nothing once closed. The one statement
        of the held text: Stream.held, holding() and the engines' adapters read it."""
        if self.closed:
            return ""
        if self.prompt_rest and tail.startswith(self.prompt_rest):
            tail = tail[len(self.prompt_rest):]
        if self.pending and not self.keeps_stop:
            return self.pending + tail
        return tail

    cdef int check_against(self, object settled, str tail) except -1:
        """Whether the record's fields agree with each other and with the stream they are the
        rules of, as every step leaves them (a pickled record is checked so, never printed
        first). `settled` is the text the stream's decoder settled (None when it did not
        travel), `tail` the text the decoder holds back. The rule: what the record holds back
        is text the decoder made, and its counters count what it gave out of it. So the
        stop-string start (`pending`) ends the text the stop strings were searched in; while
        the prompt's held text waits to be seen again nothing was given out, and until a
        generated id comes that text is the decoder's held tail; a stop match closed the
        stream, with one of its stop strings, at a generated id it counted, where its output
        ends; a closed stream holds nothing back."""
        cdef object stop = self.stop
        cdef Py_ssize_t held = 0 if self.keeps_stop else len(self.pending)
        if stop is not None:
            if not self.closed:
                raise _disagree("it has a stop match but is not closed")
            if type(stop.text) is not str or stop.text not in self.stops:
                raise _disagree(f"its stop match {stop.text!r} is none of its stop strings")
            if type(stop.token_index) is not int or not -1 <= stop.token_index < self.tokens:
                raise _disagree("its stop match is at a token it did not count")
            if type(stop.char_offset) is not int or stop.char_offset != (
                    self.emitted - len(stop.text) if self.keeps_stop else self.emitted):
                raise _disagree("its stop match is not where its output ends")
        if self.closed and self.pending:
            raise _disagree("it is closed and still holds text back")
        if self.prompt_rest:
            if self.emitted or self.pending:
                raise _disagree("it gave out text while its prompt's text was still to be seen again")
            # Right after the prompt it is exactly the decoder's held tail. (After generated ids
            # that settled only its beginning, or nothing, the decoder may render the rest
            # otherwise: FunASR's rules rewrite the end of the text.)
            if not self.closed and self.tokens == 0 and tail != self.prompt_rest:
                raise _disagree("its prompt's held text is not what its decoder holds back")
        if settled is None:
            return 0
        if self.envelope is None:
            # What the stop strings are searched in is the decoder's settled text itself.
            if self.emitted + held > len(<str>settled):
                raise _disagree("it counts more output than its text holds")
            if self.pending and not (<str>settled).endswith(self.pending):
                raise _disagree("the text it holds back is not the end of its text")
        elif self.pending and self.pending not in <str>settled:
            raise _disagree("the text it holds back is none of its decoder's")
        return 0

    def fields(self):
        return (self.stops, self.keeps_stop, self.pending, self.emitted, self.tokens, self.prompt_rest, self.closed,
                self.stop, self.envelope)

    cdef StreamRecord copy_record(self):
        """An equal record of its own (a fork's): the envelope parser copied too."""
        cdef StreamRecord other = StreamRecord(self.stops, self.keeps_stop, self.prompt_rest,
                                               None if self.envelope is None else self.envelope.copy())
        other.pending, other.emitted, other.tokens = self.pending, self.emitted, self.tokens
        other.closed, other.stop = self.closed, self.stop
        return other

    def copy(self):
        return self.copy_record()

    def __reduce__(self):
        return (_rebuilt, self.fields())

    def __eq__(self, other):
        return type(other) is StreamRecord and self.fields() == (<StreamRecord>other).fields()

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = None  # mutable, compared by value

    def __repr__(self):
        return f"<stream record: stops={self.stops!r}, tokens={self.tokens}, closed={self.closed}>"


cdef object _disagree(str why):
    return StreamStateError(f"a pickled stream's fields disagree: {why}; start a new stream")


def _rebuilt(stops, keeps_stop, pending, emitted, tokens, prompt_rest, closed, stop, envelope):
    """A record from its fields (pickle), each checked for its type and range: a forged one
    raises StreamStateError. Whether they agree with each other and with the stream's text is
    checked once the stream is rebuilt around it (check_against)."""
    cdef StreamRecord record
    if (type(stops) is not tuple or type(keeps_stop) is not bool or type(pending) is not str
            or type(prompt_rest) is not str or type(closed) is not bool
            or not (stop is None or type(stop) is StopMatch)):
        raise StreamStateError("a stream's pickled record is not one a stream made; start a new stream")
    count(emitted, "a pickled stream's count of characters given out")
    count(tokens, "a pickled stream's count of generated ids")
    if envelope is not None and not isinstance(envelope, EnvelopeParser):
        raise StreamStateError(f"a stream's pickled envelope parser is a {type(envelope).__name__}, not an "
                               "oasr_tok.outputs.envelopes.EnvelopeParser; start a new stream")
    if any(type(s) is not str or not s for s in stops):
        raise StreamStateError("a stream's pickled stop strings are not non-empty strs; start a new stream")
    record = StreamRecord(stops, keeps_stop, prompt_rest, envelope)
    if pending and pending not in record.firsts:
        raise StreamStateError("a stream's pickled pending text could begin no stop string; start a new stream")
    record.pending, record.emitted, record.tokens, record.closed, record.stop = pending, emitted, tokens, closed, stop
    return record
