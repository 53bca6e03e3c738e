# cython: language_level=3, boundscheck=True, wraparound=False
"""llama.cpp's clean_spaces (the three passes llama_detokenize runs over the detokenized text
of BPE and WordPiece vocabularies), compiled, as a streaming engine over a PieceTable.

The passes, in order, each over the output of the one before:
  1. a space before ``?``, ``!``, ``.`` or ``,`` is dropped;
  2. ``" ' "`` becomes ``"'"`` (leftmost, non-overlapping);
  3. the space before ``'s``, ``'m``, ``'re`` and ``'ve`` is dropped.
Each reaches across tokens, so in a stream each pass holds back the few characters the next
ones decide (a trailing space; ``" "`` or ``" '"``; up to ``" 'r"``): at most six in all. The
held characters are kept in the state as three short str (one per pass), the values
``clean_feed`` documents; kinds/gguf.py keeps the plain statement (the three regexes).
"""
from cpython.unicode cimport PyUnicode_GET_LENGTH
from cpython.mem cimport PyMem_Free, PyMem_Malloc

from cpython.object cimport PyObject

from oasr_tok._engine.textbuf cimport oasr_check_owner, oasr_commit_read, oasr_read_text, oasr_tag, oasr_textstate

from oasr_tok._engine.ids import check_ids
from oasr_tok._engine.textbuf import held_tail
from oasr_tok.errors import StreamStateError, stream_closed_error

cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_4BYTE_KIND

# The held characters of each pass as small ints, and back (index = the int).
cdef tuple _HELD1 = ("", " ")
cdef tuple _HELD2 = ("", " ", " '")
cdef tuple _HELD3 = ("", " ", " '", " 'r", " 'v")
cdef tuple NOTHING_HELD = ("", "", "")

cdef str _RAW = "_gguf_raw"
cdef str _CLEAN = "_gguf_clean"
cdef str _CLOSED = "_closed"


cdef struct Out:
    Py_UCS4* chars
    Py_ssize_t n


cdef inline void _put(Out* out, Py_UCS4 ch) noexcept:
    out.chars[out.n] = ch
    out.n += 1


cdef inline void _put_held3(Out* out, int held) noexcept:
    # What pass 3 holds, spelled out: " ", " '", " 'r", " 'v".
    if held >= 1:
        _put(out, u" ")
    if held >= 2:
        _put(out, u"'")
    if held == 3:
        _put(out, u"r")
    elif held == 4:
        _put(out, u"v")


cdef inline void _pass3(int* held, Py_UCS4 ch, Out* out) noexcept:
    """Pass 3: the space of " 's", " 'm", " 're", " 've" is dropped."""
    cdef int h = held[0]
    if h == 3 or h == 4:
        if ch == u"e":
            _put(out, u"'")
            _put(out, u"r" if h == 3 else u"v")
            _put(out, u"e")
            held[0] = 0
            return
        _put_held3(out, h)
        h = 0
    elif h == 2:
        if ch == u"s" or ch == u"m":
            _put(out, u"'")
            _put(out, ch)
            held[0] = 0
            return
        if ch == u"r" or ch == u"v":
            held[0] = 3 if ch == u"r" else 4
            return
        _put_held3(out, 2)
        h = 0
    if h == 1:
        if ch == u"'":
            held[0] = 2
            return
        if ch == u" ":
            _put(out, u" ")
            held[0] = 1
            return
        _put(out, u" ")
        _put(out, ch)
        held[0] = 0
        return
    if ch == u" ":
        held[0] = 1
        return
    _put(out, ch)
    held[0] = 0


cdef inline void _pass2(int* held, int* held3, Py_UCS4 ch, Out* out) noexcept:
    """Pass 2: " ' " becomes "'". Its output goes through pass 3."""
    cdef int h = held[0]
    if h == 2:
        if ch == u" ":
            _pass3(held3, u"'", out)
            held[0] = 0
            return
        _pass3(held3, u" ", out)
        _pass3(held3, u"'", out)
        h = 0
    if h == 1:
        if ch == u"'":
            held[0] = 2
            return
        if ch == u" ":
            _pass3(held3, u" ", out)
            held[0] = 1
            return
        _pass3(held3, u" ", out)
        _pass3(held3, ch, out)
        held[0] = 0
        return
    if ch == u" ":
        held[0] = 1
        return
    _pass3(held3, ch, out)
    held[0] = 0


cdef inline void _pass1(int* held, int* held2, int* held3, Py_UCS4 ch, Out* out) noexcept:
    """Pass 1: a space followed by ? ! . , is dropped. Its output goes through passes 2 and 3."""
    if held[0] and not (ch == u"?" or ch == u"!" or ch == u"." or ch == u","):
        _pass2(held2, held3, u" ", out)
    if ch == u" ":
        held[0] = 1
        return
    _pass2(held2, held3, ch, out)
    held[0] = 0


cdef int _index(tuple values, object held, str what) except -1:
    cdef Py_ssize_t k
    if type(held) is str:
        for k in range(len(values)):
            if values[k] == held:
                return <int>k
    raise StreamStateError(f"this stream state was not made by the gguf kind ({what}); start from {{}}")


cdef tuple _read_held(object held):
    if type(held) is not tuple or len(<tuple>held) != 3:
        raise StreamStateError("this stream state was not made by the gguf kind; start from {}")
    return held


cdef object _feed(int* h1, int* h2, int* h3, str text, int first):
    """Run `text` through the passes from `first` on (0, 1 or 2); the output as a str."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i
    cdef Out out
    cdef Py_UCS4 ch
    if n == 0:
        return ""
    # The passes only drop or delay characters: the output is at most the input plus what
    # was held (six characters).
    out.chars = <Py_UCS4*>PyMem_Malloc((n + 8) * sizeof(Py_UCS4))
    if out.chars == NULL:
        raise MemoryError()
    out.n = 0
    try:
        for i in range(n):
            ch = text[i]
            if first == 0:
                _pass1(h1, h2, h3, ch, &out)
            elif first == 1:
                _pass2(h2, h3, ch, &out)
            else:
                _pass3(h3, ch, &out)
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.chars, out.n)
    finally:
        PyMem_Free(out.chars)


def clean_feed(tuple held, str text, int first=0):
    """(output, held) after running `text` through the passes from `first` on (0, 1 or 2),
    starting from `held`: (pass 1's "" or " ", pass 2's "", " " or " '", pass 3's "", " ",
    " '", " 'r" or " 'v")."""
    cdef int h1, h2, h3
    if not 0 <= first <= 2:
        raise ValueError("clean_feed: first must be 0, 1 or 2")
    _read_held(held)
    h1 = _index(_HELD1, held[0], "pass 1")
    h2 = _index(_HELD2, held[1], "pass 2")
    h3 = _index(_HELD3, held[2], "pass 3")
    out = _feed(&h1, &h2, &h3, text, first)
    return out, (_HELD1[h1], _HELD2[h2], _HELD3[h3])


cdef str _flush(int h1, int h2, int h3):
    """What the held characters become when the text ends here."""
    cdef int none = 0
    cdef str first = _feed(&none, &h2, &h3, <str>_HELD1[h1], 1)
    cdef str second = _feed(&none, &none, &h3, <str>_HELD2[h2], 2)
    return first + second + <str>_HELD3[h3]


def clean_flush(tuple held):
    """What the held characters become when the text ends here."""
    _read_held(held)
    return _flush(_index(_HELD1, held[0], "pass 1"), _index(_HELD2, held[1], "pass 2"),
                  _index(_HELD3, held[2], "pass 3"))


cdef class CleanSpacesStream:
    """The streaming engine of a vocabulary with clean_spaces: the raw stream (the table, in a
    state of its own under state["_gguf_raw"]) through the passes, whose held characters are
    kept in state["_gguf_clean"]. state["text"] is always the clean-up of everything so far as
    if the stream ended now; nothing emitted is taken back.

    Example:
        >>> from oasr_tok.kinds.api import CleanSpacesStream, PieceTable
        >>> stream = CleanSpacesStream(PieceTable(["Hello", " ,", " world", " it", " 's", " !"]), frozenset())
        >>> state = {}
        >>> [stream.decode_incremental([i], state) for i in range(6)]
        ['Hello', ',', ' world', ' it', "'s", '!']
        >>> state["text"]
        "Hello, world it's!"
    """
    cdef object _table
    cdef frozenset _special
    cdef Py_ssize_t _size
    cdef readonly object tag  # recorded in the states this stream makes (see textbuf.h)

    def __init__(self, table, frozenset special):
        self._table = table
        self._special = special
        self._size = table.vocab_size
        self.tag = oasr_tag(["clean_spaces", str(table.tag)])

    @property
    def vocab_size(self):
        return self._size

    def decode_incremental(self, new_ids, state, bint final=False):
        cdef int h1, h2, h3, t1, t2, t3
        cdef str out, tail, rest
        cdef oasr_textstate outer
        new = check_ids(new_ids, self._size)  # first: a bad id leaves the state as it was
        # Whose state it is, before anything in it is read (a state without its record is
        # another stream's, or a forged one).
        oasr_check_owner(state, self.tag)
        if ("_tok" in state) != (_RAW in state and _CLEAN in state):
            raise StreamStateError("this stream state has lost its clean-spaces record; start from {}")
        if (<dict>state).get(_CLOSED):
            if new:
                raise stream_closed_error()
            return ""
        raw = (<dict>state).get(_RAW, {})
        held = (<dict>state).get(_CLEAN, NOTHING_HELD)
        if type(raw) is not dict:
            raise StreamStateError("this stream state was not made by the gguf kind; start from {}")
        _read_held(held)
        h1 = _index(_HELD1, held[0], "pass 1")
        h2 = _index(_HELD2, held[1], "pass 2")
        h3 = _index(_HELD3, held[2], "pass 3")
        # `state` is read and checked before anything changes: a forged one fails here.
        oasr_read_text(state, &outer)
        # Stepped on a copy: a state's values are never changed in place, so `dict(state)`
        # forks a stream (decode_hypothesis keeps one per token that way).
        raw = dict(raw)
        delta = self._table.decode_incremental(new, raw, final)
        out = _feed(&h1, &h2, &h3, delta, 0)
        if final:
            out += _flush(h1, h2, h3)
            h1 = h2 = h3 = 0
            tail = ""
        else:
            raw_tail = held_tail(raw)
            # The tail: the held characters and the raw stream's own tail, as if it ended now
            # (on copies of the held state: the real one moves on with settled text only).
            t1, t2, t3 = h1, h2, h3
            rest = _feed(&t1, &t2, &t3, raw_tail, 0)
            tail = rest + _flush(t1, t2, t3)
        oasr_commit_read(state, &outer, out, tail, <PyObject*>self.tag)
        state[_RAW] = raw
        state[_CLEAN] = (_HELD1[h1], _HELD2[h2], _HELD3[h3])
        state[_CLOSED] = bool(final)
        return out

    def token_pieces(self, ids):
        cdef int h1 = 0, h2 = 0, h3 = 0
        cdef list pieces, out
        cdef Py_ssize_t k, last
        checked = check_ids(ids, self._size)
        pieces = self._table.token_pieces(checked)
        out = [_feed(&h1, &h2, &h3, <str>piece, 0) for piece in pieces]
        rest = _flush(h1, h2, h3)
        if rest:
            # As everywhere: held-back text goes on the last token that is not special.
            last = len(checked) - 1
            for k in range(len(checked) - 1, -1, -1):
                if checked[k] not in self._special:
                    last = k
                    break
            out[last] = out[last] + rest
        return out
