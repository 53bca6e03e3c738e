# cython: language_level=3, boundscheck=True, wraparound=False
"""`decode_hypothesis` (the policy and its guarantees: oasr_tok/core/revisions.py and
docs/decoding.md § Revisions), compiled: a call of a bounded tail should cost about what the
kind's own decode_incremental of that tail costs, and in Python the bookkeeping around the
steps (tuples, slices, the window comparison, the word offsets) cost twenty to forty times that.

A kind that streams through a PieceTable has its streams kept as the table's snapshots (its
decoder state without a state dict, see _engine/piece_table.pyx) and stepped by the table's C loop; a
kind that steps a value (FunASR's, revisions.py) by its own steps; every other kind's streams
are its own decode_incremental states, stepped by calling it.

What a stream keeps between calls, state[_STATE_KEY], is one HypothesisState: C fields and
the last committed ids in a C array, so a call reads and writes it without unpacking or
making tuples and ints. One can only be made here or from its fields (a copy, a pickle), and
the fields are checked then: a record that exists is well-formed, and what it cannot know (that
its stream and window belong to this tokenizer) is checked on use. The state is written only
once the whole call has succeeded; a record that only this state holds is updated in place
(its refcount proves nobody else can see it, as for the committed str in textbuf.h), a shared
one (a shallow copy of the state holds it too) is replaced, so every copy of a state forks.
"""
cimport cython
from cpython.dict cimport PyDict_Contains, PyDict_Copy, PyDict_GetItemWithError
from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from cpython.mem cimport PyMem_Malloc
from cpython.long cimport PyLong_CheckExact, PyLong_FromSsize_t
from cpython.list cimport PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_REFCNT
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.string cimport memcmp, memcpy, memmove

from oasr_tok._engine.ids cimport SMALL_IDS, IdBuffer, read_ids, release_ids
from oasr_tok._engine.piece_table cimport PieceTable, TableMethods, Vars, _joined
from oasr_tok._engine.growtext cimport GrowText
from oasr_tok._engine.textbuf cimport oasr_append
from oasr_tok._engine.words cimport commit_break, first_letter
from oasr_tok._engine.wordtypes cimport Words

from math import isfinite
from numbers import Real

from oasr_tok._engine.ids import check_ids
from oasr_tok._engine.words import group_words
from oasr_tok.errors import StreamStateError, TimingError, TokenizerError, stream_closed_error
from oasr_tok._engine.travel import arrive, carry, travel_of
from oasr_tok._engine.travel import count as _checked_count

cdef extern from "Python.h":
    PyObject* PyList_GET_ITEM(object, Py_ssize_t)
    PyObject** PySequence_Fast_ITEMS(object)
    PyObject* PyTuple_GET_ITEM(object, Py_ssize_t)
    int PyObject_RichCompareBool(PyObject*, PyObject*, int) except -1
    int Py_EQ
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    bint PyUnicode_CheckExact(object)
    Py_UCS4 PyUnicode_MAX_CHAR_VALUE(object)
    int PyUnicode_KIND(object)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value)
    void* PyUnicode_DATA(object)
    str PyUnicode_New(Py_ssize_t, Py_UCS4)

cdef extern from *:
    """
    /* On free-threaded builds a refcount of 1 does not prove that no other thread is about to
       read an object (textbuf.h's condition 4): a record is then never updated in place. */
    #ifdef Py_GIL_DISABLED
    #define OASR_GIL_BUILD 0
    #else
    #define OASR_GIL_BUILD 1
    #endif
    /* A branch the usual call (a PieceTable kind, two hypotheses agreeing, no times, not final)
       does not take: laid out after the usual path, so that path's code is one compact run.
       Its instruction-cache misses, more than its instructions, are what a call costs beyond
       one decode_incremental of its tail (benchmarks/RESULTS.md § Measurements behind the
       code). */
    #define OASR_RARE(x) __builtin_expect(!!(x), 0)
    """
    bint OASR_GIL_BUILD
    bint OASR_RARE(bint)

#: How many committed ids before the commit point each call compares with the hypothesis to
#: detect that the recogniser revised committed ids. Ids further back are never read.
WINDOW = 64
cdef Py_ssize_t _WINDOW = WINDOW
cdef enum:
    _CAPACITY = 128  # a record's window storage: 2 x WINDOW, so it is moved down once per WINDOW ids

cdef str _STATE_KEY = "_hypothesis"
cdef str _COMMITTED = "committed"
cdef str _COMMITTED_TOKENS = "committed_tokens"
cdef str _REVISION = "revision"
cdef str _DECODE_INCREMENTAL = "decode_incremental"
cdef str _PLACEHOLDER = "\u3007"  # IDEOGRAPHIC NUMBER ZERO: a solo-script character, a word by itself
cdef Py_ssize_t _PLACEHOLDER_LEN = 1
cdef tuple _EMPTY = ()
cdef dict _NO_DICT = {}

# The contract's reference decode_incremental (it reads all of state["text"]). The contract
# (oasr_tok.core.contract) hands it over when it is defined: the engine imports nothing above it.
cdef object _abc_decode_incremental = None


def use_reference_decode(object decode_incremental) -> None:
    """Called once by oasr_tok.core.contract with TokenizerContract.decode_incremental, the
    reference a kind that does not replace it streams with (see _keeps_whole_text)."""
    global _abc_decode_incremental
    _abc_decode_incremental = decode_incremental


cdef object _table_decode_incremental = TableMethods.decode_incremental


cdef object _forged(str why=None):
    return StreamStateError(f"state[{_STATE_KEY!r}] was not made by decode_hypothesis"
                            + (f" ({why})" if why else "") + "; start a new stream from {}")


cdef Py_ssize_t _count(object value, str name) except -1:
    """value as a count (an exact int from 0 to sys.maxsize), else StreamStateError naming the
    field (a C field cannot hold more: never the OverflowError of the conversion)."""
    try:
        return _checked_count(value, name)
    except StreamStateError as exc:
        raise _forged(str(exc)) from None


@cython.final
cdef class HypothesisState:
    """What decode_hypothesis keeps in state["_hypothesis"] between calls (its fields: see
    oasr_tok/core/revisions.py). Copied, pickled and compared by its fields; made from them, they are
    checked first, and a bad one raises StreamStateError."""

    cdef Py_ssize_t n           # ids committed
    cdef object n_obj           # n as an int object: state["committed_tokens"] holds this one
    # The last committed ids (at most WINDOW): owned references at items[first:first + width].
    cdef PyObject* items[_CAPACITY]
    cdef Py_ssize_t first, width
    cdef object stream          # the commit point's stream state
    cdef tuple pending          # the text each pending token printed after the committed text
    cdef object starts          # their starts (a tuple), None if no call was timed
    cdef Py_ssize_t skip        # 1: pending[0] starts with the placeholder for committed text
    cdef tuple older            # the uncommitted tails of the hypotheses before `prev`
    cdef object prev            # the last hypothesis's uncommitted tail (a tuple), None: none yet
    cdef Py_ssize_t searched
    cdef object tag
    cdef bint closed

    def __init__(self, n, window, stream, pending, skip, history, searched, tag, closed, starts=None):
        cdef Py_ssize_t count = _count(n, "n")
        cdef PyObject* item
        if type(window) is not tuple or len(window) > min(count, _WINDOW):
            raise _forged(f"window must be a tuple of at most {min(count, _WINDOW)} ids")
        for item_obj in window:
            if not PyLong_CheckExact(item_obj) or item_obj < 0:
                raise _forged("window must hold ids (ints >= 0)")
        if type(stream) is not tuple and type(stream) is not dict:
            raise _forged(f"stream must be a tuple or a dict, got {type(stream).__name__}")
        if type(pending) is not tuple or not all(type(text) is str for text in pending):
            raise _forged("pending must be a tuple of str")
        if starts is not None and (type(starts) is not tuple or len(starts) != len(pending)):
            raise _forged("starts must be None or a tuple with one start per pending token")
        if len(pending) > count:
            raise _forged("more pending tokens than committed ones")
        if type(skip) is not int or not 0 <= skip <= (1 if pending else 0):
            raise _forged("skip must be 0, or 1 with pending text")
        if type(history) is not tuple or not all(type(past) is tuple for past in history):
            raise _forged("history must be a tuple of tuples")
        if type(searched) is not int or not 0 <= searched <= (len(history[len(history) - 1]) if history else 0):
            raise _forged("searched must count ids of the last hypothesis")
        if tag is not None and type(tag) is not int:
            raise _forged("tag must be an int or None")
        if type(closed) is not bool:
            raise _forged("closed must be a bool")
        # Checked: now replace what an earlier __init__ may have set.
        self._drop_window()
        self.n, self.n_obj = count, n
        for item_obj in window:
            item = <PyObject*>item_obj
            Py_INCREF(<object>item)
            self.items[self.width] = item
            self.width += 1
        self.stream, self.pending, self.starts, self.skip = stream, pending, starts, skip
        self.older = history[:len(history) - 1] if history else ()
        self.prev = history[len(history) - 1] if history else None
        self.searched, self.tag, self.closed = searched, tag, closed

    def __dealloc__(self):
        self._drop_window()

    cdef void _drop_window(self) noexcept:
        cdef Py_ssize_t j, first = self.first, width = self.width
        self.first = self.width = 0
        for j in range(first, first + width):
            Py_DECREF(<object>self.items[j])

    cdef tuple window(self):
        cdef tuple out = PyTuple_New(self.width)
        cdef Py_ssize_t j
        for j in range(self.width):
            Py_INCREF(<object>self.items[self.first + j])
            PyTuple_SET_ITEM(out, j, <object>self.items[self.first + j])
        return out

    cdef void commit(self, tuple tail, Py_ssize_t k) noexcept:
        """The window after tail[:k] joined it: its last WINDOW ids (tail: checked ids)."""
        cdef Py_ssize_t total = self.width + k, keep = min(total, _WINDOW), j
        cdef Py_ssize_t drop = min(total - keep, self.width), skipped = total - keep - drop
        cdef PyObject* item
        for j in range(self.first, self.first + drop):
            Py_DECREF(<object>self.items[j])  # an int: no code runs
        self.first += drop
        self.width -= drop
        if self.first + self.width + k - skipped > _CAPACITY:
            memmove(self.items, self.items + self.first, self.width * sizeof(PyObject*))
            self.first = 0
        for j in range(skipped, k):
            item = PyTuple_GET_ITEM(tail, j)
            Py_INCREF(<object>item)
            self.items[self.first + self.width] = item
            self.width += 1

    cdef HypothesisState copy(self):
        """A new record with this one's fields (its window's ids shared, not copied)."""
        cdef HypothesisState out = HypothesisState.__new__(HypothesisState)
        cdef Py_ssize_t j
        for j in range(self.width):
            Py_INCREF(<object>self.items[self.first + j])
            out.items[j] = self.items[self.first + j]
        out.width = self.width
        out.n, out.n_obj, out.stream = self.n, self.n_obj, self.stream
        out.pending, out.starts = self.pending, self.starts
        out.skip, out.older, out.prev, out.searched = self.skip, self.older, self.prev, self.searched
        out.tag, out.closed = self.tag, self.closed
        return out

    cdef tuple history(self):
        return self.older if self.prev is None else self.older + (self.prev,)

    cdef tuple fields(self):
        return (self.n_obj, self.window(), self.stream, self.pending, self.skip, self.history(), self.searched,
                self.tag, self.closed, self.starts)

    def __reduce__(self):
        return HypothesisState, self.fields()

    def __eq__(self, other):
        if type(other) is not HypothesisState:
            return NotImplemented
        return self.fields() == (<HypothesisState>other).fields()

    def __repr__(self):
        return (f"HypothesisState(n={self.n}, window=<{self.width} ids>, pending={self.pending!r}, "
                f"closed={self.closed})")


cdef bint _keeps_whole_text(object tok) except -1:
    """Whether tok's decode_incremental reads all of state["text"] (the ABC's quadratic
    reference does); compiled and Python kinds alike only replace its held-back tail."""
    if type(tok).decode_incremental is not _abc_decode_incremental:
        return False
    own = getattr(tok, "__dict__", None)
    return own is None or "decode_incremental" not in own


def keeps_whole_text(tok) -> bool:
    """Whether tok's decode_incremental reads all of state["text"] (the contract's reference
    does): a state of it cannot be cut to its held-back tail."""
    return _keeps_whole_text(tok)


def lean(dict stream) -> dict:
    """`stream` with its text cut to the held-back tail (all the engine replaces next time)."""
    return _lean(stream)


cdef str _held(dict stream):
    """The held-back tail of a stream state: what decode would print now but is not settled."""
    text = stream.get("text", "")
    tail = stream.get("_tail", 0)
    return text[len(text) - tail:] if tail else ""


cdef Py_ssize_t _common(tuple a, tuple b) except -1:
    """The length of the common prefix of two id tuples (entries compared by identity first:
    consecutive hypotheses usually share their int objects)."""
    cdef Py_ssize_t n = min(PyTuple_GET_SIZE(a), PyTuple_GET_SIZE(b)), k
    for k in range(n):
        if not _same_id(PyTuple_GET_ITEM(a, k), PyTuple_GET_ITEM(b, k)):
            return k
    return n


cdef inline bint _same_id(PyObject* x, PyObject* y) except -1:
    """Whether x and y are the same id: the very object, or two exact ints of one value (an
    object from a forged state is never asked: its __eq__ could run anything)."""
    if x == y:
        return True
    return PyLong_CheckExact(<object>x) and PyLong_CheckExact(<object>y) and PyObject_RichCompareBool(x, y, Py_EQ)


cdef bint _window_agrees(list ids, Py_ssize_t w0, PyObject** committed, Py_ssize_t width,
                         Py_ssize_t vocab_size) except -1:
    """Whether ids[w0:w0 + width] are the window's ids (committed[:width]), each an exact int
    in range (as check_ids would accept them). The caller makes sure ids has that many items."""
    cdef Py_ssize_t k
    if width == 0:
        return True
    cdef PyObject** have = PySequence_Fast_ITEMS(ids) + w0
    # The usual case: the very int objects committed (and checked) before, which do not change.
    if memcmp(have, committed, width * sizeof(PyObject*)) == 0:
        return True
    for k in range(width):
        if have[k] != committed[k] and not (_is_id(have[k], vocab_size) and _same_id(have[k], committed[k])):
            return False
    return True


cdef extern from "Python.h":
    # Declared without Cython's error check: _id_value clears the OverflowError of an int
    # outside Py_ssize_t itself (Cython's check in a noexcept function printed it, "Exception
    # ignored", and the id was treated as absent).
    Py_ssize_t _as_ssize_t "PyLong_AsSsize_t"(object) noexcept
    const Py_ssize_t PY_SSIZE_T_MAX


cdef inline Py_ssize_t _id_value(PyObject* x, Py_ssize_t vocab_size) noexcept:
    """x's value when it is an exact int in 0 ... vocab_size - 1 (as check_ids would accept
    it), else -1."""
    cdef Py_ssize_t value
    if not PyLong_CheckExact(<object>x):
        return -1
    value = _as_ssize_t(<object>x)
    if value == -1 and PyErr_Occurred():
        PyErr_Clear()
        return -1
    return value if 0 <= value < vocab_size else -1


cdef inline bint _is_id(PyObject* x, Py_ssize_t vocab_size) noexcept:
    """Whether x is an exact int in 0 ... vocab_size - 1 (as check_ids would accept it)."""
    return _id_value(x, vocab_size) >= 0


cdef bint _shadowed(object tok) except -1:
    """Whether tok's own attributes (its instance dict) hold a decode_incremental, which then
    is the one its calls run."""
    own = getattr(tok, "__dict__", _NO_DICT)
    return PyDict_Contains(own, _DECODE_INCREMENTAL) if type(own) is dict else _DECODE_INCREMENTAL in own


cdef object _piece_table(object tok):
    """tok's PieceTable when its decode_incremental is TableMethods' over one, not overridden
    (its streams are then stepped by the table directly), else None. Asked on every call: a
    class or an instance may be given another decode_incremental at any time."""
    # The class's decode_incremental, as attribute lookup on the class finds it (a method
    # descriptor of a compiled class is itself; a Python override is its function).
    if getattr(type(tok), _DECODE_INCREMENTAL, None) is not _table_decode_incremental:
        return None
    if not isinstance(tok, TableMethods) or _shadowed(tok):
        return None  # not a TableMethods: that decode_incremental would refuse it
    table = (<TableMethods>tok)._table  # the engine TableMethods.decode_incremental itself runs
    if type(table) is PieceTable:
        return table
    return None


cdef object _value_steps(object tok):
    """tok when its kind steps a stream value for decode_hypothesis itself and its
    decode_incremental is the one those steps reproduce, not overridden (revisions.py, § Kinds
    that step a value), else None. Asked on every call, as _piece_table is."""
    cls = type(tok)
    reproduces = getattr(cls, "_steps_reproduce", None)
    if reproduces is None or cls.decode_incremental is not reproduces or _shadowed(tok):
        return None
    return tok


cdef dict _lean(dict stream):
    """`stream` with its text cut to the held-back tail (all the engine replaces next time)."""
    text = stream.get("text", "")
    tail = stream.get("_tail", 0)
    if type(text) is str and type(tail) is int and 0 <= tail < len(<str>text):
        stream["text"] = (<str>text)[len(<str>text) - <Py_ssize_t>tail:]
        # What described the settled part (the character that needs the text's storage) is
        # gone with it.
        stream.pop("_wide", None)
        stream.pop("_level", None)
    return stream


cdef tuple _tail_of(list ids, Py_ssize_t start, Py_ssize_t vocab_size, IdBuffer* buf):
    """tuple(ids[start:]) when they are all exact ints in range (as check_ids would accept
    them), their values copied into buf (heap, in_place and column NULL); else None."""
    cdef Py_ssize_t k, n = PyList_GET_SIZE(ids) - start, value
    cdef Py_ssize_t* values = buf.small
    cdef tuple out
    cdef PyObject* item
    if n > SMALL_IDS:
        buf.heap = <Py_ssize_t*>PyMem_Malloc(n * sizeof(Py_ssize_t))
        if buf.heap == NULL:
            raise MemoryError()
        values = buf.heap
    out = PyTuple_New(n)
    for k in range(n):
        item = PyList_GET_ITEM(ids, start + k)
        Py_INCREF(<object>item)
        PyTuple_SET_ITEM(out, k, <object>item)  # before the check: the tuple owns what it holds
        value = _id_value(item, vocab_size)
        if value < 0:
            return None
        values[k] = value
    buf.ids = values
    buf.n = n
    return out


# -- the steps: a PieceTable's snapshots, or the kind's own decode_incremental states -------------

cdef tuple _walk_states(object tok, dict stream, tuple tail, Py_ssize_t upto, list deltas, bint final,
                        bint lean_stream):
    """For a kind without a PieceTable: step the tail from the commit point's stream state
    with the kind's own decode_incremental, its first `upto` ids one call per id (what each
    settled is appended to `deltas`: where the commit point falls is decided per id), the rest
    in one call. (The text the rest settled; the text held back after them, or with final what
    the end of the stream renders; the stream state after them; the states after each of the
    first `upto` ids, which a commit continues from.)"""
    cdef dict end = PyDict_Copy(stream)
    cdef list after_each = []
    cdef Py_ssize_t k
    step = tok.decode_incremental
    ids_list = list(tail)  # a kind's own decode_incremental is given lists, as everywhere
    for k in range(upto):
        deltas.append(step(ids_list[k:k + 1], end))
        after_each.append(PyDict_Copy(end))
    rest = step(ids_list[upto:], end, final=final) if upto < PyTuple_GET_SIZE(tail) or final else ""
    return rest, "" if final else _held(end), _lean(end) if lean_stream else end, after_each


cdef tuple _advance(PieceTable table, tuple snapshot, IdBuffer* ids, Py_ssize_t k, list box):
    """A PieceTable's snapshot after the first k ids of the tail: the new commit point's (box:
    the call's pending-bytes box, which this loads anew)."""
    cdef Vars v
    cdef bint in_prompt
    table.load_snapshot(snapshot, &v, box, &in_prompt)
    if table.plain_through(&v, <bytes>box[0], in_prompt, ids.ids, k):
        return snapshot  # the usual case: they only printed text
    table._run(ids.ids, k, &v, box, &in_prompt, None)
    return table.snapshot(&v, <bytes>box[0], in_prompt, snapshot)


cdef inline Py_ssize_t _width(list pieces, Py_ssize_t j) except -1:
    """len(pieces[j]) of pieces that were joined (so each is a str), without the indexing's
    reference counting."""
    if not 0 <= j < PyList_GET_SIZE(pieces):
        raise IndexError("pieces index out of range")
    return PyUnicode_GET_LENGTH(<object>PyList_GET_ITEM(pieces, j))


cdef str _text_of(list pieces, Py_ssize_t upto, Py_ssize_t* limit):
    """"".join(pieces), and in *limit the length of the first `upto` pieces' text (upto <= len(pieces)).
    Pieces of the result's storage kind are copied into it directly, others widened character by
    character: str.join's general path was a tenth of a call, for the dozen short pieces a call
    joins."""
    cdef Py_ssize_t j, k, n = PyList_GET_SIZE(pieces), size = 0, width, at = 0
    cdef Py_UCS4 maxchar = 0
    cdef int kind, piece_kind
    cdef PyObject* item
    cdef str out
    cdef char* write
    cdef void* read
    limit[0] = 0
    for j in range(n):
        item = PyList_GET_ITEM(pieces, j)
        if not PyUnicode_CheckExact(<object>item):
            # A kind's decode_incremental may return a str subclass (or worse): join checks it.
            out = "".join(pieces)
            limit[0] = 0
            for k in range(upto):
                limit[0] += _width(pieces, k)
            return out
        if j == upto:
            limit[0] = size
        size += PyUnicode_GET_LENGTH(<object>item)
        maxchar = max(maxchar, PyUnicode_MAX_CHAR_VALUE(<object>item))
    if upto >= n:
        limit[0] = size
    out = PyUnicode_New(size, maxchar)
    kind = PyUnicode_KIND(out)
    write = <char*>PyUnicode_DATA(out)
    for j in range(n):
        item = PyList_GET_ITEM(pieces, j)
        width = PyUnicode_GET_LENGTH(<object>item)
        piece_kind = PyUnicode_KIND(<object>item)
        read = PyUnicode_DATA(<object>item)
        if piece_kind == kind and width * kind <= 8:
            # A piece is usually a few bytes: a byte loop, not a call of memcpy for each.
            for k in range(width * kind):
                write[at * kind + k] = (<char*>read)[k]
        elif piece_kind == kind:
            memcpy(write + at * kind, read, width * kind)
        else:
            for k in range(width):
                PyUnicode_WRITE(kind, write, at + k, PyUnicode_READ(piece_kind, read, k))
        at += width
    return out


cdef list _list_of(tuple items):
    """list(items), without the generic sequence protocol list() runs (a fiftieth of a call for
    the one or two pending texts it usually copies)."""
    cdef Py_ssize_t j, n = PyTuple_GET_SIZE(items)
    cdef list out = PyList_New(n)
    cdef PyObject* item
    for j in range(n):
        item = PyTuple_GET_ITEM(items, j)
        Py_INCREF(<object>item)
        PyList_SET_ITEM(out, j, <object>item)
    return out


cdef list _tail_times(object times, Py_ssize_t n, object starts):
    """times[n:] as a list, each checked as group_words checks a time (a finite number, never
    before the one before it, the pending tokens' last start included): every call, not only
    when the ids they belong to commit."""
    later = times[n:]
    out = later.tolist() if hasattr(later, "tolist") else list(later)
    previous = starts[-1] if starts else None
    for k, t in enumerate(out):
        if isinstance(t, bool) or not isinstance(t, Real):
            raise TimingError(f"times[{n + k}] is {type(t).__name__}, not a number")
        if not isfinite(t):
            raise TimingError(f"times[{n + k}] is {t!r}, not a finite number")
        if previous is not None and t < previous:
            raise TimingError(f"times[{n + k}] = {t!r} is before the time before it ({previous!r}); "
                              "times must not decrease")
        previous = t
    return out


def decode_hypothesis(tok, hypothesis_ids, state, final=False, agreement=None, times=None):
    """Stream a hypothesis that the recogniser may rewrite: give its whole current best
    hypothesis each call; get `(committed_delta, partial)`. Committed text is never
    retracted and grows by whole words once the last `agreement` hypotheses agree on their
    ids (2 unless given, or the Revisions' own); `partial` is the rest of this hypothesis's
    transcript. `state`: a Revisions (tok.new_revisions()) or a dict ({} at the start), whose
    "committed" is all committed text; final=True commits everything. With `times` (a start per
    hypothesis id) the committed Words come third. docs/decoding.md § Revisions (the policy:
    oasr_tok/core/revisions.py). This is Tokenizer.decode_hypothesis itself (`tok` is the
    tokenizer)."""
    cdef Revisions revisions
    if type(state) is Revisions:
        revisions = <Revisions>state
        if agreement is None:
            agreement = revisions.agreement
        elif agreement != revisions.agreement:
            raise StreamStateError(f"this Revisions was made with agreement={revisions.agreement}, "
                                   f"not {agreement!r}; leave agreement out")
        return _guarded(tok, hypothesis_ids, revisions.state, final, agreement, times, revisions.text)
    if type(state) is not dict:
        raise StreamStateError(f"decode_hypothesis state must be a dict or a Revisions, got {type(state).__name__}")
    return _guarded(tok, hypothesis_ids, <dict>state, final, 2 if agreement is None else agreement, times, None)


cdef object _guarded(tok, hypothesis_ids, dict state, final, agreement, times, GrowText sink):
    try:
        return _step(tok, hypothesis_ids, state, final, agreement, times, sink)
    except TokenizerError:
        raise
    except (TypeError, IndexError, KeyError, AttributeError, ValueError) as exc:
        # Only a forged state gets here: everything the caller passes is checked first.
        if _STATE_KEY in state:
            raise _forged() from exc
        raise


@cython.final
cdef class Revisions:
    """The state of a hypothesis stream (tok.new_revisions(agreement=2)) for decode_hypothesis:
    its record in C and its committed text in a growable buffer, so a call costs the same at
    any length of committed text. `revisions.committed` is all committed text (made when asked
    for); a read-only Mapping view too (revisions["committed"]). Copied by value; pickled as a
    Stream is, its state and a ticket naming its tokenizer (and its committed text unless
    Travel(text=False): docs/scale.md § Streams that travel).

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> revisions = tok.new_revisions()
        >>> ids = tok.encode("the café opens at nine")
        >>> tok.decode_hypothesis(ids[:4], revisions)
        ('', 'the café op')
        >>> tok.decode_hypothesis(ids[:6], revisions)
        ('the café', ' opens at')
        >>> revisions.committed
        'the café'
    """

    cdef readonly object tokenizer
    cdef readonly object agreement
    cdef dict state
    cdef GrowText text
    cdef bint text_gone  # it arrived without its committed text (Travel(text=False))

    def __init__(self, tokenizer, agreement=2):
        if type(agreement) is not int or agreement < 1:
            raise StreamStateError(f"agreement must be an int >= 1 (how many hypotheses must agree), got {agreement!r}")
        self.tokenizer = tokenizer
        self.agreement = agreement
        self.state = {}
        self.text = GrowText()

    @property
    def committed(self):
        """All committed text (made when asked for, kept until the next commit). A Revisions
        that travelled without its text (Travel(text=False)) has none to give: StreamStateError."""
        return self._committed()

    cdef str _committed(self):
        if self.text_gone:
            raise StreamStateError("this Revisions travelled without its committed text (Travel(text=False)): it "
                                   "goes on with the same deltas, but its whole text is only where it came from")
        return self.text.text()

    def __getitem__(self, key):
        if key == "committed":
            return self._committed()
        if key in ("committed_tokens", "revision") and key in self.state:
            return self.state[key]
        raise KeyError(key)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key):
        return key == "committed" or (key in ("committed_tokens", "revision") and key in self.state)

    def keys(self):
        return [k for k in ("committed", "committed_tokens", "revision") if k in self]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def fork(self):
        """An independent copy (a beam)."""
        cdef Revisions other = Revisions.__new__(Revisions)
        other.tokenizer, other.agreement, other.state = self.tokenizer, self.agreement, dict(self.state)
        other.text = self.text.copy_text()
        other.text_gone = self.text_gone
        return other

    def __copy__(self):
        return self.fork()

    def __deepcopy__(self, memo):
        return self.fork()

    def __reduce__(self):
        tok = self.tokenizer
        with_text = not self.text_gone and travel_of(tok).text
        return (_revisions_from_fields,
                (carry(tok), self.agreement, self.state, self.text.text() if with_text else None))

    def __eq__(self, other):
        if type(other) is not Revisions:
            return NotImplemented
        return (self.agreement == (<Revisions>other).agreement and self.state == (<Revisions>other).state
                and self.text.text() == (<Revisions>other).text.text()
                and self.text_gone == (<Revisions>other).text_gone)

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None

    def __repr__(self):
        chars = "?" if self.text_gone else self.text.t.n
        return f"<oasr_tok Revisions: {chars} committed chars, agreement={self.agreement}>"


def _revisions_from_fields(ticket, agreement, state, committed):
    """A pickled Revisions: its tokenizer found from its ticket (the one that made it, or a
    typed error), its fields checked (a forged record raises StreamStateError on use).
    `committed`: its committed text, None when the text did not travel."""
    cdef Revisions out = Revisions(arrive(ticket, "Revisions"), agreement)
    if type(state) is not dict or not (committed is None or type(committed) is str):
        raise StreamStateError("a pickled Revisions is not one new_revisions made; start a new one")
    if state and type(state.get(_STATE_KEY)) is not HypothesisState:
        raise _forged()
    out.state = state
    if committed is None:
        out.text_gone = True
    else:
        out.text.append(committed)
    return out


cdef object _step(tok, hypothesis_ids, dict state, bint final, agreement, times, GrowText sink):
    """One call of decode_hypothesis; the state is written only once it has succeeded."""
    cdef IdBuffer ids
    ids.ids = NULL
    ids.n = 0
    ids.heap = NULL
    ids.in_place = NULL
    ids.column = NULL
    try:
        # box: where a PieceTable's steps keep their pending bytes during the call
        return _call(tok, hypothesis_ids, state, final, agreement, times, &ids, [b""], sink)
    finally:
        release_ids(&ids)


cdef object _call(tok, hypothesis_ids, dict state, bint final, agreement, times, IdBuffer* ids, list box,
                  GrowText sink):
    cdef Py_ssize_t n, width, total, w0, agreed, k, cut, skip, j, m, last_piece, n_tail
    cdef Py_ssize_t letter, settled, end, pos, first, n_agree, searched, n_pending, limit
    cdef bint lean_stream, after, timed = times is not None
    cdef list seen, pieces, tail_times = None
    cdef Py_ssize_t vocab_size
    cdef tuple window, pending, older, tail_ids, used, new_pending
    cdef str text, delta, partial, held, rest
    cdef Words words
    cdef PyObject* x
    cdef PyObject* y
    cdef PyObject* committed_text
    cdef PieceTable t
    cdef Vars v
    cdef list after_each = None
    cdef bint in_prompt, searching
    cdef Py_ssize_t upto
    cdef HypothesisState rec = None
    if OASR_RARE(type(agreement) is not int or agreement < 1):
        raise StreamStateError(f"agreement must be an int >= 1 (how many hypotheses must agree), got {agreement!r}")
    # More hypotheses than a process can hold is the same as never agreeing before the end.
    n_agree = agreement if agreement < PY_SSIZE_T_MAX else PY_SSIZE_T_MAX
    committed_text = PyDict_GetItemWithError(state, _COMMITTED)
    if OASR_RARE(committed_text != NULL and type(<object>committed_text) is not str):
        raise StreamStateError("state['committed'] must be the committed text (a str); start from {}")
    table = _piece_table(tok)
    steps = _value_steps(tok) if table is None else None
    # The commit point's stream: a PieceTable's snapshot, the value a kind steps (both tuples),
    # or a state dict of the kind's decode_incremental.
    walked = table is None and steps is None
    lean_stream = not walked or not _keeps_whole_text(tok)
    vocab_size = tok.vocab_size if table is None else (<PieceTable>table).vocab_size
    tag = (<PieceTable>table).tag if table is not None else None if steps is None else steps._tag
    # -- the state's bookkeeping (a record is well-formed: what it cannot know is checked here) --
    got = state.get(_STATE_KEY)
    if OASR_RARE(got is None):
        if committed_text != NULL or _COMMITTED_TOKENS in state:
            # Starting again would commit the transcript a second time.
            raise StreamStateError("this hypothesis state has committed text but lost its record "
                                   f"(state[{_STATE_KEY!r}]); start a new stream from {{}}")
        n, width, pending, starts, skip, older, prev, searched = 0, 0, _EMPTY, None, 0, _EMPTY, None, 0
        stream = (<PieceTable>table).fresh_snapshot if table is not None else {} if walked else steps._fresh_stream
    else:
        if type(got) is not HypothesisState:
            raise _forged()
        rec = <HypothesisState>got
        got = None  # rec is the one reference this call holds (see _store)
        if (rec.tag is not tag and (rec.tag is None or tag is None or rec.tag != tag)) or type(rec.stream) is not (
                dict if walked else tuple):
            raise StreamStateError("this hypothesis state was made by another tokenizer; start a new stream from {}")
        if rec.closed:
            raise stream_closed_error("hypothesis stream")
        n, width, stream, pending, starts = rec.n, rec.width, rec.stream, rec.pending, rec.starts
        skip, older, prev, searched = rec.skip, rec.older, rec.prev, rec.searched
    # -- the ids: read from the window on, never before ------------------------------------------
    if OASR_RARE(type(hypothesis_ids) is not list and (isinstance(hypothesis_ids, (str, bytes))
                                                       or not hasattr(hypothesis_ids, "__len__"))):
        hypothesis_ids = check_ids(hypothesis_ids, vocab_size)  # str: NonIntegerIdError
    total = len(hypothesis_ids)
    w0 = n - width
    revision = None
    tail_ids = None
    if type(hypothesis_ids) is list and total >= n and _window_agrees(
            <list>hypothesis_ids, w0, rec.items + rec.first if rec is not None else NULL, width, vocab_size):
        # The usual case: the window holds the committed ids, and the tail is ids.
        tail_ids = _tail_of(<list>hypothesis_ids, n, vocab_size, ids)
    if OASR_RARE(tail_ids is None):
        # Anything else is checked as check_ids checks it (the same errors as every entry point).
        seen = check_ids(hypothesis_ids[w0:], vocab_size)
        window = rec.window() if rec is not None else _EMPTY
        for k in range(width):
            if not _is_id(PyTuple_GET_ITEM(window, k), vocab_size):
                raise _forged("a window entry is not an id of this tokenizer")
        # -- revisions of committed ids ----------------------------------------------------------
        if PyList_GET_SIZE(seen) < width:
            looked = tuple(seen)
            k = _common(looked, window)
            revision = (w0 + k, window[k:], looked[k:])
        else:
            for k in range(width):
                x = PyList_GET_ITEM(seen, k)
                y = PyTuple_GET_ITEM(window, k)
                if x != y and not PyObject_RichCompareBool(x, y, Py_EQ):
                    revision = (w0 + k, window[k:], tuple(seen[k:width]))
                    break
        tail_ids = tuple(seen[width:])
        release_ids(ids)  # what _tail_of may have copied before it met a bad id
        read_ids(ids, tail_ids, vocab_size)  # checked: copies the ids into C memory
    if OASR_RARE(timed):
        if len(times) != total:
            raise TimingError(f"times has {len(times)} entries for {total} hypothesis ids; give one start per id")
        tail_times = _tail_times(times, n, starts)
    n_tail = PyTuple_GET_SIZE(tail_ids)
    # -- agreement -------------------------------------------------------------------------------
    used = _EMPTY  # the last n_agree - 1 hypotheses' tails, oldest first
    if OASR_RARE(final or n_agree == 1):
        agreed = n_tail
    elif not OASR_RARE(n_agree != 2):
        agreed = 0 if prev is None else _common(tail_ids, <tuple>prev)
    else:
        used = older + (prev,) if prev is not None else older
        used = used[PyTuple_GET_SIZE(used) - min(n_agree - 1, PyTuple_GET_SIZE(used)):]
        agreed = 0
        if PyTuple_GET_SIZE(used) == n_agree - 1:
            agreed = n_tail
            for past in used:
                agreed = min(agreed, _common(tail_ids, <tuple>past))
    # -- the tail's text, from the commit point on -----------------------------------------------
    # pieces: the text of each token from the committed text on: the pending ones, then what
    # each id of the tail settled (a kind without a PieceTable: each of the first `upto`, then
    # what the rest settled together, as one piece).
    pieces = _list_of(pending)
    n_pending = PyList_GET_SIZE(pieces)
    # The same agreed ids as last call, which found no commit point in them (searched: they
    # are the last hypothesis's first ids, which these agree with): neither now.
    searching = final or timed or agreed != searched
    upto = agreed if searching else 0
    rest = ""  # final: what the end of the stream rendered
    if table is not None:
        # The tail, stepped by the table's C loop from the commit point's snapshot.
        t = <PieceTable>table
        t.load_snapshot(stream, &v, box, &in_prompt)
        if v.closed:
            raise _forged("its stream is closed")  # only the record's own flag closes a hypothesis stream
        t._run(ids.ids, n_tail, &v, box, &in_prompt, pieces)
        if OASR_RARE(final):
            rest = _joined(t._finish(&v, box, None))
            held = ""
        else:
            held = t._tail(v, <bytes>box[0])
        end_stream = t.snapshot(&v, <bytes>box[0], in_prompt, <tuple>stream) if final else None
    elif steps is not None:
        # The kind's own steps, from the commit point's value: one piece per id.
        end_stream = steps._advance(stream, tail_ids, pieces)
        if final:
            rest = steps._rest(end_stream)
            held = ""
        else:
            held = steps._rest(end_stream)
    else:
        out, held, end_stream, after_each = _walk_states(tok, <dict>stream, tail_ids, upto, pieces, final,
                                                         lean_stream)
        if final:
            rest = out
        elif out:
            pieces.append(out)
    # -- final: everything is committed ----------------------------------------------------------
    if OASR_RARE(final):
        return _close(tok, state, sink, rec, tag, n, pending, starts, skip, pieces, tail_ids, tail_times, rest,
                      end_stream,
                      revision)
    text = _text_of(pieces, n_pending + agreed if searching else 0, &limit)
    if not searching:
        partial = text[skip:] + held if held else text[skip:]
        if committed_text == NULL and sink is None:
            state[_COMMITTED] = ""
        _store(state, rec, tag, n, tail_ids, 0, stream, pending, starts, skip, used, n_agree, searched, revision)
        return "", partial
    # -- the commit point: the end of the last word whose next word's first letter is settled ---
    k = 0  # committed ids to add
    cut = skip  # committed characters of `text`
    commit_words = [] if timed else None  # the committed Words, asked for with times
    m = 0  # with times: the words before the commit point (set with them; the compiler cannot see that)
    # The pending tokens' and the agreed ids' text: text[:limit].
    if limit > skip:
        # A timed word ends where its last token ends: the next token's start. When the last
        # agreed token ends the word, that start must be known (a token after it).
        after = agreed < n_tail or not timed
        if OASR_RARE(timed):
            starts_now = _starts_of(starts, n_pending) + tail_times[:agreed + 1]
            used_pieces = pieces[:n_pending + agreed]
            words = group_words(used_pieces + [""] if after else used_pieces, starts_now)
            last_piece = n_pending + agreed - 1
            m = words._n - 1
            letter = -1
            while m >= 1:
                letter = first_letter(text, words._rows[4 * m], words._rows[4 * m + 1])
                if letter >= 0 and (after or words._rows[4 * (m - 1) + 3] < last_piece):
                    break
                m -= 1
            end = words._rows[4 * (m - 1) + 1] if m >= 1 else -1
        else:
            end = commit_break(text, limit, &letter)
        if end > skip:
            # The fewest tail ids that settle the next word's first letter.
            settled = 0
            for j in range(n_pending):
                settled += _width(pieces, j)
            while settled <= letter:
                settled += _width(pieces, n_pending + k)
                k += 1
            cut = end
            if OASR_RARE(timed):
                index = list(range(n - n_pending, n + agreed))  # pending tokens: the last committed ones
                commit_words = [_absolute(words[j], index) for j in range(m) if words._rows[4 * j + 1] > skip]
    delta = text[skip:cut]
    # -- the new pending text: what the committed ids printed after the cut ----------------------
    new_starts = starts
    if cut > skip:
        # The tokens whose text runs past the cut stay pending (always the last committed ones:
        # the others are committed whole).
        pos = 0
        first = 0
        while first < n_pending + k and pos + _width(pieces, first) <= cut:
            pos += _width(pieces, first)
            first += 1
        # The first piece printed the end of a committed word too: that part is replaced by a
        # placeholder that is a word of its own, so the next grouping neither re-reads committed
        # text nor takes the piece for a whitespace-only token.
        skip = _PLACEHOLDER_LEN if first < n_pending + k and cut > pos else 0
        new_pending = _pending_texts(pieces, first, n_pending + k, cut - pos if skip else -1)
        if OASR_RARE(timed or starts is not None):
            new_starts = tuple(_starts_of(starts, n_pending)[first:]
                               + (tail_times[max(first - n_pending, 0):k] if timed
                                  else [0] * (k - max(first - n_pending, 0))))
    else:
        new_pending = pending
    partial = text[cut:] + held if held else text[cut:]
    # -- commit ----------------------------------------------------------------------------------
    if k:
        # The committed ids join the window (in _store) and the stream (the commit point's state).
        if table is not None:
            stream = _advance(<PieceTable>table, <tuple>stream, ids, k, box)
        elif steps is not None:
            stream = steps._advance(stream, tail_ids[:k], [])
        else:
            stream = _lean(<dict>after_each[k - 1]) if lean_stream else after_each[k - 1]
    if sink is not None:
        sink.append(delta)  # (a Revisions: its buffer, amortised O(1))
    elif delta or committed_text == NULL:
        oasr_append(state, _COMMITTED, delta)
    _store(state, rec, tag, n, tail_ids, k, stream, new_pending, new_starts, skip, used, n_agree,
           0 if k or timed or n_agree == 1 else agreed, revision)
    if OASR_RARE(timed):
        return delta, partial, commit_words
    return delta, partial


cdef tuple _pending_texts(list pieces, Py_ssize_t a, Py_ssize_t b, Py_ssize_t cut_in_first):
    """tuple(pieces[a:b]), the first one's text before cut_in_first (when >= 0) replaced by the
    placeholder."""
    cdef tuple out = PyTuple_New(b - a)
    cdef Py_ssize_t j
    for j in range(a, b):
        item = pieces[j]
        if j == a and cut_in_first >= 0:
            item = _PLACEHOLDER + (<str>item)[cut_in_first:]
        Py_INCREF(item)
        PyTuple_SET_ITEM(out, j - a, item)
    return out


cdef list _starts_of(object starts, Py_ssize_t n_pending):
    """The pending tokens' starts (0 for a token committed by an untimed call)."""
    return [0] * n_pending if starts is None else list(<tuple>starts)


cdef int _store(dict state, HypothesisState rec, object tag, Py_ssize_t n, tuple tail_ids, Py_ssize_t k,
                object stream, tuple pending, object starts, Py_ssize_t skip, tuple used, Py_ssize_t n_agree,
                Py_ssize_t searched, object revision) except -1:
    """Write what this call committed (k more ids of tail_ids) and saw into the state: rec
    itself when this state alone holds it, else a new record (rec is then left as it was, for
    whoever else holds it)."""
    cdef HypothesisState out
    cdef PyObject* held
    # Held by the state and by the caller's variable, nothing else (a shallow copy of the
    # state, or anyone who kept the record, holds another reference).
    if (rec is not None and OASR_GIL_BUILD and Py_REFCNT(rec) == 2
            and PyDict_GetItemWithError(state, _STATE_KEY) == <PyObject*>rec):
        out = rec
    elif rec is not None:
        out = rec.copy()
    else:
        out = HypothesisState.__new__(HypothesisState)
        out.n_obj = 0
    if k:
        out.n = n + k
        out.n_obj = PyLong_FromSsize_t(n + k)
        out.commit(tail_ids, k)
    out.stream, out.pending, out.starts, out.skip, out.searched, out.tag = stream, pending, starts, skip, searched, tag
    # The uncommitted tails of the last n_agree - 1 hypotheses, this one's included, from the
    # new commit point on.
    if n_agree == 1:
        out.older, out.prev = _EMPTY, None
    elif n_agree == 2:
        out.older, out.prev = _EMPTY, tail_ids[k:] if k else tail_ids
    else:
        kept = [past[k:] for past in (used + (tail_ids,))[-(n_agree - 1):]]
        out.older, out.prev = tuple(kept[:len(kept) - 1]), kept[len(kept) - 1]
    if out is not rec:
        state[_STATE_KEY] = out
    # A commit made a new count; otherwise the count is rewritten only when it is not there.
    if k or PyDict_GetItemWithError(state, _COMMITTED_TOKENS) != <PyObject*>out.n_obj:
        state[_COMMITTED_TOKENS] = out.n_obj
    held = PyDict_GetItemWithError(state, _REVISION)
    if revision is not None or held != <PyObject*>None:
        state[_REVISION] = revision
    return 0


cdef tuple _close(tok, dict state, GrowText sink, HypothesisState rec, tag, Py_ssize_t n, tuple pending, object starts,
                  Py_ssize_t skip, list pieces, tuple tail, list tail_times, str rest, object closed_stream, revision):
    """final=True: every id of the tail was stepped (pieces: the pending tokens' text, then what
    each id settled) and the stream ended (rest: what the end rendered); commit everything."""
    cdef Py_ssize_t last, j, length, n_pending = PyTuple_GET_SIZE(pending), w0
    cdef bint rendered = PyList_GET_SIZE(pieces) > 0
    cdef str delta
    cdef HypothesisState out
    if rest:
        if pieces:
            # As token_pieces does: held-back text goes on the last non-special token. The
            # pending tokens are the last committed ones (their ids: in the window, or -1).
            window = rec.window() if rec is not None else _EMPTY
            w0 = n - len(window)
            ids = [window[j - w0] if j >= w0 else -1 for j in range(n - n_pending, n)] + list(tail)
            special = tok.special_ids
            last = len(ids) - 1
            for j in range(len(ids) - 1, -1, -1):
                if ids[j] not in special:
                    last = j
                    break
            pieces[last] += rest
        else:
            pieces.append(rest)
    joined = "".join(pieces)
    length = len(joined)
    delta = joined[skip:]
    words = None
    if tail_times is not None:
        starts_all = _starts_of(starts, n_pending) + tail_times
        index = list(range(n - n_pending, n + len(tail)))
        if rest and not rendered:
            starts_all, index = [0], [max(n - 1, 0)]
        words = []
        if length > skip:
            grouped = <Words>group_words(pieces, starts_all)
            words = [_absolute(grouped[j], index) for j in range(grouped._n) if grouped._rows[4 * j + 1] > skip]
    if sink is not None:
        sink.append(delta)
    else:
        oasr_append(state, _COMMITTED, delta)
    out = rec.copy() if rec is not None else HypothesisState.__new__(HypothesisState)
    out.n = n + len(tail)
    out.n_obj = PyLong_FromSsize_t(out.n)
    out.commit(tail, PyTuple_GET_SIZE(tail))
    out.stream, out.pending, out.starts, out.skip = closed_stream, _EMPTY, None, 0
    out.older, out.prev, out.searched, out.tag, out.closed = _EMPTY, None, 0, tag, True
    state[_STATE_KEY] = out
    state[_COMMITTED_TOKENS] = out.n_obj
    state[_REVISION] = revision
    return (delta, "") if words is None else (delta, "", words)


cdef object _absolute(object word, list index):
    from oasr_tok._engine.wordtypes import Word

    return Word(word.text, word.start, word.end, index[word.first_token], index[word.last_token])
