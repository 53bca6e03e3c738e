# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""CTC output, compiled: per-frame ids to tokens, and the streaming wrapper that CTC-style
renderers put around a PieceTable.

collapse_ctc turns a recogniser's per-frame argmax into tokens: a run of equal frames is one
token, and runs of the blank are dropped. It reads the frames through the one intake of ids
(oasr_tok/_engine/ids.pyx: lists and tuples item by item, integer buffers of any dtype, byte order and
stride straight from memory, a tensor's __array__), without importing NumPy.

CTCStream adds to a PieceTable the two rules of CTC decoders that look at neighbours:

* repeat collapse (the `tokenizers` CTC decoder dedups consecutive equal token strings
  *after* special tokens were dropped, so a special between two equal tokens does not keep
  them apart; ids that spell the same string are equal), and
* Wav2Vec2CTCTokenizer's `.strip()` of the joined transcript: trailing whitespace is held
  back (it is not part of the decode until something visible follows it); leading whitespace
  is the PieceTable's own "whitespace" lead rule.
"""
from cpython.list cimport PyList_GET_SIZE, PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromSsize_t
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from cpython.mem cimport PyMem_Malloc, PyMem_Free

from oasr_tok._engine.ids cimport (
    COLUMN_INT32, COLUMN_INT64, COLUMN_UINT32, IdBuffer, id_at, read_ids, read_ids_in_place, release_ids,
)
from oasr_tok._engine.ids import ReadAgain
from oasr_tok._engine.textbuf cimport oasr_check_owner, oasr_commit_tagged, oasr_tag
from oasr_tok.errors import InvalidIdError, NonIntegerIdError, StreamStateError, short_repr, stream_closed_error

__all__ = ["collapse_ctc", "CTCStream"]

import sys

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_ssize_t PY_SSIZE_T_MAX


ctypedef fused column_int:
    int32_t
    uint32_t
    int64_t
    uint64_t


cdef Py_ssize_t _collapse(const char* base, Py_ssize_t stride, Py_ssize_t n, Py_ssize_t limit, Py_ssize_t blank,
                          int64_t* tok, int64_t* starts, int64_t* ends, Py_ssize_t capacity,
                          column_int kind) noexcept nogil:
    """The collapse of n frame ids of type `column_int`, `stride` bytes apart from `base`, each
    checked to be in 0 ... limit - 1: the number of tokens, or -1 for a frame id out of range.
    With `tok` NULL it only counts (the first of two passes: the outputs are then allocated at
    their exact size, where an upper bound of three times the frames would be touched page by
    page); then at most `capacity` tokens are written (-1 past that: frames read in place may
    have changed since the count)."""
    cdef Py_ssize_t i, m = 0, value, prev = -1
    cdef const char* p = base
    cdef column_int v
    for i in range(n):
        memcpy(&v, p, sizeof(column_int))  # a load; memcpy because a buffer need not be aligned
        p += stride
        if column_int is uint64_t:
            if v >= <uint64_t>limit:
                return -1
        value = <Py_ssize_t>v
        if value < 0 or value >= limit:
            return -1
        if value != prev:
            if tok == NULL:
                m += value != blank
            else:
                if prev != blank and prev >= 0:
                    ends[m - 1] = i
                if value != blank:
                    if m == capacity:
                        return -1
                    tok[m] = value
                    starts[m] = i
                    m += 1
            prev = value
    if tok != NULL and m and prev != blank:
        ends[m - 1] = n
    return m


cdef Py_ssize_t _collapse_frames(const IdBuffer* frames, Py_ssize_t blank, int64_t* tok, int64_t* starts,
                                 int64_t* ends, Py_ssize_t capacity) except -1:
    """_collapse over what _read_frames read: a buffer where it is, or read_ids' copy."""
    cdef Py_ssize_t m, n = frames.n, limit, stride
    cdef const char* base
    cdef int kind
    if frames.column != NULL:
        base, stride, limit, kind = frames.column, frames.stride, frames.limit, frames.column_kind
    else:  # the copy: Py_ssize_t values, checked already
        base = <const char*>frames.ids
        stride = sizeof(Py_ssize_t)
        limit = PY_SSIZE_T_MAX
        kind = COLUMN_INT64 if sizeof(Py_ssize_t) == 8 else COLUMN_INT32
    with nogil:
        if kind == COLUMN_INT64:
            m = _collapse[int64_t](base, stride, n, limit, blank, tok, starts, ends, capacity, 0)
        elif kind == COLUMN_INT32:
            m = _collapse[int32_t](base, stride, n, limit, blank, tok, starts, ends, capacity, 0)
        elif kind == COLUMN_UINT32:
            m = _collapse[uint32_t](base, stride, n, limit, blank, tok, starts, ends, capacity, 0)
        else:
            m = _collapse[uint64_t](base, stride, n, limit, blank, tok, starts, ends, capacity, 0)
    if m < 0:
        raise ReadAgain("a frame id read in place is out of range, or the frames changed")
    return m


cdef inline int _put(list out, Py_ssize_t k, Py_ssize_t value) except -1:
    item = PyLong_FromSsize_t(value)
    Py_INCREF(item)  # PyList_SET_ITEM steals one; `item` keeps its own
    PyList_SET_ITEM(out, k, item)
    return 0


cdef tuple _collapse_to_lists(const IdBuffer* frames, Py_ssize_t blank, Py_ssize_t m):
    """The second pass of _collapse for list output: the m tokens straight into three lists of
    ints (no C copy of them first, which at a million frames costs fresh pages every call)."""
    cdef list ids = PyList_New(m), starts = PyList_New(m), ends = PyList_New(m)
    cdef Py_ssize_t i, n = frames.n, k = 0, value, prev = -1
    for i in range(n):
        value = id_at(frames, i)
        if value != prev:
            if prev != blank and prev >= 0:
                _put(ends, k - 1, i)
            if value != blank:
                if k == m:
                    raise ReadAgain("the frames changed between the two passes")
                _put(ids, k, value)
                _put(starts, k, i)
                k += 1
            prev = value
    if k and prev != blank:
        _put(ends, k - 1, n)
    if k != m:
        raise ReadAgain("the frames changed between the two passes")
    return ids, starts, ends


cdef object _not_frames(object frame_ids):
    return NonIntegerIdError(f"frame_ids must be a sequence of integer ids, got {type(frame_ids).__name__}")


cdef object _frame_items(object frame_ids):
    """What read_ids does not take, as the list of items collapse_ctc has always read it as:
    an iterable's items, or a 1-D array of another dtype item by item (tolist()), so the bad
    frame is named; what is not one-dimensional is refused as a whole."""
    ndim = getattr(frame_ids, "ndim", 1)
    if ndim != 1:
        return NonIntegerIdError(
            f"frame_ids must be one-dimensional, got a {short_repr(ndim)}-D {type(frame_ids).__name__}")
    tolist = getattr(frame_ids, "tolist", None)
    if tolist is not None:
        items = tolist()
        if isinstance(items, list):
            return items
    try:
        return list(frame_ids)
    except TypeError:
        return _not_frames(frame_ids)


cdef object _frame_error(object error, Py_ssize_t limit):
    """read_ids' error about one id, worded for frames."""
    if isinstance(error, NonIntegerIdError):
        return NonIntegerIdError(f"frame id {short_repr(error.value)} at frame {error.position} is not an integer id")
    bound = f"0 ... {limit - 1}" if limit != PY_SSIZE_T_MAX else "non-negative"
    return InvalidIdError(
        f"frame id {short_repr(error.value)} at frame {error.position} is out of range: frame ids must be {bound}")


cdef int _read_frames(IdBuffer* frames, object frame_ids, Py_ssize_t limit, bint in_place) except -1:
    """The frame ids, read by read_ids (the one intake of ids: lists, tuples, sequences, integer
    buffers of any layout, tensors' __array__), each in 0 ... limit - 1; with in_place, by
    read_ids_in_place."""
    if isinstance(frame_ids, (str, bytes, bytearray)) or frame_ids is None:
        raise _not_frames(frame_ids)
    try:
        try:
            if in_place:
                return read_ids_in_place(frames, frame_ids, limit)
            return read_ids(frames, frame_ids, limit)
        except NonIntegerIdError as exc:
            if getattr(exc, "position", None) is not None:
                raise
            items = _frame_items(frame_ids)
        if isinstance(items, BaseException):
            raise items
        return read_ids(frames, items, limit)
    except InvalidIdError as exc:
        if getattr(exc, "position", None) is None:
            raise
        raise _frame_error(exc, limit) from None


cdef Py_ssize_t _common_prefix(str a, str b):
    cdef Py_ssize_t k = 0, n = min(PyUnicode_GET_LENGTH(a), PyUnicode_GET_LENGTH(b))
    while k < n and a[k] == b[k]:
        k += 1
    return k


def collapse_ctc(frame_ids, blank_id, *, vocab_size=None):
    """CTC frames to tokens: `(ids, starts, ends)`, three lists of ints of equal length.

    A run of equal frame ids is one token; runs of `blank_id` are dropped (so `a a blank a`
    is two `a`s). `starts[k]` is the first frame of token k's run and `ends[k]` one past its
    last. `frame_ids` is what every call takes as ids (docs/decoding.md § Id inputs: a list or
    tuple of ints, a 1-D integer buffer of any dtype and layout, a tensor's __array__) or any
    other iterable of ints; with `vocab_size`, every frame id must be in
    0 ... vocab_size - 1 (InvalidIdError naming the frame otherwise), without it only
    non-negative. Linear in the number of frames.

    Frames to seconds: frame f starts at ``f * frame_shift * subsampling`` seconds, where
    frame_shift is the feature hop (10 ms for 80-dim fbank; 320 samples / 16 kHz = 20 ms is
    already the whole stride of wav2vec2's convolutional encoder, subsampling 1) and
    subsampling the encoder's time reduction (4 for Conformer CTC, 8 for FastConformer).
    Multiply `starts` / `ends` by that factor, before or after `word_timings`."""
    import operator

    cdef Py_ssize_t blank, limit
    cdef IdBuffer frames
    if isinstance(blank_id, bool):
        raise NonIntegerIdError("blank_id must be an integer id, got a bool")
    if not isinstance(blank_id, int):
        try:
            blank_id = operator.index(blank_id)
        except TypeError:
            raise NonIntegerIdError(f"blank_id must be an integer id, got {short_repr(blank_id)}") from None
    if vocab_size is None:
        limit = PY_SSIZE_T_MAX
    else:
        if isinstance(vocab_size, bool):
            raise NonIntegerIdError("vocab_size must be an integer, got a bool")
        try:
            size = operator.index(vocab_size)
        except TypeError:
            raise NonIntegerIdError(f"vocab_size must be an integer, got {short_repr(vocab_size)}") from None
        if size <= 0:
            raise InvalidIdError(f"vocab_size must be positive, got {size}")
        # A vocabulary larger than any index: every non-negative frame id is in it.
        limit = size if size < PY_SSIZE_T_MAX else PY_SSIZE_T_MAX
    if not 0 <= blank_id < limit:
        raise InvalidIdError(f"blank_id {blank_id!r} is out of range: it must be a valid id (0 ... {limit - 1})")
    blank = blank_id
    # NumPy in, NumPy out: no Python int per token (and the caller has NumPy loaded already).
    cdef bint numpy_out = type(frame_ids).__module__ == "numpy"
    # A long buffer of frames is read where it is (no 8 MB copy of a million); a frame id out of
    # range there, or frames another thread changed between the two passes, send it to
    # read_ids' copy (_engine/ids.pxd), which names the frame.
    _read_frames(&frames, frame_ids, limit, type(frame_ids) is not list)  # (a list is copied: its items are objects)
    try:
        return _collapsed(&frames, blank, numpy_out)
    except ReadAgain:
        pass
    finally:
        release_ids(&frames)
    _read_frames(&frames, frame_ids, limit, False)
    try:
        return _collapsed(&frames, blank, numpy_out)
    finally:
        release_ids(&frames)


cdef tuple _collapsed(const IdBuffer* frames, Py_ssize_t blank, bint numpy_out):
    cdef Py_ssize_t m = _collapse_frames(frames, blank, NULL, NULL, NULL, 0)
    cdef int64_t[::1] tok_view, start_view, end_view
    if not numpy_out:
        return _collapse_to_lists(frames, blank, m)
    np = sys.modules["numpy"]
    arrays = (np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64))
    if m:
        tok_view = arrays[0]
        start_view = arrays[1]
        end_view = arrays[2]
        if _collapse_frames(frames, blank, &tok_view[0], &start_view[0], &end_view[0], m) != m:
            raise ReadAgain("the frames changed between the two passes")
    return arrays


cdef class CTCStream:
    """A PieceTable behind CTC's neighbour rules (see the module docstring).

    table: the PieceTable rendering each id (skipped ids flagged FLAG_SKIP there too).
    classes: None (no repeat collapse) or a list with one int per id: ids of equal class are
      repeats of each other; -1 marks an id that is dropped before the collapse (a special
      token), which therefore neither renders nor separates repeats.
    strip: hold back trailing whitespace (Wav2Vec2CTCTokenizer's strip); the table's lead rule
      must be "whitespace" and it must have no byte pieces (its tail is then always empty).
    last_pieces: None, or one str per id (None for ids that render nothing): how an id renders
      when it is the last visible token (the `tokenizers` BPEDecoder turns the `</w>` suffix
      into a space except on the last token). The last visible id is then held back, fed to the
      table only once another visible id follows it; until then the text shows its last form.
      What both its forms begin with ("m" of "m " and "m") is emitted at once, as DecodeStream
      does. The table must have no byte pieces and no lead or first-token rule.

    Example:
        >>> from oasr_tok.kinds.api import FLAG_SKIP, CTCStream, PieceTable
        >>> table = PieceTable(["", "h", "e", "l", "o"], flags=bytes([FLAG_SKIP, 0, 0, 0, 0]))
        >>> ctc = CTCStream(table, classes=[0, 1, 2, 3, 4])  # id 0 the blank
        >>> frames = [1, 1, 2, 3, 3, 0, 3, 4]  # h h e l l <blank> l o
        >>> ctc.render(frames)
        'hello'
        >>> state = {}
        >>> [ctc.decode_incremental([i], state) for i in frames]  # a repeat renders nothing
        ['h', '', 'e', 'l', '', '', 'l', 'o']
    """
    cdef readonly object table
    cdef readonly Py_ssize_t vocab_size
    cdef int32_t* classes
    cdef bint dedup
    cdef bint strip
    cdef list last_pieces
    cdef list early  # per id: how many characters its two forms share (emitted at once)
    cdef readonly object tag  # recorded in the states this stream makes (see textbuf.h)

    def __init__(self, table, classes=None, *, bint strip=False, list last_pieces=None):
        cdef Py_ssize_t i, n = table.vocab_size
        self.table = table
        self.vocab_size = n
        self.dedup = classes is not None
        self.strip = strip
        if last_pieces is not None and len(last_pieces) != n:
            raise ValueError("CTCStream: last_pieces must have one entry per id")
        self.last_pieces = last_pieces
        self.early = None
        if last_pieces is not None:
            # Each id's piece among others, as the table renders it (no rule: each on its own).
            pieces = table.token_pieces(list(range(n)))
            self.early = [0 if last is None else _common_prefix(<str>last, <str>piece)
                          for last, piece in zip(last_pieces, pieces)]
        PyMem_Free(self.classes)
        self.classes = NULL
        if self.dedup:
            if len(classes) != n:
                raise ValueError("CTCStream: classes must have one entry per id")
            self.classes = <int32_t*>PyMem_Malloc(max(n, 1) * sizeof(int32_t))
            if self.classes == NULL:
                raise MemoryError()
            for i in range(n):
                self.classes[i] = classes[i]
        # What makes this stream's states its own: the table's tag and the neighbour rules.
        self.tag = oasr_tag(["ctc", str(table.tag), list(classes) if classes is not None else None, bool(strip),
                             last_pieces])

    def __dealloc__(self):
        PyMem_Free(self.classes)

    cdef list _collapse(self, IdBuffer* ids, Py_ssize_t* prev):
        """The ids that survive the repeat collapse, given the class of the last surviving one."""
        cdef Py_ssize_t i, tid
        cdef int32_t c
        cdef list kept = []
        for i in range(ids.n):
            tid = ids.ids[i]
            if self.dedup:
                c = self.classes[tid]
                if c < 0 or c == prev[0]:
                    continue
                prev[0] = c
            kept.append(tid)
        return kept

    cdef tuple _delay(self, list ids, Py_ssize_t pending):
        """The visible ids of `ids` shifted by one: each is let through once the next visible
        id arrives; returns them and the id still waiting."""
        cdef list out = []
        cdef Py_ssize_t tid
        for tid in ids:
            if self.last_pieces[tid] is None:
                continue
            if pending >= 0:
                out.append(pending)
            pending = tid
        return out, pending

    def decode_incremental(self, new_ids, state, bint final=False):
        """Feed `new_ids`; return the newly settled text. See Tokenizer.decode_incremental."""
        cdef IdBuffer ids
        cdef Py_ssize_t prev = -1
        cdef str held = "", settled, body, tail
        cdef dict inner
        # Whose state it is, before anything in it is read: another tokenizer's (or kind's)
        # state, or one that lost its tag, is refused.
        oasr_check_owner(state, self.tag)
        read_ids(&ids, new_ids, self.vocab_size)  # first: a bad id must leave the state as it was
        try:
            st = state.get("_ctc")
            if (st is None and state) or (st is not None and "_tok" not in state):
                raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
            if st is None:
                inner = {}
            elif (type(st) is not tuple or len(<tuple>st) != 4
                  or not ((<tuple>st)[0] is None or (type((<tuple>st)[0]) is tuple and len((<tuple>st)[0]) == 5))
                  or type((<tuple>st)[1]) is not int or not -1 <= (<tuple>st)[1] < self.vocab_size
                  or type((<tuple>st)[2]) is not str or type((<tuple>st)[3]) is not int):
                raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
            else:
                inner = {} if (<tuple>st)[0] is None else {"_s": (<tuple>st)[0]}
                prev = (<tuple>st)[1]
                held = (<tuple>st)[2]
                if ids.n and (<tuple>st)[0] is not None and (<tuple>st)[0][4]:
                    raise stream_closed_error()
            # The tail this wrapper left last time: a forged "_tail" would cut settled text.
            if state.get("_tail", 0) != (0 if st is None else (<tuple>st)[3]):
                raise StreamStateError("this stream state's held-back tail does not match what was held; start from {}")
            kept = self._collapse(&ids, &prev)
        finally:
            release_ids(&ids)
        if self.last_pieces is not None:
            # prev holds the id waiting for a successor (-1: none); dedup is off here. The start
            # its two forms share went out when it arrived: cut from its rendering, kept off the
            # tail.
            waiting = prev
            kept, prev = self._delay(kept, prev)
            settled = self.table.decode_incremental(kept, inner, False)
            if waiting >= 0 and kept:  # kept[0] is the id that waited: its start is out already
                settled = settled[<Py_ssize_t>self.early[waiting]:]
            if prev >= 0 and (prev != waiting or kept):
                settled += (<str>self.last_pieces[prev])[:<Py_ssize_t>self.early[prev]]
            if final and prev >= 0:
                settled += (<str>self.last_pieces[prev])[<Py_ssize_t>self.early[prev]:]
                prev = -1
            tail = "" if prev < 0 else (<str>self.last_pieces[prev])[<Py_ssize_t>self.early[prev]:]
            if final:
                self.table.decode_incremental([], inner, True)
        else:
            settled = self.table.decode_incremental(kept, inner, final)
            tail = (<str>inner.get("text", settled))[PyUnicode_GET_LENGTH(settled):]
        if self.strip:
            body = held + settled if PyUnicode_GET_LENGTH(held) else settled
            settled = body.rstrip()
            # Whitespace at the end is not part of the decode yet; at the end of the stream it
            # never will be.
            held = "" if final else body[PyUnicode_GET_LENGTH(settled):]
        oasr_commit_tagged(state, settled, tail, self.tag)
        state["_ctc"] = (inner.get("_s"), prev, held, PyUnicode_GET_LENGTH(tail))
        return settled

    def token_pieces(self, ids):
        """One string per id, concatenating to the decode."""
        cdef IdBuffer checked
        cdef Py_ssize_t i, k = 0, n, tid, prev = -1
        cdef int32_t c
        cdef list result, kept_pieces, kept, lst
        cdef list positions
        cdef str piece
        read_ids(&checked, ids, self.vocab_size)
        try:
            n = checked.n
            lst = [checked.ids[i] for i in range(n)]
        finally:
            release_ids(&checked)
        if not self.dedup:
            result = self.table.token_pieces(lst)
        else:
            kept = []
            positions = []
            for i in range(n):
                tid = <Py_ssize_t>lst[i]
                c = self.classes[tid]
                if c < 0 or c == prev:
                    continue
                prev = c
                kept.append(tid)
                positions.append(i)
            kept_pieces = self.table.token_pieces(kept)
            result = [""] * n
            for k in range(PyList_GET_SIZE(kept_pieces)):
                result[<Py_ssize_t>positions[k]] = kept_pieces[k]
        if self.last_pieces is not None:
            i = n - 1
            while i >= 0 and self.last_pieces[<Py_ssize_t>lst[i]] is None:
                i -= 1
            if i >= 0:
                result[i] = self.last_pieces[<Py_ssize_t>lst[i]]
        if self.strip:
            # The transcript's trailing whitespace is not part of it: trim it off the last
            # pieces, back to the last one that keeps a visible character.
            i = n - 1
            while i >= 0:
                piece = result[i]
                if PyUnicode_GET_LENGTH(piece):
                    result[i] = piece.rstrip()
                    if PyUnicode_GET_LENGTH(<str>result[i]):
                        break
                i -= 1
        return result

    def render(self, ids):
        return "".join(self.token_pieces(ids))


cdef extern from "Python.h":
    Py_UCS4 PyUnicode_READ_CHAR(object, Py_ssize_t)
    bint Py_UNICODE_ISSPACE(Py_UCS4)


def delimited_words(pieces, starts, ends=None):
    """Words as Wav2Vec2CTCTokenizer's word offsets cut them: maximal runs of non-whitespace
    characters of ``"".join(pieces)`` (no punctuation or script rules: a CTC character model
    marks its word boundaries itself, with the delimiter token). A word starts at the start of
    the token that printed its first character and ends at the end of the token that printed
    its last; whitespace tokens lend it no time. `ends` None: a token ends where the next one
    starts (the last one at its own start). Times are validated by oasr_tok's word grouping
    (the one home of those rules), so errors are the same TimingErrors."""
    from oasr_tok._engine.words import group_words, token_times
    from oasr_tok._engine.wordtypes import Words

    cdef list piece_list = list(pieces)
    cdef Py_ssize_t n = PyList_GET_SIZE(piece_list), k, j, length, pos = 0
    cdef Py_ssize_t word_at = -1, first = -1, last = -1
    cdef str piece
    group_words([""] * n, starts, ends)  # validates lengths, types and order of the times
    start_list = token_times(starts, "starts")
    end_list = None if ends is None else token_times(ends, "ends")
    text = "".join(piece_list)
    cdef list words = []
    for k in range(n):
        piece = <str>PyList_GET_ITEM(piece_list, k)
        length = PyUnicode_GET_LENGTH(piece)
        for j in range(length):
            if Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(piece, j)):
                if word_at >= 0:
                    words.append(_word(text, word_at, pos + j, first, last, start_list, end_list, n))
                    word_at = -1
            else:
                if word_at < 0:
                    word_at = pos + j
                    first = k
                last = k
        pos += length
    if word_at >= 0:
        words.append(_word(text, word_at, pos, first, last, start_list, end_list, n))
    return Words(words)


cdef object _word(str text, Py_ssize_t a, Py_ssize_t b, Py_ssize_t first, Py_ssize_t last,
                  object starts, object ends, Py_ssize_t n):
    from oasr_tok._engine.wordtypes import Word

    if ends is not None:
        end = ends[last]
    else:
        end = starts[last + 1] if last + 1 < n else starts[last]
    return Word(text[a:b], starts[first], end, first, last)
