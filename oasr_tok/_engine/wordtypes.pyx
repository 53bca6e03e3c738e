# cython: language_level=3, boundscheck=True, wraparound=False
"""What word timings return: `Words`, a read-only sequence stored as columns, and `Word`, the
record it hands out one at a time.

A transcript of a million tokens has hundreds of thousands of words. Making a Python object
for each costs more than finding them, and most callers read a column (the start times, for an
aligner) or a few words. So the grouping (`_engine/words.pyx`) writes four integers per word into one
C array (its text span and its first and last token) and nothing else: a word's times are its
tokens' times, read from the per-token time lists when asked for. A `Word` is made only when
one is indexed or iterated, and its text is cut out of the transcript then.

The integers are 32-bit, so a word costs 16 bytes in one buffer sized up front: at a million
tokens the result is small and few enough allocations for the C allocator to hand the same
memory back call after call, instead of the kernel faulting in fresh pages (which, not the
grouping, is what a long transcript would otherwise pay). Transcripts of 2**31 characters or
tokens are refused.
"""
from cpython.array cimport array, clone
from cpython.float cimport PyFloat_FromDouble
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.math cimport exp, isfinite, isnan, NAN
from libc.stdint cimport INT32_MAX, int32_t

from collections.abc import Sequence
from operator import index as _as_index

from oasr_tok.errors import TimingError

cdef extern from "Python.h":
    object PyUnicode_Substring(object, Py_ssize_t, Py_ssize_t)
    Py_ssize_t PY_SSIZE_T_MAX

cdef array _INDEX_TEMPLATE = array("q")
cdef array _DOUBLE_TEMPLATE = array("d")
cdef Py_ssize_t _ROW = 4  # text start, text end, first token, last token


cdef class Word:
    """One word of a transcript: its exact text (a substring of the decode), its time span in
    the caller's unit, the indices of the first and last tokens whose pieces overlap it, and
    its `confidence` (a probability in 0 ... 1, from the tokens' scores) or None when no
    scores were given. Immutable; compares by value.

    Example:
        >>> from oasr_tok import Word
        >>> word = Word("café", 0.5, 0.9, 1, 2)
        >>> word
        Word(text='café', start=0.5, end=0.9, first_token=1, last_token=2)
        >>> word.to_dict()
        {'text': 'café', 'start': 0.5, 'end': 0.9, 'first_token': 1, 'last_token': 2}
    """

    def __init__(self, str text, start, end, Py_ssize_t first_token, Py_ssize_t last_token, confidence=None):
        self.text = text
        self.start = start
        self.end = end
        self.first_token = first_token
        self.last_token = last_token
        self.confidence = _checked_confidence(confidence)

    def _key(self) -> tuple:
        return (self.text, self.start, self.end, self.first_token, self.last_token, self.confidence)

    def __eq__(self, other):
        if not isinstance(other, Word):
            return NotImplemented
        return self._key() == (<Word>other)._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        confidence = "" if self.confidence is None else f", confidence={self.confidence!r}"
        return (f"Word(text={self.text!r}, start={self.start!r}, end={self.end!r}, "
                f"first_token={self.first_token}, last_token={self.last_token}{confidence})")

    def __reduce__(self):
        return (Word, self._key())

    def to_dict(self) -> dict:
        """The fields as a plain dict (for JSON); "confidence" only when the word has one."""
        out = {"text": self.text, "start": self.start, "end": self.end,
               "first_token": self.first_token, "last_token": self.last_token}
        if self.confidence is not None:
            out["confidence"] = self.confidence
        return out


cdef object _checked_confidence(object value):
    if value is None:
        return None
    if isinstance(value, bool):
        raise TimingError(f"confidence = {value!r} is not a number in 0 ... 1")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TimingError(f"confidence = {value!r} is not a number in 0 ... 1") from None
    if not 0.0 <= number <= 1.0:  # NaN fails this too
        raise TimingError(f"confidence = {value!r} is not a number in 0 ... 1")
    return number


cdef inline Word _make_word(str text, object start, object end, Py_ssize_t first, Py_ssize_t last,
                            object confidence):
    cdef Word w = Word.__new__(Word)
    w.text = text
    w.start = start
    w.end = end
    w.first_token = first
    w.last_token = last
    w.confidence = confidence
    return w


cdef object typed_time(array times, Py_ssize_t k):
    """Time k of a typed copy as the Python object NumPy's tolist() gives for it: a float
    for "d", an int for "q" / "Q"."""
    if not 0 <= k < len(times):  # rows come from the grouping; never read past the copy
        raise IndexError("token index out of range of the times")
    cdef char code = times.ob_descr.typecode
    if code == b"d":
        return PyFloat_FromDouble(times.data.as_doubles[k])
    if code == b"q":
        return PyLong_FromLongLong(times.data.as_longlongs[k])
    return PyLong_FromUnsignedLongLong(times.data.as_ulonglongs[k])


cdef Words new_words(str transcript, object token_starts, object token_ends):
    """An empty Words over `transcript`, timed by per-token times that nobody else holds (the
    grouping copies the caller's): each a list of time objects or a typed array.array (see
    typed_time; `token_ends` may also be None), for the grouping to push into."""
    cdef Words out = Words.__new__(Words)
    out._transcript = transcript
    out._per_word = False
    if isinstance(token_starts, array):
        out._starts, out._typed_starts = None, <array>token_starts
    else:
        out._starts = <list>token_starts
    if isinstance(token_ends, array):
        out._ends, out._typed_ends = None, <array>token_ends
    else:
        out._ends = <list>token_ends
    return out


cdef class Words:
    """The words of one transcript, in order: a read-only sequence of `Word` that compares
    equal to the list of the same Words, indexes (negative indices too), slices (giving Words)
    and iterates like one, and exposes its columns without making a Word per entry:
    `starts`, `ends` (lists of the caller's time values), `first_token`, `last_token`
    (`array.array("q")`, so `numpy.asarray` takes them without a copy) and `texts`.
    `to_list()` makes every Word at once. `Words(iterable_of_Word)` builds one from records.
    `confidences` is each word's confidence (None for a word without one).

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> ids = tok.encode("the café opens at 9 😀")
        >>> words = tok.word_timings(ids, [40 * k for k in range(len(ids))])
        >>> words.texts, words.starts
        (['the', 'café', 'opens', 'at', '9', '😀'], [0, 40, 80, 200, 280, 360])
        >>> words[1]
        Word(text='café', start=40, end=80, first_token=1, last_token=1)
        >>> words[2:4] == [words[2], words[3]], list(words.first_token)
        (True, [0, 1, 2, 5, 7, 9])
    """

    def __cinit__(self):
        self._transcript = ""
        self._per_word = True
        self._starts = []
        self._ends = []

    def __init__(self, words=()):
        pieces = []
        confidences = array("d")
        cdef Py_ssize_t at = 0, length
        cdef Word w
        cdef bint any_confidence = False
        for item in words:
            if not isinstance(item, Word):
                raise TypeError(f"Words holds Word records, got {type(item).__name__}")
            w = <Word>item
            length = len(w.text)
            self.push(at, at + length, w.first_token, w.last_token)
            self._starts.append(w.start)
            self._ends.append(w.end)
            # NaN stands for "none" inside the column: a real confidence is never NaN.
            confidences.append(NAN if w.confidence is None else <double>w.confidence)
            any_confidence |= w.confidence is not None
            pieces.append(w.text)
            at += length
        self._transcript = "".join(pieces)
        self._confidences = confidences if any_confidence else None

    def __dealloc__(self):
        PyMem_Free(self._rows)

    cdef int reserve(self, Py_ssize_t capacity) except -1:
        """Room for `capacity` words in all (never shrinks)."""
        cdef int32_t *rows
        if capacity <= self._capacity:
            return 0
        if capacity > PY_SSIZE_T_MAX // (_ROW * <Py_ssize_t>sizeof(int32_t)):
            raise MemoryError()
        rows = <int32_t *>PyMem_Realloc(self._rows, capacity * _ROW * sizeof(int32_t))
        if rows == NULL:
            raise MemoryError()
        self._rows, self._capacity = rows, capacity
        return 0

    cdef int push(self, Py_ssize_t a, Py_ssize_t b, Py_ssize_t first, Py_ssize_t last) except -1:
        cdef int32_t *rows
        if not (0 <= a <= b <= INT32_MAX and 0 <= first <= last <= INT32_MAX):
            raise OverflowError("word timings support transcripts of up to 2**31 - 1 characters and tokens")
        if self._n == self._capacity:
            self.reserve(64 if self._capacity == 0 else 2 * self._capacity)
        rows = self._rows + _ROW * self._n
        rows[0], rows[1], rows[2], rows[3] = <int32_t>a, <int32_t>b, <int32_t>first, <int32_t>last
        self._n += 1
        return 0

    cdef object start_of(self, Py_ssize_t i):
        if self._per_word:
            return self._starts[i]
        if self._typed_starts is not None:
            return typed_time(self._typed_starts, self._rows[_ROW * i + 2])
        return self._starts[self._rows[_ROW * i + 2]]

    cdef object end_of(self, Py_ssize_t i):
        cdef Py_ssize_t last
        if self._per_word:
            return self._ends[i]
        last = self._rows[_ROW * i + 3]
        if self._ends is not None:
            return self._ends[last]
        if self._typed_ends is not None:
            return typed_time(self._typed_ends, last)
        if self._typed_starts is not None:
            return typed_time(self._typed_starts, last + 1 if last + 1 < len(self._typed_starts) else last)
        return self._starts[last + 1 if last + 1 < len(self._starts) else last]

    cdef object confidence_of(self, Py_ssize_t i):
        cdef double value
        if self._confidences is None:
            return None
        if not 0 <= i < len(self._confidences):
            raise IndexError("word index out of range of the confidences")
        value = self._confidences.data.as_doubles[i]
        return None if isnan(value) else value

    cdef Word word(self, Py_ssize_t i):
        cdef int32_t *row = self._rows + _ROW * i
        return _make_word(PyUnicode_Substring(self._transcript, row[0], row[1]),
                          self.start_of(i), self.end_of(i), row[2], row[3], self.confidence_of(i))

    cdef Py_ssize_t _index(self, object key) except -1:
        i = _as_index(key)  # a TypeError for non-integers, as list indexing gives
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("Words index out of range")
        return i

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, key):
        cdef Py_ssize_t start, stop, step, count, _k, j
        cdef int32_t *row
        cdef Words out
        if isinstance(key, slice):
            start, stop, step = key.indices(self._n)
            count = len(range(start, stop, step))
            out = new_words(self._transcript, self._starts, self._ends)  # the same immutable times
            out._typed_starts, out._typed_ends = self._typed_starts, self._typed_ends
            out._per_word = self._per_word
            if self._per_word:
                # the caller's slice, not indices()'s triple: a reversed slice's stop is -1 there
                out._starts, out._ends = self._starts[key], self._ends[key]
            out.reserve(count)
            if self._confidences is not None:
                out._confidences = self._confidences[key]
            j = start
            for _k in range(count):
                row = self._rows + _ROW * j
                out.push(row[0], row[1], row[2], row[3])
                j += step
            return out
        return self.word(self._index(key))

    def __iter__(self):
        cdef Py_ssize_t i = 0
        while i < self._n:
            yield self.word(i)
            i += 1

    def __reversed__(self):
        cdef Py_ssize_t i = self._n
        while i > 0:
            i -= 1
            yield self.word(i)

    def __contains__(self, value) -> bool:
        return any(w == value for w in self)

    def index(self, value, Py_ssize_t start=0, stop=None) -> int:
        """The position of the first Word equal to `value` (ValueError if none), as list.index."""
        cdef Py_ssize_t i
        for i in range(*slice(start, stop).indices(self._n)):
            if self.word(i) == value:
                return i
        raise ValueError(f"{value!r} is not in Words")

    def count(self, value) -> int:
        """How many Words equal `value`."""
        return sum(1 for w in self if w == value)

    def __eq__(self, other):
        cdef Py_ssize_t i
        if isinstance(other, Words):
            return (self._n == (<Words>other)._n and self.texts == other.texts
                    and self.starts == other.starts and self.ends == other.ends
                    and self.first_token == other.first_token and self.last_token == other.last_token
                    and self.confidences == other.confidences)
        if isinstance(other, list):
            if len(<list>other) != self._n:
                return False
            for i in range(self._n):
                if not self.word(i) == (<list>other)[i]:
                    return False
            return True
        return NotImplemented

    __hash__ = None  # equal to a list, so unhashable like one

    def __repr__(self):
        shown = ", ".join(repr(self.word(i)) for i in range(min(self._n, 3)))
        more = f", ... ({self._n} words)" if self._n > 3 else ""
        return f"Words([{shown}{more}])"

    def __reduce__(self):
        return (Words, (self.to_list(),))

    def to_list(self) -> list:
        """Every word as a `Word`, in a new list."""
        return [self.word(i) for i in range(self._n)]

    @property
    def starts(self) -> list:
        """Each word's start time, as the caller gave it (a new list)."""
        cdef Py_ssize_t i
        return [self.start_of(i) for i in range(self._n)]

    @property
    def ends(self) -> list:
        """Each word's end time, as the caller gave it (a new list)."""
        cdef Py_ssize_t i
        return [self.end_of(i) for i in range(self._n)]

    cdef object _column(self, Py_ssize_t field):
        cdef array out = clone(_INDEX_TEMPLATE, self._n, False)
        cdef long long *values = out.data.as_longlongs
        cdef Py_ssize_t i
        for i in range(self._n):
            values[i] = self._rows[_ROW * i + field]
        return out

    @property
    def first_token(self) -> array:
        """Each word's first token index, as array.array("q") (a new array)."""
        return self._column(2)

    @property
    def last_token(self) -> array:
        """Each word's last token index, as array.array("q") (a new array)."""
        return self._column(3)

    @property
    def confidences(self) -> list:
        """Each word's confidence: a float in 0 ... 1, or None when no scores were given (a
        new list)."""
        cdef Py_ssize_t i
        return [self.confidence_of(i) for i in range(self._n)]

    @property
    def texts(self) -> list:
        """Each word's text (a new list of str)."""
        cdef Py_ssize_t i
        return [PyUnicode_Substring(self._transcript, self._rows[_ROW * i], self._rows[_ROW * i + 1])
                for i in range(self._n)]


Sequence.register(Words)


#: How a word's confidence is made from its tokens' log-probabilities s (probabilities p = e**s).
REDUCTIONS = ("mean", "min", "product", "geometric_mean")


def attach_confidences(Words words, array scores, str reduction="mean"):
    """Give every word of `words` a confidence from its tokens' log-probabilities `scores`
    (array "d", one per token the words were cut from): over the tokens first_token ...
    last_token, "mean" is the mean probability (openai-whisper's word probability), "min" the
    least probable token's, "product" the probability of all of them (e**sum), and
    "geometric_mean" e**(mean log-probability). Raises TimingError naming the token when a
    score is NaN, infinite or positive."""
    cdef Py_ssize_t n = len(scores), i, t, first, last
    cdef double *s = scores.data.as_doubles
    cdef double total, low, value
    cdef int mode
    if reduction not in REDUCTIONS:
        raise TimingError(f"option confidence must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    mode = REDUCTIONS.index(reduction)
    for t in range(n):
        if not isfinite(s[t]) or s[t] > 0.0:
            raise TimingError(f"scores[{t}] = {s[t]!r}: a score is a log-probability, finite and <= 0")
    cdef array out = clone(_DOUBLE_TEMPLATE, words._n, False)
    for i in range(words._n):
        first, last = words._rows[_ROW * i + 2], words._rows[_ROW * i + 3]
        if not 0 <= first <= last < n:  # rows come from the grouping over n tokens
            raise TimingError(f"word {i} spans tokens {first} ... {last}, beyond the {n} scores")
        total, low = 0.0, 0.0
        for t in range(first, last + 1):
            if mode == 0:
                total += exp(s[t])
            else:
                total += s[t]
            if t == first or s[t] < low:
                low = s[t]
        if mode == 0:
            value = total / (last - first + 1)
        elif mode == 1:
            value = exp(low)
        elif mode == 2:
            value = exp(total)
        else:
            value = exp(total / (last - first + 1))
        out.data.as_doubles[i] = value
    words._confidences = out
    return words


def carry_first_tokens(Words words, list pieces, bytes carriers):
    """Give each word the ids that carried bytes of its first character: where a word starts
    with the first character of its first token's piece and the ids before that token left
    bytes of that character waiting (carriers[k] = 1: see PieceTable.pieces_and_carriers), the
    word's first token is the earliest of them, and so its start is that id's time. A
    character's bytes then belong to its word whichever tokens brought them, as openai-whisper
    groups tokens into words. Returns `words`, changed in place."""
    cdef Py_ssize_t i, t, k, a, token = 0, at = 0
    cdef Py_ssize_t n = len(pieces)
    cdef int32_t *row
    if words._per_word:
        return words
    if len(carriers) != n:
        raise ValueError("carriers must have one entry per token")
    cdef const unsigned char *carried = carriers
    for i in range(words._n):
        row = words._rows + _ROW * i
        a, t = row[0], row[2]
        if not 0 <= t < n:
            raise IndexError("a word's first token is outside the pieces")
        while token < t:  # words come in order, so the piece starts are walked once
            at += len(<str>pieces[token])
            token += 1
        if at == a and t > 0 and carried[t - 1]:
            k = t - 1
            while k > 0 and carried[k - 1]:
                k -= 1
            row[2] = <int32_t>k
    return words
