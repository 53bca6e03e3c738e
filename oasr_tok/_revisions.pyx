# cython: language_level=3, boundscheck=True, wraparound=False
"""`decode_hypothesis` (the policy and its guarantees: oasr_tok/revisions.py and
docs/decoding.md § Revisions), compiled: a call of a bounded tail should cost about what the
kind's own decode_incremental of that tail costs, and in Python the bookkeeping around the
steps (tuples, slices, the window comparison, the word offsets) cost twenty to forty times that.

Everything read from state[_STATE_KEY] may be forged: its containers are type-checked before
use, and entries are only read through checked Python operations, so a forged value raises
(TypeError, IndexError...), which decode_hypothesis turns into StreamStateError. The state is
written only once the whole call has succeeded.
"""
from cpython.dict cimport PyDict_Copy
from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from cpython.long cimport PyLong_AsSsize_t, PyLong_CheckExact
from cpython.list cimport PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_SIZE

from oasr_tok._textbuf cimport oasr_append
from oasr_tok._wordtypes cimport Words

from oasr_tok._ids import check_ids
from oasr_tok._words import char_class, group_words
from oasr_tok.errors import StreamStateError, TimingError, TokenizerError, stream_closed_error

cdef extern from "Python.h":
    PyObject* PyList_GET_ITEM(object, Py_ssize_t)
    PyObject* PyTuple_GET_ITEM(object, Py_ssize_t)
    int PyObject_RichCompareBool(PyObject*, PyObject*, int) except -1
    int Py_EQ

#: How many committed ids before the commit point each call compares with the hypothesis to
#: detect that the recogniser revised committed ids. Ids further back are never read.
WINDOW = 64
cdef Py_ssize_t _WINDOW = WINDOW

cdef str _STATE_KEY = "_hypothesis"
cdef str _COMMITTED = "committed"
cdef str _PLACEHOLDER = "\u3007"  # IDEOGRAPHIC NUMBER ZERO: a solo-script character, a word by itself
cdef Py_ssize_t _PLACEHOLDER_LEN = 1
cdef tuple _EMPTY = ()

# _words.pyx's C_WORD and C_SOLO: a letter that starts a word.
cdef int C_WORD = 2
cdef int C_SOLO = 3

# The base class's decode_incremental, looked up on first use (oasr_tok.base imports this
# module while it loads, so importing base here at load time would be circular).
cdef object _abc_decode_incremental = None


cdef object _forged():
    return StreamStateError(f"state[{_STATE_KEY!r}] was not made by decode_hypothesis; start a new stream from {{}}")


cdef bint _keeps_whole_text(object tok) except -1:
    """Whether tok's decode_incremental reads all of state["text"] (the ABC's quadratic
    reference does); compiled and Python kinds alike only replace its held-back tail."""
    global _abc_decode_incremental
    if _abc_decode_incremental is None:
        from oasr_tok.base import Tokenizer
        _abc_decode_incremental = Tokenizer.decode_incremental
    if type(tok).decode_incremental is not _abc_decode_incremental:
        return False
    own = getattr(tok, "__dict__", None)
    return own is None or "decode_incremental" not in own


def lean(dict stream) -> dict:
    """`stream` with its text cut to the held-back tail (all the engine replaces next time)."""
    text = stream.get("text", "")
    tail = stream.get("_tail", 0)
    if type(text) is str and type(tail) is int and 0 <= tail < len(text):
        stream["text"] = text[len(text) - tail:]
        # What described the settled part (the character that needs the text's storage) is
        # gone with it.
        stream.pop("_wide", None)
        stream.pop("_level", None)
    return stream


cdef str _held(dict stream):
    """The held-back tail of a stream state: what decode would print now but is not settled."""
    text = stream.get("text", "")
    tail = stream.get("_tail", 0)
    return text[len(text) - tail:] if tail else ""


cdef Py_ssize_t _common(tuple a, tuple b) except -1:
    """The length of the common prefix of two id tuples (entries compared by identity first:
    consecutive hypotheses usually share their int objects)."""
    cdef Py_ssize_t n = min(PyTuple_GET_SIZE(a), PyTuple_GET_SIZE(b)), k
    cdef PyObject* x
    cdef PyObject* y
    for k in range(n):
        x = PyTuple_GET_ITEM(a, k)
        y = PyTuple_GET_ITEM(b, k)
        if x != y and not PyObject_RichCompareBool(x, y, Py_EQ):
            return k
    return n


cdef Py_ssize_t _common_steps(list ids, Py_ssize_t start, tuple steps) except -1:
    """How many of the one-id entries of `steps` (each (id, delta, stream state after it)) step
    ids[start:] already."""
    cdef Py_ssize_t n = min(max(PyList_GET_SIZE(ids) - start, 0), PyTuple_GET_SIZE(steps)), k
    cdef object step
    cdef PyObject* x
    cdef PyObject* y
    for k in range(n):
        step = <object>PyTuple_GET_ITEM(steps, k)
        if type(step) is not tuple or PyTuple_GET_SIZE(step) != 3:
            raise TypeError("a forged step")
        y = PyTuple_GET_ITEM(step, 0)
        if type(<object>y) is tuple:  # the batch entry: what follows was not stepped one by one
            return k
        x = PyList_GET_ITEM(ids, start + k)
        if x != y and not PyObject_RichCompareBool(x, y, Py_EQ):
            return k
    return n


cdef bint _window_agrees(list ids, Py_ssize_t w0, tuple window, Py_ssize_t vocab_size) except -1:
    """Whether ids[w0:w0 + len(window)] are the window's ids, each an exact int in range (as
    check_ids would accept them). The caller makes sure ids has that many items."""
    cdef Py_ssize_t k, value
    cdef PyObject* x
    cdef PyObject* y
    for k in range(PyTuple_GET_SIZE(window)):
        x = PyList_GET_ITEM(ids, w0 + k)
        if not PyLong_CheckExact(<object>x):
            return False
        value = PyLong_AsSsize_t(<object>x)
        if value == -1 and PyErr_Occurred():
            PyErr_Clear()
            return False
        if value < 0 or value >= vocab_size:
            return False
        y = PyTuple_GET_ITEM(window, k)
        if x != y and not PyObject_RichCompareBool(x, y, Py_EQ):
            return False
    return True


cdef tuple _batch_at(tuple steps, Py_ssize_t at):
    """The batch entry (ids, their settled text, stream state after them) at steps[at], if
    that is one (it is always the last entry)."""
    if at >= PyTuple_GET_SIZE(steps):
        return None
    entry = steps[at]
    if type(entry) is not tuple or PyTuple_GET_SIZE(entry) != 3:
        raise TypeError("a forged step")
    if type(entry[0]) is not tuple:
        return None  # a one-id entry: the hypothesis differs from the previous one here
    if type(entry[1]) is not str or type(entry[2]) is not dict:
        raise TypeError("a forged step")
    return <tuple>entry


# char_class's answers for the Basic Multilingual Plane, asked once per character (the rule
# stays _words.pyx's; 0: not asked yet).
cdef bytearray _BMP_CLASSES = bytearray(0x10000)
cdef unsigned char* _bmp_classes = _BMP_CLASSES


cdef Py_ssize_t _first_letter(str text, Py_ssize_t a, Py_ssize_t b) except -2:
    """Index in text of the first word or solo-script character of text[a:b], -1 if none."""
    cdef Py_ssize_t k
    cdef int c
    cdef Py_UCS4 ch
    for k in range(a, b):
        ch = text[k]
        if ch < 0x10000:
            c = _bmp_classes[ch]
            if c == 0:
                c = char_class(text[k])
                _bmp_classes[ch] = c
        else:
            c = char_class(text[k])
        if c == C_WORD or c == C_SOLO:
            return k
    return -1


cdef list _tail_times(object times, Py_ssize_t n):
    later = times[n:]
    return later.tolist() if hasattr(later, "tolist") else list(later)


def decode_hypothesis(tok, hypothesis_ids, state, final=False, agreement=2, times=None):
    """See Tokenizer.decode_hypothesis (and oasr_tok.revisions for the policy)."""
    if type(state) is not dict:
        raise StreamStateError(f"decode_hypothesis state must be a dict, got {type(state).__name__}")
    try:
        return _step(tok, hypothesis_ids, <dict>state, final, agreement, times)
    except TokenizerError:
        raise
    except (TypeError, IndexError, KeyError, AttributeError, ValueError) as exc:
        # Only a forged state gets here: everything the caller passes is checked first.
        if _STATE_KEY in state:
            raise _forged() from exc
        raise


cdef object _step(tok, hypothesis_ids, dict state, bint final, agreement, times):
    """One call of decode_hypothesis; the state is written only once it has succeeded."""
    cdef Py_ssize_t n, width, total, w0, reuse, agreed, k, cut, skip, j, m, last_piece, n_tail, per_id
    cdef Py_ssize_t letter, settled, end, pos, first, n_agree
    cdef bint lean_stream, after, timed = times is not None
    cdef list seen, tail, new_steps, pieces, deltas, ptexts, tail_times = None, kept
    cdef Py_ssize_t vocab_size
    cdef tuple window, pending, history, steps, tail_ids, used
    cdef dict stream, h_stream, end_state
    cdef str batch_delta
    cdef str text, delta, partial
    cdef Words words
    cdef PyObject* x
    cdef PyObject* y
    if type(agreement) is not int or agreement < 1:
        raise StreamStateError(f"agreement must be an int >= 1 (how many hypotheses must agree), got {agreement!r}")
    n_agree = agreement
    if type(state.get(_COMMITTED, "")) is not str:
        raise StreamStateError("state['committed'] must be the committed text (a str); start from {}")
    lean_stream = not _keeps_whole_text(tok)
    # -- the state's bookkeeping, checked --------------------------------------------------------
    data = state.get(_STATE_KEY)
    if data is None:
        n, window, h_stream, pending, skip, history, steps, closed = 0, _EMPTY, {}, _EMPTY, 0, _EMPTY, _EMPTY, False
    else:
        if type(data) is not tuple or PyTuple_GET_SIZE(data) != 8:
            raise _forged()
        o_n, o_window, o_stream, o_pending, o_skip, o_history, o_steps, closed = data
        if not (type(o_n) is int and o_n >= 0 and type(o_window) is tuple and type(o_stream) is dict
                and type(o_pending) is tuple and type(o_skip) is int and type(o_history) is tuple
                and type(o_steps) is tuple and type(closed) is bool):
            raise _forged()
        n, window, h_stream, pending, skip = o_n, o_window, o_stream, o_pending, o_skip
        history, steps = o_history, o_steps
        if PyTuple_GET_SIZE(window) > min(n, _WINDOW) or not 0 <= skip <= (1 if pending else 0):
            raise _forged()
    if closed:
        raise stream_closed_error("hypothesis stream")
    # -- the ids: read from the window on, never before ------------------------------------------
    if type(hypothesis_ids) is not list and (isinstance(hypothesis_ids, (str, bytes))
                                             or not hasattr(hypothesis_ids, "__len__")):
        hypothesis_ids = check_ids(hypothesis_ids, tok.vocab_size)  # str: NonIntegerIdError
    total = len(hypothesis_ids)
    width = PyTuple_GET_SIZE(window)
    w0 = n - width
    vocab_size = tok.vocab_size
    revision = None
    tail = None
    if type(hypothesis_ids) is list and total >= n and _window_agrees(<list>hypothesis_ids, w0, window, vocab_size):
        # The usual case: the window holds the committed ids. Only the tail needs checking (on
        # a bad id, the general path below raises with the same message as always).
        try:
            tail = check_ids(hypothesis_ids[n:], vocab_size)
        except (ValueError, TypeError):
            tail = None
    if tail is None:
        seen = check_ids(hypothesis_ids[w0:], vocab_size)
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
        tail = seen[width:]
    if timed:
        if len(times) != total:
            raise TimingError(f"times has {len(times)} entries for {total} hypothesis ids; give one start per id")
        tail_times = _tail_times(times, n)
    tail_ids = tuple(tail)
    # -- agreement -------------------------------------------------------------------------------
    n_tail = PyList_GET_SIZE(tail)
    used = _EMPTY
    if final or n_agree == 1:
        agreed = n_tail
    else:
        used = history[-(n_agree - 1):]
        agreed = 0
        if PyTuple_GET_SIZE(used) == n_agree - 1:
            agreed = n_tail
            for past in used:
                if type(past) is not tuple:
                    raise _forged()
                agreed = min(agreed, _common(tail_ids, <tuple>past))
    # -- step the tail from the committed stream, reusing the previous call's steps --------------
    # The agreed ids are stepped one at a time (where the commit point falls is decided per id);
    # the rest, which only the partial needs, in one call (the batch entry at the end of `steps`).
    reuse = _common_steps(tail, 0, steps)
    new_steps = list(steps[:reuse])
    start_state = new_steps[reuse - 1][2] if reuse else h_stream
    if type(start_state) is not dict:
        raise _forged()
    stream = start_state
    step = tok.decode_incremental
    per_id = max(reuse, agreed)
    for j in range(reuse, per_id):
        token_id = tail[j]
        stream = PyDict_Copy(stream)
        new_steps.append((token_id, step([token_id], stream), stream))
    batch = None
    batch_delta = ""
    end_state = stream
    if per_id < n_tail:
        rest = tail_ids[per_id:]
        ahead = _batch_at(steps, reuse) if reuse == per_id else None
        if ahead is not None and rest[:PyTuple_GET_SIZE(ahead[0])] == ahead[0]:
            # The previous call stepped the same ids after this point: step only what follows.
            batch_delta, end_state = ahead[1], ahead[2]
            if PyTuple_GET_SIZE(ahead[0]) < PyTuple_GET_SIZE(rest):
                end_state = PyDict_Copy(end_state)
                batch_delta = batch_delta + step(list(rest[PyTuple_GET_SIZE(ahead[0]):]), end_state)
        else:
            end_state = PyDict_Copy(stream)
            batch_delta = step(list(rest), end_state)
        batch = (rest, batch_delta, end_state)
    ptexts = [p[0] for p in pending]
    deltas = [s[1] for s in new_steps]
    # -- final: everything is committed ----------------------------------------------------------
    if final:
        return _close(tok, state, n, window, pending, skip, ptexts, deltas, tail, tail_ids, tail_times,
                      stream, lean_stream, revision)
    # -- the commit point: the end of the last word whose next word's first letter is settled ---
    pieces = ptexts + deltas[:agreed]
    text = "".join(pieces)
    k = 0  # committed ids to add
    cut = skip  # committed characters of `text`
    commit_words = []
    if len(text) > skip:
        # A timed word ends where its last token ends: the next token's start. When the last
        # agreed token ends the word, that start must be known (a token after it).
        after = agreed < PyList_GET_SIZE(tail) or not timed
        if timed:
            starts = [p[2] for p in pending] + tail_times[:agreed + 1]
            words = group_words(pieces + [""] if after else pieces, starts)
        else:
            words = group_words(pieces, [0] * len(pieces))
        last_piece = len(pieces) - 1
        m = words._n - 1
        letter = -1
        while m >= 1:
            letter = _first_letter(text, words._rows[4 * m], words._rows[4 * m + 1])
            if letter >= 0 and (after or words._rows[4 * (m - 1) + 3] < last_piece):
                break
            m -= 1
        if m >= 1:
            end = words._rows[4 * (m - 1) + 1]
            if end > skip:
                # The fewest tail ids that settle the next word's first letter.
                settled = 0
                for p in ptexts:
                    settled += len(p)
                while settled <= letter:
                    settled += len(deltas[k])
                    k += 1
                cut = end
                if timed:
                    index = [p[1] for p in pending] + list(range(n, n + agreed))
                    commit_words = [_absolute(words[j], index) for j in range(m) if words._rows[4 * j + 1] > skip]
    delta = text[skip:cut]
    # -- the new pending text: what the committed ids printed after the cut ----------------------
    if cut > skip:
        kept = list(pending)
        for j in range(k):
            kept.append((deltas[j], n + j, tail_times[j] if timed else 0))
        pos = 0
        first = 0
        while first < len(kept) and pos + len(kept[first][0]) <= cut:
            pos += len(kept[first][0])
            first += 1
        new_pending = tuple(kept[first:])
        new_skip = 0
        if new_pending and cut > pos:
            # The first piece printed the end of a committed word too: that part is replaced by
            # a placeholder that is a word of its own, so the next grouping neither re-reads
            # committed text nor takes the piece for a whitespace-only token.
            text0, index0, start0 = new_pending[0]
            new_pending = ((_PLACEHOLDER + text0[cut - pos:], index0, start0),) + new_pending[1:]
            new_skip = _PLACEHOLDER_LEN
    else:
        new_pending, new_skip = pending, skip
    partial = text[cut:] + "".join(deltas[agreed:]) + batch_delta + _held(end_state)
    # -- commit ----------------------------------------------------------------------------------
    if k:
        absorbed = new_steps[k - 1][2]
        if type(absorbed) is not dict:
            raise _forged()
        h_stream = lean(PyDict_Copy(absorbed)) if lean_stream else absorbed
        window = (window + tail_ids[:k])[-_WINDOW:]
    if n_agree > 1:
        new_history = tuple([past[k:] for past in (used + (tail_ids,))[-(n_agree - 1):]])
    else:
        new_history = _EMPTY
    oasr_append(state, _COMMITTED, delta)
    if batch is not None:
        new_steps.append(batch)
    state[_STATE_KEY] = (n + k, window, h_stream, new_pending, new_skip, new_history, tuple(new_steps[k:]), False)
    state["committed_tokens"] = n + k
    state["revision"] = revision
    if timed:
        return delta, partial, commit_words
    return delta, partial


cdef tuple _close(tok, dict state, Py_ssize_t n, tuple window, tuple pending, Py_ssize_t skip, list ptexts,
                  list deltas, list tail, tuple tail_ids, list tail_times, dict stream, bint lean_stream, revision):
    """final=True: flush the stream and commit everything."""
    cdef dict flushed = PyDict_Copy(stream)
    cdef str rest = tok.decode_incremental([], flushed, final=True)
    cdef list pieces = ptexts + deltas
    cdef Py_ssize_t base, last, j, length
    cdef str delta
    if rest:
        if pieces:
            # As token_pieces does: held-back text goes on the last non-special token.
            base = n - len(window)
            ids = [window[p[1] - base] if p[1] >= base else -1 for p in pending] + tail
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
        starts = [p[2] for p in pending] + tail_times
        index = [p[1] for p in pending] + list(range(n, n + len(tail)))
        if rest and not (ptexts or deltas):
            starts, index = [0], [max(n - 1, 0)]
        words = []
        if length > skip:
            grouped = <Words>group_words(pieces, starts)
            words = [_absolute(grouped[j], index) for j in range(grouped._n) if grouped._rows[4 * j + 1] > skip]
    oasr_append(state, _COMMITTED, delta)
    n_all = n + len(tail)
    state[_STATE_KEY] = (n_all, (window + tail_ids)[-_WINDOW:], lean(flushed) if lean_stream else flushed,
                         _EMPTY, 0, _EMPTY, _EMPTY, True)
    state["committed_tokens"] = n_all
    state["revision"] = revision
    return (delta, "") if words is None else (delta, "", words)


cdef object _absolute(object word, list index):
    from oasr_tok._wordtypes import Word

    return Word(word.text, word.start, word.end, index[word.first_token], index[word.last_token])
