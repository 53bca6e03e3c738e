# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""The compiled word grouping behind ``Tokenizer.word_timings`` (rules: docs/decoding.md
§ Word timings).

One left-to-right pass over the transcript ``"".join(pieces)``, with O(1) state: cores (a run
of letters/digits/symbols, or one character of a script written without spaces) become words,
and the punctuation between cores is handed to the core before it (closing marks) or after it
(everything from the first opening bracket or quote on). Token ownership of a word's first and
last character is found with a pointer that only moves forward, so the whole call is linear in
characters + tokens. The words go into a columnar `Words` (oasr_tok/_engine/wordtypes.pyx): no
Python object is made per word.

Character classes come from ``unicodedata`` (general category) and code point ranges (script),
computed once per distinct code point and cached in a lazily allocated byte table: the scan
itself never calls back into Python for a character it has seen before.
"""
import unicodedata

cimport cython
from cpython.array cimport array, clone
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_STRIDES, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_CheckExact
from cpython.object cimport PyObject
from libc.math cimport isfinite
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc
from libc.string cimport memcpy

from oasr_tok._engine.wordtypes cimport Words, new_words, typed_time

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
    C_EXTEND = 6  # combining marks, format characters, length/voicing marks: part of the char before

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


# The classes of the ASCII characters, the common case, read without the table's checks.
cdef unsigned char _ascii[128]
for _cp in range(128):
    _ascii[_cp] = char_class(chr(_cp))


cdef extern from *:
    """
    /* A class byte of the shared table, read and written whole: on free-threaded builds two
       threads may fill the same entry (with the same class) at once. */
    #if defined(__GNUC__) || defined(__clang__)
    #define OASR_LOAD_CLASS(p) __atomic_load_n((p), __ATOMIC_RELAXED)
    #define OASR_STORE_CLASS(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
    #else
    #define OASR_LOAD_CLASS(p) (*(volatile unsigned char *)(p))
    #define OASR_STORE_CLASS(p, v) (*(volatile unsigned char *)(p) = (v))
    #endif
    """
    unsigned char OASR_LOAD_CLASS(unsigned char* p) noexcept nogil
    void OASR_STORE_CLASS(unsigned char* p, unsigned char v) noexcept nogil


# The class of every code point met so far (0: not yet classified), allocated when the module is
# imported and filled as characters are met: the pages of code points never met are never touched.
_table = <unsigned char *>calloc(MAX_CP, 1)
if _table == NULL:
    raise MemoryError("oasr_tok._engine.words: no memory for the character-class table")


cdef inline int _cls(Py_UCS4 cp) except -1:
    cdef int c
    if cp < 128:
        return _ascii[cp]
    if cp >= MAX_CP:  # cannot happen for a str, but never index past the table
        return C_WORD
    c = OASR_LOAD_CLASS(&_table[cp])
    if c == 0:
        c = char_class(chr(cp))
        OASR_STORE_CLASS(&_table[cp], <unsigned char>c)
    return c


# -- times -------------------------------------------------------------------------------------
#
# A list of times is read as it is (its items are what Word.start/end hold). Anything else with
# a one-dimensional buffer of a float32/float64 or integer format (NumPy arrays in any byte
# order and stride, array.array, memoryview; a tensor through its __array__) is copied in C
# into a typed array.array: "d" for floats, "q" / "Q" for integers, so no Python object is
# made per token, and a Word's time is made from the copy when asked for, as the Python float
# or int NumPy's tolist() gives. Other formats (half floats, bools, complex, objects) and
# everything else take the list path: tolist() or list(), checked item by item.

cdef int _one = 1
cdef bint _host_little = (<char*>&_one)[0] == 1
cdef array _DOUBLES = array("d")
cdef array _INTS = array("q")
cdef array _UINTS = array("Q")

ctypedef fused time_t:
    int8_t
    uint8_t
    int16_t
    uint16_t
    int32_t
    uint32_t
    int64_t
    uint64_t
    float
    double


cdef char _time_code(const char* fmt, Py_ssize_t itemsize, bint* swap) noexcept:
    """A buffer format as the element type read: b B h H i I q Q (integers, by item size) or
    f d, or 0 for what the compiled path does not read. `swap`: stored in the other byte order."""
    cdef char code
    cdef int order = 0  # 0 native, 1 little, 2 big
    cdef bint signed
    if fmt == NULL:
        fmt = b"B"
    if fmt[0] == b"<":
        order = 1
        fmt += 1
    elif fmt[0] == b">" or fmt[0] == b"!":
        order = 2
        fmt += 1
    elif fmt[0] == b"@" or fmt[0] == b"=":
        fmt += 1
    code = fmt[0]
    if code == 0 or fmt[1] != 0:
        return 0
    swap[0] = (order == 1 and not _host_little) or (order == 2 and _host_little)
    if code == b"f":
        return code if itemsize == 4 else 0
    if code == b"d":
        return code if itemsize == 8 else 0
    if code in b"bhilqn":
        signed = True
    elif code in b"BHILQN":
        signed = False
    else:
        return 0
    if itemsize == 1:
        return b"b" if signed else b"B"
    if itemsize == 2:
        return b"h" if signed else b"H"
    if itemsize == 4:
        return b"i" if signed else b"I"
    if itemsize == 8:
        return b"q" if signed else b"Q"
    return 0


cdef void _load(const char* p, Py_ssize_t stride, Py_ssize_t n, bint swap, char* out, time_t kind) noexcept nogil:
    """n elements of `time_t` from p (stride bytes apart) into out: doubles for floats, uint64
    for uint64, int64 for every other integer."""
    cdef Py_ssize_t i, b
    cdef time_t v
    cdef unsigned char raw[8]
    for i in range(n):
        if swap:
            for b in range(<Py_ssize_t>sizeof(time_t)):
                raw[b] = (<const unsigned char*>p)[sizeof(time_t) - 1 - b]
            memcpy(&v, raw, sizeof(time_t))
        else:
            memcpy(&v, p, sizeof(time_t))  # a load; memcpy because a buffer need not be aligned
        p += stride
        if time_t is float or time_t is double:
            (<double*>out)[i] = <double>v
        elif time_t is uint64_t:
            (<uint64_t*>out)[i] = v
        else:
            (<int64_t*>out)[i] = <int64_t>v


cdef void _load_any(char code, const char* p, Py_ssize_t stride, Py_ssize_t n, bint swap, char* out) noexcept nogil:
    if code == b"d":
        _load[double](p, stride, n, swap, out, 0)
    elif code == b"f":
        _load[float](p, stride, n, swap, out, 0)
    elif code == b"q":
        _load[int64_t](p, stride, n, swap, out, 0)
    elif code == b"Q":
        _load[uint64_t](p, stride, n, swap, out, 0)
    elif code == b"i":
        _load[int32_t](p, stride, n, swap, out, 0)
    elif code == b"I":
        _load[uint32_t](p, stride, n, swap, out, 0)
    elif code == b"h":
        _load[int16_t](p, stride, n, swap, out, 0)
    elif code == b"H":
        _load[uint16_t](p, stride, n, swap, out, 0)
    elif code == b"b":
        _load[int8_t](p, stride, n, swap, out, 0)
    else:
        _load[uint8_t](p, stride, n, swap, out, 0)


cdef array _read_buffer(object values, object source, str name):
    """The times of `source` (the buffer of `values`, or what its __array__ gave) as a typed
    copy; None when its format is not one read here (the list path then reads it)."""
    cdef Py_buffer view
    cdef bint swap = False
    cdef char code
    cdef array out, template
    try:
        PyObject_GetBuffer(source, &view, PyBUF_STRIDES | PyBUF_FORMAT)
    except (BufferError, TypeError, ValueError):
        return None
    try:
        if view.ndim == 0:
            raise TimingError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
        if view.ndim != 1:
            shape = "(" + ", ".join([str(view.shape[d]) for d in range(view.ndim)]) + ")"
            raise TimingError(
                f"{name} must be one time per token (one dimension), got a {view.ndim}-D "
                f"{type(values).__name__} of shape {shape}")
        code = _time_code(view.format, view.itemsize, &swap)
        if code == 0:
            return None
        template = _INTS
        if code == b"d" or code == b"f":
            template = _DOUBLES
        elif code == b"Q":
            template = _UINTS
        out = clone(template, view.shape[0], False)
        with nogil:
            _load_any(code, <const char*>view.buf, view.strides[0] if view.strides != NULL else view.itemsize,
                      view.shape[0], swap, out.data.as_chars)
        return out
    finally:
        PyBuffer_Release(&view)


cdef array _typed_times(object values, str name):
    """A typed copy of `values`' times when it is a numeric buffer (or a tensor whose
    __array__ gives one); None otherwise."""
    if PyObject_CheckBuffer(values):
        # bytes are text to the list path (refused); a masked array's tolist() names its
        # masked entries, which its buffer would silently read.
        if isinstance(values, bytes) or getattr(type(values), "mask", None) is not None:
            return None
        return _read_buffer(values, values, name)
    if getattr(type(values), "__array__", None) is None:
        return None
    try:
        source = values.__array__()
    except Exception:  # a device or autograd tensor: its tolist() (the list path) may still work
        return None
    if (not PyObject_CheckBuffer(source) or isinstance(source, bytes)
            or getattr(type(source), "mask", None) is not None):
        return None
    return _read_buffer(values, source, name)


@cython.final
cdef class _Times:
    """One argument of times as read: the caller's items (`objects`) or a typed copy."""
    cdef list objects
    cdef array typed
    cdef char code  # 0: objects; "d", "q" or "Q": typed
    cdef str name
    cdef Py_ssize_t n

    cdef inline object value(self, Py_ssize_t k):
        """Time k as Word.start/end would hold it (also what messages show)."""
        if self.code == 0:
            return self.objects[k]
        return typed_time(self.typed, k)

    cdef inline double number(self, Py_ssize_t k) except? -1.0:
        cdef double x
        if self.code == 0:
            return _number(self.objects, k, self.name)
        if self.code == b"d":
            x = self.typed.data.as_doubles[k]
            if not isfinite(x):
                raise TimingError(
                    f"{self.name}[{k}] = {short_repr(x)}: times must be finite numbers (no NaN or infinity)")
            return x
        if self.code == b"q":
            return <double>self.typed.data.as_longlongs[k]
        return <double>self.typed.data.as_ulonglongs[k]

    cdef object stored(self, object given):
        """What the Words keeps: the typed copy, or the items in a list of its own."""
        if self.code:
            return self.typed
        return list(self.objects) if self.objects is given else self.objects


cdef _Times _times(object values, str name):
    cdef _Times out = _Times.__new__(_Times)
    out.name = name
    if isinstance(values, list):
        out.objects = <list>values
    else:
        out.typed = _typed_times(values, name)
        if out.typed is None:
            out.objects = _as_list(values, name)
        else:
            out.code = out.typed.ob_descr.typecode
    out.n = len(out.objects) if out.code == 0 else len(out.typed)
    return out


def token_times(values, str name="starts"):
    """The times of `values` (any input group_words takes), one per token, indexed as the
    objects a Word holds: the caller's list, or the typed copy (an array.array of "d", "q" or
    "Q", whose items are the float or int tolist() gives), so no object is made per token.
    For compiled callers that build their own words (delimited_words)."""
    cdef _Times times = _times(values, name)
    return times.objects if times.code == 0 else times.typed


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
    """Turns word character ranges into rows of a Words. Ranges arrive in order, so the token
    that owns a character is found by a pointer that only moves forward.

    A word is timed by the tokens that printed its characters (docs/decoding.md): it starts at
    its first token's start and ends at its last token's end. A whitespace-only token between
    two words printed neither, so its time is the gap between them."""

    cdef list pieces
    cdef Py_ssize_t n, total
    # The token the pointer is on, and its piece's span [tok_a, tok_b) in the text.
    cdef Py_ssize_t tok, tok_a, tok_b
    cdef Words words
    # commit_break: no rows at all, only the last break before a word with a letter in it.
    cdef bint breaks_only
    cdef str text
    cdef Py_ssize_t seen, last_end, break_end, break_letter

    cdef int advance(self) except -1:
        cdef PyObject *piece
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

    cdef Py_ssize_t owner(self, Py_ssize_t pos) except -1:
        while self.tok_b <= pos:
            self.advance()
        return self.tok

    cdef int emit(self, Py_ssize_t a, Py_ssize_t b) except -1:
        cdef Py_ssize_t letter
        if self.breaks_only:
            if self.seen:
                letter = first_letter(self.text, a, b)
                if letter >= 0:
                    self.break_end, self.break_letter = self.last_end, letter
            self.seen += 1
            self.last_end = b
            return 0
        cdef Py_ssize_t first = self.owner(a)
        cdef Py_ssize_t last = self.owner(b - 1)
        # The times are read through first/last when asked for (Words.start_of / end_of).
        return self.words.push(a, b, first, last)


cdef bint _typed_before(_Times a, Py_ssize_t i, _Times b, Py_ssize_t j, double da, double db) except -1:
    """Whether time a[i] < time b[j], exactly, for times of any source (as _before)."""
    cdef int64_t x, y
    if da != db:
        return da < db
    if a.code == b"d" and b.code == b"d":
        return False
    if (a.code == b"q" or a.code == b"Q") and (b.code == b"q" or b.code == b"Q"):
        if a.code == b"q" and b.code == b"q":
            return a.typed.data.as_longlongs[i] < b.typed.data.as_longlongs[j]
        if a.code == b"Q" and b.code == b"Q":
            return a.typed.data.as_ulonglongs[i] < b.typed.data.as_ulonglongs[j]
        if a.code == b"q":
            x = a.typed.data.as_longlongs[i]
            return x < 0 or <uint64_t>x < b.typed.data.as_ulonglongs[j]
        y = b.typed.data.as_longlongs[j]
        return y >= 0 and a.typed.data.as_ulonglongs[i] < <uint64_t>y
    return _before(a.value(i), b.value(j), da, db)


cdef void _check_all_times(_Times starts, _Times ends, Py_ssize_t n) except *:
    """_check_times for times of any source: the same checks, in the same order, with the same
    messages (a typed time is shown as the Python value tolist() gives)."""
    cdef Py_ssize_t k
    cdef double s, prev_s = 0.0, e, prev_e = 0.0
    if starts.code == 0 and (ends is None or ends.code == 0):
        _check_times(starts.objects, None if ends is None else ends.objects, n)
        return
    for k in range(n):
        s = starts.number(k)
        if k and _typed_before(starts, k, starts, k - 1, s, prev_s):
            raise TimingError(
                f"starts[{k}] = {starts.value(k)!r} is before starts[{k - 1}] = {starts.value(k - 1)!r}: "
                "token start times must be non-decreasing")
        prev_s = s
        if ends is not None:
            e = ends.number(k)
            if _typed_before(ends, k, starts, k, e, s):
                raise TimingError(f"ends[{k}] = {ends.value(k)!r} is before starts[{k}] = {starts.value(k)!r}")
            if k and _typed_before(ends, k, ends, k - 1, e, prev_e):
                raise TimingError(
                    f"ends[{k}] = {ends.value(k)!r} is before ends[{k - 1}] = {ends.value(k - 1)!r}: "
                    "token end times must be non-decreasing")
            prev_e = e


def group_words(pieces, starts, ends=None) -> Words:
    """Timed words cut out of ``"".join(pieces)``: see docs/decoding.md § Word timings.

    ``pieces`` holds one str per token; ``starts`` (and ``ends``, if given) one time per token,
    non-decreasing, finite, with ``ends[k] >= starts[k]``. TimingError otherwise."""
    cdef list piece_list = list(pieces) if not isinstance(pieces, list) else pieces
    cdef Py_ssize_t n = len(piece_list)
    cdef _Times start_times = _times(starts, "starts")
    cdef _Times end_times = None if ends is None else _times(ends, "ends")
    if start_times.n != n:
        raise TimingError(f"starts has {start_times.n} times for {n} tokens: give one start time per token")
    if end_times is not None and end_times.n != n:
        raise TimingError(f"ends has {end_times.n} times for {n} tokens: give one end time per token")
    _check_all_times(start_times, end_times, n)

    cdef _Emitter out = _Emitter.__new__(_Emitter)
    out.n = n
    if n == 0:
        return new_words("", [], None)
    cdef Py_ssize_t k, total = 0
    for k in range(n):
        piece = piece_list[k]
        if not isinstance(piece, str):
            raise TypeError(f"pieces[{k}] is {type(piece).__name__}, not str")
        total += PyUnicode_GET_LENGTH(piece)
    cdef str text = "".join(piece_list)
    if PyUnicode_GET_LENGTH(text) != total:  # a str subclass lying about itself
        raise TypeError("pieces do not join to their own total length")
    # The Words keeps the times to read its words' times from: copies, where the lists are the
    # caller's own (a later change to them must not change the result).
    out.words = new_words(text, start_times.stored(starts), None if end_times is None else end_times.stored(ends))
    out.words.reserve(min(n, total) + 1)  # fewer words than tokens: one allocation

    out.pieces = piece_list
    out.tok, out.tok_a, out.tok_b = 0, 0, PyUnicode_GET_LENGTH(piece_list[0])
    out.total = total
    _scan(text, out, total)
    return out.words


cdef Py_ssize_t first_letter(str text, Py_ssize_t a, Py_ssize_t b) except -2:
    """Index in text of the first letter of text[a:b] (a word or solo-script character, by its
    own class), -1 if none."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t k
    cdef int c
    for k in range(a, b):
        c = _cls(PyUnicode_READ(kind, data, k))
        if c == C_WORD or c == C_SOLO:
            return k
    return -1


cdef Py_ssize_t commit_break(str text, Py_ssize_t limit, Py_ssize_t* letter) except -2:
    """Where decode_hypothesis may commit in text[:limit], grouped as group_words groups
    that text: the end of the last word that another word with a letter follows (*letter: the
    index of that word's first letter, the character whose being settled the break waits for);
    -1 (and *letter -1) when there is none. Made without rows: only the answer is kept."""
    global _breaks_busy
    cdef _Emitter out
    if not 0 <= limit <= PyUnicode_GET_LENGTH(text):
        raise ValueError(f"limit {limit} is outside the text's {PyUnicode_GET_LENGTH(text)} characters")
    # One emitter serves every call (a new one per call was a sixth of the call's cost in
    # decode_hypothesis); a call that finds it in use (no Python code runs inside a scan, but
    # that is not this function's to assume) makes its own.
    out = _Emitter.__new__(_Emitter) if _breaks_busy else _breaks
    _breaks_busy = out is _breaks
    try:
        out.breaks_only = True
        out.text = text
        out.seen = 0
        out.last_end = 0
        out.break_end = -1
        out.break_letter = -1
        _scan(text, out, limit)
        letter[0] = out.break_letter
        return out.break_end
    finally:
        out.text = None
        if out is _breaks:
            _breaks_busy = False


cdef _Emitter _breaks = _Emitter.__new__(_Emitter)
cdef bint _breaks_busy = False


cdef int _scan(str text, _Emitter out, Py_ssize_t total) except -1:
    """The grouping itself: the words of text[:total] (total <= len(text): the callers' check),
    handed to `out` in order."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef Py_UCS4 cp
    cdef int c, prev_c = C_SPACE
    cdef Py_ssize_t i
    # The word being built runs from w_start to w_end (-1: none yet). A pending opening mark
    # at `pending` starts the next word; `lead` is where punctuation before the first core began.
    cdef Py_ssize_t w_start = -1, w_end = 0, pending = -1, lead = -1, last_visible = 0
    cdef bint in_word_run = False  # inside a run of word characters that may still continue
    cdef bint stacked = False      # previous character was a Myanmar virama / Khmer coeng

    for i in range(total):
        cp = PyUnicode_READ(kind, data, i)
        c = _ascii[cp] if cp < 128 else C_SPACE if Py_UNICODE_ISSPACE(cp) else _cls(cp)
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
    return 0
