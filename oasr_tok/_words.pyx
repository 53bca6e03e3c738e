# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""The compiled word grouping behind ``Tokenizer.word_timings`` (rules: docs/decoding.md
§ Word timings).

One left-to-right pass over the transcript ``"".join(pieces)``, with O(1) state: cores (a run
of letters/digits/symbols, or one character of a script written without spaces) become words,
and the punctuation between cores is handed to the core before it (closing marks) or after it
(everything from the first opening bracket or quote on). Token ownership of a word's first and
last character is found with a pointer that only moves forward, and the whitespace-only tokens
between two words (which give their time to both) are looked at once each, so the whole call
is linear in characters + tokens.

Character classes come from ``unicodedata`` (general category) and code point ranges (script),
computed once per distinct code point and cached in a lazily allocated byte table: the scan
itself never calls back into Python for a character it has seen before.
"""
import math
import unicodedata

cimport cython
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.object cimport PyObject, PyTypeObject, destructor, freefunc
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from libc.math cimport isfinite
from libc.stdlib cimport calloc

from oasr_tok.errors import TimingError, short_repr

cdef extern from "Python.h":
    int PyUnicode_KIND(object)
    void* PyUnicode_DATA(object)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    bint PyUnicode_Check(PyObject *)
    PyObject *PyList_GET_ITEM(object, Py_ssize_t)
    Py_ssize_t PyList_GET_SIZE(object)
    object PyUnicode_Substring(object, Py_ssize_t, Py_ssize_t)
    bint Py_UNICODE_ISSPACE(Py_UCS4)

# Character classes. The table stores class + 1 so that 0 means "not computed yet".
cdef enum:
    C_SPACE = 1   # str.isspace(): separates words, belongs to none (unless inside one)
    C_WORD = 2    # letters, digits, symbols...: runs of them make one word
    C_SOLO = 3    # a character of a script written without spaces: a word on its own
    C_OPEN = 4    # opening punctuation (Ps, Pi): joins the word after it
    C_CLOSE = 5   # any other punctuation (Pe, Pf, Po, Pd, Pc): joins the word before it
    C_EXTEND = 6  # combining marks, format characters, length/voicing marks: part of the
                  # character before them

cdef enum:
    MAX_CP = 0x110000

# Integers up to 2**53 convert to double exactly, so the order checks can compare doubles.
cdef long long _EXACT = 1LL << 53

cdef unsigned char *_table = NULL

# Scripts written without spaces (Unicode Scripts.txt ranges for Han, Hiragana, Katakana,
# Bopomofo, Thai, Lao, Myanmar, Khmer). Punctuation, digits and marks inside these ranges are
# classified by their general category first.
_SOLO_RANGES = (
    (0x0E01, 0x0E3E), (0x0E40, 0x0E7F),  # Thai (U+0E3F BAHT SIGN is a currency symbol)
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F),  # Myanmar
    (0x1780, 0x17FF), (0x19E0, 0x19FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007), (0x3021, 0x3029), (0x3038, 0x303B),  # 々 〆 〇, Hangzhou numerals
    (0x3041, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x3100, 0x312F), (0x31A0, 0x31BF),  # Bopomofo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),  # Han
    (0xFF66, 0xFF9D),  # halfwidth Katakana
    (0x1AFF0, 0x1B16F),  # Kana extensions and supplement
    (0x20000, 0x323AF),  # Han extensions B-H and compatibility supplement
)

# Spacing characters that still belong to the character before them: the Katakana-Hiragana
# prolonged sound mark, (halfwidth) voiced sound marks, Thai/Lao SARA AM, zero width joiner.
_EXTENDERS = frozenset((0x30FC, 0xFF70, 0x309B, 0x309C, 0xFF9E, 0xFF9F, 0x0E33, 0x0EB3))


def char_class(str ch) -> int:
    """The class of one character (see the enum above); the rules in docs/decoding.md."""
    cdef long cp = ord(ch)
    if ch.isspace():
        return C_SPACE
    category = unicodedata.category(ch)
    if category in ("Ps", "Pi"):
        return C_OPEN
    if category[0] == "P":
        return C_CLOSE
    if category[0] == "M" or category == "Cf" or cp in _EXTENDERS:
        return C_EXTEND
    if category == "Nd":
        return C_WORD
    for low, high in _SOLO_RANGES:
        if low <= cp <= high:
            return C_SOLO
    return C_WORD


cdef inline int _cls(Py_UCS4 cp) except -1:
    global _table
    cdef int c
    if cp >= MAX_CP:  # cannot happen for a str, but never index past the table
        return C_WORD
    if _table == NULL:
        _table = <unsigned char *>calloc(MAX_CP, 1)  # pages are only touched when used
        if _table == NULL:
            raise MemoryError()
    c = _table[cp]
    if c == 0:
        c = char_class(chr(cp))
        _table[cp] = <unsigned char>c
    return c


cdef extern from "_wordmem.h":
    ctypedef struct oasr_chunk:
        Py_ssize_t used
        Py_ssize_t capacity
        PyObject *transcript
    Py_ssize_t OASR_CHUNK_BYTES
    Py_ssize_t OASR_SMALL_CHUNK_BYTES
    Py_ssize_t OASR_SLOTS_OFFSET
    int OASR_SPARE_CHUNKS
    int oasr_spare_count
    Py_ssize_t oasr_chunk_field
    Py_ssize_t oasr_word_refs[3]
    freefunc oasr_python_free
    oasr_chunk *oasr_chunk_new(Py_ssize_t capacity, Py_ssize_t slot, int mapped, object transcript) except NULL
    void oasr_chunk_unref(oasr_chunk *c)
    PyObject *oasr_chunk_take(oasr_chunk *c, PyTypeObject *type)
    void oasr_word_free(void *o)
    void oasr_word_dealloc(PyObject *o)


# Not tracked by the cyclic GC: a Word only holds a str and two caller time values, and a
# million tracked Words would make every collection during a long transcript walk them.
# The references are C pointers, not `object` fields, because group_words builds Words in
# memory it owns (see _wordmem.h) without going through tp_new.
@cython.no_gc
@cython.final
cdef class Word:
    """One word of a transcript: its exact text (a substring of the decode), its time span in
    the caller's unit, and the indices of the first and last tokens whose pieces overlap it.
    Immutable; compares by value."""

    cdef PyObject *_text   # owned; NULL until a grouped Word's text is first asked for
    cdef PyObject *_start  # owned
    cdef PyObject *_end    # owned
    cdef oasr_chunk *_chunk  # where group_words put it (NULL: an ordinary object)
    cdef Py_ssize_t _a, _b   # the text's span in _chunk.transcript
    cdef readonly Py_ssize_t first_token
    cdef readonly Py_ssize_t last_token

    def __init__(self, str text, start, end, Py_ssize_t first_token, Py_ssize_t last_token):
        _set(&self._text, text)
        _set(&self._start, start)
        _set(&self._end, end)
        self.first_token = first_token
        self.last_token = last_token

    # No __dealloc__: _install_allocator gives Word a tp_dealloc written in C (_wordmem.h),
    # which drops the three references without the exception save/restore Cython wraps
    # around a __dealloc__ (measurable when a million Words die at once).

    @property
    def text(self) -> str:
        """The word, exactly as it stands in the transcript."""
        if self._text == NULL:
            if self._chunk == NULL:
                raise AttributeError("Word.__init__ was never called")
            # A grouped Word cuts its text on first use: allocating a million substrings up
            # front costs more than the grouping.
            _set(&self._text, PyUnicode_Substring(<object>self._chunk.transcript, self._a, self._b))
        return <object>self._text

    @property
    def start(self):
        """When the word starts, as the caller gave it."""
        return _get(self._start)

    @property
    def end(self):
        """When the word ends, as the caller gave it."""
        return _get(self._end)

    def _key(self):
        return (self.text, self.start, self.end, self.first_token, self.last_token)

    def __eq__(self, other):
        if not isinstance(other, Word):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"Word(text={self.text!r}, start={self.start!r}, end={self.end!r}, "
                f"first_token={self.first_token}, last_token={self.last_token})")

    def __reduce__(self):
        return (Word, self._key())

    def to_dict(self) -> dict:
        """The fields as a plain dict (for JSON)."""
        return {"text": self.text, "start": self.start, "end": self.end,
                "first_token": self.first_token, "last_token": self.last_token}


cdef inline void _set(PyObject **field, object value) noexcept:
    cdef PyObject *old = field[0]
    Py_INCREF(value)
    field[0] = <PyObject *>value
    Py_XDECREF(old)


cdef inline object _get(PyObject *field):
    if field == NULL:
        raise AttributeError("Word.__init__ was never called")
    return <object>field


cdef Py_ssize_t _word_slot = (<PyTypeObject *>Word).tp_basicsize
_word_slot = (_word_slot + 15) & ~15  # keep every Word 16-byte aligned, as PyObject_Malloc does


cdef void _install_allocator():
    global oasr_chunk_field, oasr_python_free
    cdef Word probe = Word.__new__(Word)
    oasr_chunk_field = <char *>&probe._chunk - <char *><PyObject *>probe
    oasr_word_refs[0] = <char *>&probe._text - <char *><PyObject *>probe
    oasr_word_refs[1] = <char *>&probe._start - <char *><PyObject *>probe
    oasr_word_refs[2] = <char *>&probe._end - <char *><PyObject *>probe
    oasr_python_free = (<PyTypeObject *>Word).tp_free
    (<PyTypeObject *>Word).tp_free = <freefunc>oasr_word_free
    (<PyTypeObject *>Word).tp_dealloc = <destructor>oasr_word_dealloc


_install_allocator()


@cython.final
cdef class _WordMaker:
    """Builds one group_words call's Words in chunks of its own (_wordmem.h): small ones first,
    doubling, then 2 MiB huge-page mappings."""
    cdef oasr_chunk *chunk
    cdef object transcript
    cdef Py_ssize_t next_capacity

    def __dealloc__(self):
        if self.chunk != NULL:
            oasr_chunk_unref(self.chunk)

    cdef Word make(self, Py_ssize_t a, Py_ssize_t b, object start, object end,
                   Py_ssize_t first, Py_ssize_t last):
        cdef PyObject *o = NULL
        cdef oasr_chunk *fresh
        cdef int mapped
        if self.chunk != NULL:
            o = oasr_chunk_take(self.chunk, <PyTypeObject *>Word)
        if o == NULL:
            mapped = OASR_SLOTS_OFFSET + self.next_capacity * _word_slot > OASR_SMALL_CHUNK_BYTES
            if mapped:
                self.next_capacity = (OASR_CHUNK_BYTES - OASR_SLOTS_OFFSET) // _word_slot
            fresh = oasr_chunk_new(self.next_capacity, _word_slot, mapped, self.transcript)
            if self.chunk != NULL:
                oasr_chunk_unref(self.chunk)
            self.chunk = fresh
            self.next_capacity *= 2
            o = oasr_chunk_take(self.chunk, <PyTypeObject *>Word)
        cdef Word w = <Word>o  # a second reference: drop the one oasr_chunk_take made
        Py_DECREF(w)
        w._a = a
        w._b = b
        Py_INCREF(start)
        w._start = <PyObject *>start
        Py_INCREF(end)
        w._end = <PyObject *>end
        w.first_token = first
        w.last_token = last
        return w


cdef list _as_list(object values, str name):
    # NumPy arrays: tolist() gives Python ints for integer arrays and floats for float arrays,
    # so the caller's unit and type survive into Word.start/end.
    if isinstance(values, list):
        return <list>values
    tolist = getattr(values, "tolist", None)
    if tolist is not None and not isinstance(values, (str, bytes)):
        out = tolist()
        if isinstance(out, list):
            return out
    if isinstance(values, (str, bytes, dict, set, frozenset)):
        raise TimingError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
    try:
        return list(values)
    except TypeError:
        raise TimingError(f"{name} must be a sequence of numbers, got {type(values).__name__}") from None


cdef double _number(list values, Py_ssize_t k, str name) except? -1.0:
    cdef double x
    cdef long long whole
    cdef int overflow = 0
    value = values[k]
    if PyFloat_CheckExact(value):  # the common cases, without a Python-level call
        x = PyFloat_AS_DOUBLE(value)
        if isfinite(x):
            return x
    elif PyLong_CheckExact(value):
        whole = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow and -_EXACT <= whole <= _EXACT:
            return <double>whole
    if isinstance(value, (str, bytes, bytearray, bool)):  # float() would accept them
        raise TimingError(f"{name}[{k}] = {short_repr(value)} is not a number")
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise TimingError(f"{name}[{k}] = {short_repr(value)} is not a number") from None
    if not isfinite(x):
        raise TimingError(f"{name}[{k}] = {short_repr(value)}: times must be finite numbers (no NaN or infinity)")
    return x


cdef bint _before(object a, object b, double da, double db) except -1:
    """Whether time a < time b, exactly. Rounding to double keeps order, so different doubles
    decide; equal doubles may come from different numbers (ints above 2**53, Fractions), which
    are then compared as the numbers they are."""
    if da != db:
        return da < db
    if PyFloat_CheckExact(a) and PyFloat_CheckExact(b):
        return False
    try:
        return bool(a < b)
    except TypeError:  # a number type that converts to float but does not order with the other
        return False


cdef void _check_times(list starts, list ends, Py_ssize_t n) except *:
    cdef Py_ssize_t k
    cdef double s, prev_s = 0.0, e, prev_e = 0.0
    for k in range(n):
        s = _number(starts, k, "starts")
        if k and _before(starts[k], starts[k - 1], s, prev_s):
            raise TimingError(
                f"starts[{k}] = {starts[k]!r} is before starts[{k - 1}] = {starts[k - 1]!r}: "
                "token start times must be non-decreasing")
        prev_s = s
        if ends is not None:
            e = _number(ends, k, "ends")
            if _before(ends[k], starts[k], e, s):
                raise TimingError(f"ends[{k}] = {ends[k]!r} is before starts[{k}] = {starts[k]!r}")
            if k and _before(ends[k], ends[k - 1], e, prev_e):
                raise TimingError(
                    f"ends[{k}] = {ends[k]!r} is before ends[{k - 1}] = {ends[k - 1]!r}: "
                    "token end times must be non-decreasing")
            prev_e = e


@cython.final
cdef class _Emitter:
    """Turns word character ranges into Word records. Ranges arrive in order, so the token
    that owns a character is found by a pointer that only moves forward.

    Whitespace-only tokens between two words give their time to both (docs/decoding.md): the
    earliest of them starts the word after, the latest ends the word before. So a word is held
    back until the next one (or `finish`) shows which tokens follow it. Each token is looked at
    once as a gap token at most, so the whole pass stays linear."""

    cdef str text
    cdef int kind
    cdef void *data
    cdef list pieces
    cdef Py_ssize_t n, total
    # The token the pointer is on, and its piece's span [tok_a, tok_b) in the text.
    cdef Py_ssize_t tok, tok_a, tok_b
    cdef list starts
    cdef list ends
    cdef list words
    cdef _WordMaker maker
    # The held word: characters [h_a, h_b), tokens overlapping it h_first..h_last, and the
    # token whose start time it takes (h_first, or a whitespace-only token before it).
    cdef bint held
    cdef Py_ssize_t h_a, h_b, h_first, h_last, h_start_tok
    cdef Py_ssize_t prev_last  # last token of the previous word; -1 before the first
    # Whitespace-only tokens the pointer passed since the previous word (-1: none).
    cdef Py_ssize_t gap_first, gap_last

    cdef int advance(self, bint note_gap) except -1:
        """Move the pointer to the next token; with note_gap, note the one it leaves if it is a
        gap token."""
        cdef PyObject *piece
        if note_gap and self.tok > self.prev_last and self.whitespace_only():
            if self.gap_first < 0:
                self.gap_first = self.tok
            self.gap_last = self.tok
        if self.tok + 1 >= self.n:  # a position past the text: a bug, never a crash
            raise AssertionError("the grouping ran past the last piece")
        if PyList_GET_SIZE(self.pieces) != self.n:
            raise RuntimeError("pieces changed during the grouping")
        self.tok += 1
        piece = PyList_GET_ITEM(self.pieces, self.tok)
        if not PyUnicode_Check(piece):
            raise RuntimeError("pieces changed during the grouping")
        self.tok_a = self.tok_b
        self.tok_b += PyUnicode_GET_LENGTH(<object>piece)
        if self.tok_b > self.total:  # never read past the text the pieces were joined into
            raise RuntimeError("pieces changed during the grouping")
        return 0

    cdef Py_ssize_t owner(self, Py_ssize_t pos, bint note_gaps) except -1:
        while self.tok_b <= pos:
            self.advance(note_gaps)
        return self.tok

    cdef bint whitespace_only(self):
        """The current token's piece is non-empty and all whitespace (a bare ▁, a newline...)."""
        cdef Py_ssize_t i
        if self.tok_b <= self.tok_a:
            return False  # renders nothing: gives no time
        for i in range(self.tok_a, self.tok_b):
            if not Py_UNICODE_ISSPACE(PyUnicode_READ(self.kind, self.data, i)):
                return False
        return True

    cdef int release(self, Py_ssize_t end_tok) except -1:
        """Append the held word, ending at token end_tok's end."""
        if self.ends is not None:
            end = self.ends[end_tok]
        elif end_tok + 1 < self.n:
            end = self.starts[end_tok + 1]
        else:
            end = self.starts[end_tok]
        self.words.append(self.maker.make(self.h_a, self.h_b, self.starts[self.h_start_tok], end,
                                          self.h_first, self.h_last))
        self.held = False
        return 0

    cdef int emit(self, Py_ssize_t a, Py_ssize_t b) except -1:
        # Tokens strictly between the previous word and this one render only whitespace or
        # nothing; the pointer notes the whitespace-only ones (the gap tokens) as it passes.
        self.gap_first = self.gap_last = -1
        cdef Py_ssize_t first = self.owner(a, True)
        cdef Py_ssize_t gap_first = self.gap_first, gap_last = self.gap_last
        cdef Py_ssize_t last = self.owner(b - 1, False)  # inside the word: no gaps
        if self.held:
            self.release(gap_last if gap_last >= 0 else self.h_last)
        self.held = True
        self.h_a, self.h_b, self.h_first, self.h_last = a, b, first, last
        self.h_start_tok = gap_first if gap_first >= 0 else first
        self.prev_last = last
        return 0

    cdef int finish(self) except -1:
        """Release the last word, its end extended over whitespace-only tokens after it."""
        if not self.held:
            return 0
        self.gap_last = -1
        while self.tok + 1 < self.n:
            self.advance(True)
        if self.tok > self.prev_last and self.whitespace_only():
            self.gap_last = self.tok
        return self.release(self.gap_last if self.gap_last >= 0 else self.h_last)


def group_words(pieces, starts, ends=None) -> list:
    """Timed words cut out of ``"".join(pieces)``: see docs/decoding.md § Word timings.

    ``pieces`` holds one str per token; ``starts`` (and ``ends``, if given) one time per token,
    non-decreasing, finite, with ``ends[k] >= starts[k]``. TimingError otherwise."""
    cdef list piece_list = list(pieces) if not isinstance(pieces, list) else pieces
    cdef Py_ssize_t n = len(piece_list)
    cdef list start_list = _as_list(starts, "starts")
    cdef list end_list = None if ends is None else _as_list(ends, "ends")
    if len(start_list) != n:
        raise TimingError(f"starts has {len(start_list)} times for {n} tokens: give one start time per token")
    if end_list is not None and len(end_list) != n:
        raise TimingError(f"ends has {len(end_list)} times for {n} tokens: give one end time per token")
    _check_times(start_list, end_list, n)

    cdef _Emitter out = _Emitter.__new__(_Emitter)
    out.words = []
    out.starts = start_list
    out.ends = end_list
    out.n = n
    if n == 0:
        return out.words
    cdef Py_ssize_t k, total = 0
    for k in range(n):
        piece = piece_list[k]
        if not isinstance(piece, str):
            raise TypeError(f"pieces[{k}] is {type(piece).__name__}, not str")
        total += PyUnicode_GET_LENGTH(piece)
    cdef str text = "".join(piece_list)
    out.text = text
    if PyUnicode_GET_LENGTH(text) != total:  # a str subclass lying about itself
        raise TypeError("pieces do not join to their own total length")
    out.maker = _WordMaker.__new__(_WordMaker)
    out.maker.transcript = text
    out.maker.next_capacity = 64

    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    out.kind = kind
    out.data = data
    out.held = False
    out.prev_last = -1
    out.pieces = piece_list
    out.tok, out.tok_a, out.tok_b = 0, 0, PyUnicode_GET_LENGTH(piece_list[0])
    out.total = total
    cdef Py_UCS4 cp, prev_cp = 0
    cdef int c, prev_c = C_SPACE
    cdef Py_ssize_t i
    # The word being built runs from w_start to w_end (-1: none yet). A pending opening mark
    # at `pending` starts the next word; `lead` is where punctuation before the first core began.
    cdef Py_ssize_t w_start = -1, w_end = 0, pending = -1, lead = -1, last_visible = 0
    cdef bint in_word_run = False  # inside a run of word characters that may still continue
    cdef bint stacked = False      # previous character was a Myanmar virama / Khmer coeng

    for i in range(total):
        cp = PyUnicode_READ(kind, data, i)
        c = C_SPACE if Py_UNICODE_ISSPACE(cp) else _cls(cp)
        if c == C_EXTEND or (stacked and c == C_SOLO):
            # Part of the character before it; at the start of a run it is an ordinary word
            # character (a stray mark must still land in some word).
            c = C_WORD if prev_c == C_SPACE else C_EXTEND
        stacked = cp == 0x1039 or cp == 0x17D2
        if c == C_SPACE:
            in_word_run = False
        elif c == C_EXTEND:
            if w_start >= 0 and w_end == i:
                w_end = i + 1
        elif c == C_CLOSE:
            if w_start < 0:
                if lead < 0:
                    lead = i
            elif pending < 0:
                w_end = i + 1
        elif c == C_OPEN:
            if w_start < 0:
                if lead < 0:
                    lead = i
            elif pending < 0:
                pending = i
        elif c == C_WORD and in_word_run:
            w_end = i + 1  # the punctuation since the last word character was inside the word
            pending = -1
        else:  # a new core: a word character starting a run, or a character written without spaces
            if w_start >= 0:
                out.emit(w_start, w_end)
                w_start = pending if pending >= 0 else i
            else:
                w_start = lead if lead >= 0 else i
            w_end = i + 1
            pending = -1
            in_word_run = c == C_WORD
        if c != C_SPACE:
            last_visible = i + 1
        prev_c = c
    if w_start >= 0:
        out.emit(w_start, last_visible)  # trailing punctuation, opening or not, joins the last word
    elif lead >= 0:
        # Punctuation only: each whitespace-separated run is a word.
        w_start = -1
        for i in range(total):
            if Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i)):
                if w_start >= 0:
                    out.emit(w_start, i)
                    w_start = -1
            elif w_start < 0:
                w_start = i
        if w_start >= 0:
            out.emit(w_start, total)
    out.finish()
    return out.words



def _allocator_stats() -> dict:
    """How many freed 2 MiB chunks are kept for reuse, and the most that ever are (for tests)."""
    return {"spare_chunks": oasr_spare_count, "spare_limit": OASR_SPARE_CHUNKS,
            "chunk_bytes": OASR_CHUNK_BYTES, "word_bytes": _word_slot}
