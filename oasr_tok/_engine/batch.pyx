# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""The one batch engine: tok.decode_incremental_batch over Streams and dict states, in one call.

1. **Read once.** Every row of ids is read once (_engine/ids.pyx's read_ids), into one C array
   (one id a place: the array read_ids made), against the widest reach of the batch (an "audio"
   envelope's ids reach past the vocabulary).
2. **Checked before any moves.** Each place is checked against its own reach, then:
   a Stream — its maker, that no other call holds it, its ids (an envelope's), that it is open,
   and how it takes its step (Stream._plan, the one predicate of the usual step); a dict state of
   a kind whose streaming is a PieceTable's — everything its step reads (PieceTable._prepare); a
   dict state of another kind — a dry step of the kind's own on a copy (serving.check_stream);
   anything else is refused. The first bad place raises its typed error, prefixed "stream k: ",
   and nothing has moved: every Stream equals a fork taken before and pickles the same.
3. **Stepped.** The Streams are marked busy (any other use of one until the call returns is a
   StreamStateError), each as it is planned; when NOGIL_AT_LEAST usual steps or more append text
   and make no Python object, their text is taken first, without the GIL (take_text); then every
   place's step and delta in order, with it (a smaller batch's text steps taken there, each right
   before its delta). A dict state is read again right before its step when code the batch does
   not control may have run since it was checked (another place's step in Python, or another
   thread while the GIL was let go).
4. **Atomic.** A step that fails there (a registered envelope parser raising) rolls every place
   back: a Stream from what its plan kept in C, or from a copy saved before a step of the
   general rules; dict states from copies taken when the batch holds such a parser (oasr_tok's
   own parsers raise on no checked id, so no copy is taken for them).

Nothing a call writes lives at module level: its arrays are its own, freed when it returns.
"""
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.string cimport memcpy

from oasr_tok._engine.ids cimport IdBuffer, read_ids, release_ids, some_address_twice
from oasr_tok._engine.piece_table cimport PieceTable, Prepared
from oasr_tok._engine.stream cimport (
    PLAN_AUDIO,
    PLAN_GENERAL,
    Step,
    Stream,
    check_maker,
    release_step,
    same_maker,
    table_of,
    take_text,
)

from oasr_tok.errors import InvalidIdError, StreamStateError, TokenizerError
from oasr_tok._engine.serving import check_stream

cdef enum:  # a place that is a dict state (Step.plan beyond the Stream's PLAN_*)
    DICT_TABLE = 100  # a dict state stepped by the tokenizer's PieceTable
    DICT_KIND = 101   # a dict state stepped by the kind's own decode_incremental


cdef enum:
    # The fewest free usual steps a batch takes without the GIL. Letting it go wakes a thread
    # waiting for it, and on a GIL build two threads stepping batches of 1,024 Streams then hand
    # it back and forth on every call, a context switch each, and lose a quarter of one thread's
    # throughput; held through, they lose next to nothing. The text of 16,384 steps is long enough
    # for the other thread's Python work to run beside it; 4,096 about breaks even (the figures:
    # benchmarks/measurements.md, the row of benchmarks/test_server.py § Two threads).
    NOGIL_AT_LEAST = 8_192


NOGIL_STEPS = NOGIL_AT_LEAST  # (read by the tests that step a batch on either side of it)


cdef struct Rows:
    # Every row's ids, one after another, in one array (a row's place: Step.ids once all are read)
    Py_ssize_t* ids
    Py_ssize_t n, capacity
    Py_ssize_t* starts  # row k is ids[starts[k] : starts[k] + count[k]]
    Py_ssize_t* counts


cdef int _read_rows(Rows* r, object rows, Py_ssize_t n, Py_ssize_t reach) except -1:
    """Every row of ids read once into r (checked against `reach`): a bad one raises, naming
    its row."""
    cdef IdBuffer buf
    cdef Py_ssize_t k, grown
    cdef Py_ssize_t* more
    cdef bint is_list = type(rows) is list
    r.starts = <Py_ssize_t*>PyMem_Malloc(max(n, 1) * 2 * sizeof(Py_ssize_t))
    if r.starts == NULL:
        raise MemoryError()
    r.counts = r.starts + n
    r.capacity = max(n, 16)
    r.ids = <Py_ssize_t*>PyMem_Malloc(r.capacity * sizeof(Py_ssize_t))
    if r.ids == NULL:
        raise MemoryError()
    for k in range(n):
        try:
            read_ids(&buf, <object>PyList_GET_ITEM(rows, k) if is_list else rows[k], reach)
        except TokenizerError as exc:
            raise type(exc)(f"stream {k}: {exc}") from None
        try:
            if r.n + buf.n > r.capacity:
                grown = max(2 * r.capacity, r.n + buf.n)
                more = <Py_ssize_t*>PyMem_Realloc(r.ids, grown * sizeof(Py_ssize_t))
                if more == NULL:
                    raise MemoryError()
                r.ids, r.capacity = more, grown
            if buf.n:
                memcpy(r.ids + r.n, buf.ids, buf.n * sizeof(Py_ssize_t))
            r.starts[k] = r.n
            r.counts[k] = buf.n
            r.n += buf.n
        finally:
            release_ids(&buf)
    return 0


cdef void _free_rows(Rows* r) noexcept:
    PyMem_Free(r.ids)
    PyMem_Free(r.starts)


def feed_batch(tok, rows, object given, bint final, bint one_per_stream):
    """tok.decode_incremental_batch (core/streaming.py says what it takes): the deltas, in order,
    each exactly what decode_incremental(rows[k], given[k], final) gives. `rows` a list of id
    sequences, or with one_per_stream one integer sequence or buffer of one id per stream. This
    module's docstring says how. The batch reads its own copies of both lists: code it runs (an
    id's __index__, a kind's step, an envelope parser) or another thread while the GIL is let go
    may change the caller's."""
    return feed_owned(tok, list(rows) if type(rows) is list else rows, list(given), final, one_per_stream)


cdef list feed_owned(object tok, object rows, list states, bint final, bint one_per_stream):
    """feed_batch over lists no other code holds (a compiled caller's own, made for this call):
    stepped as they are, without the copies feed_batch makes of a Python caller's. Copying and
    then freeing a list of 1,024 Streams touches every Stream twice more, after the batch has
    pushed it out of the cache: a step of SGLang's detokenizer made three such lists a batch."""
    cdef Py_ssize_t k, i, n = PyList_GET_SIZE(states), reach, own, planned = 0, marked = 0, free_steps = 0
    cdef Rows r
    cdef Step* steps = NULL
    cdef Step* p
    cdef Prepared* prepared = NULL
    cdef IdBuffer one, column
    cdef list out, saved = None
    cdef Stream s
    cdef PieceTable table = table_of(tok)
    cdef Py_ssize_t dict_reach = table.vocab_size if table is not None else -1
    cdef bint whole = False, others = False, read_again, dicts = False
    if not one_per_stream and len(rows) != n:
        raise StreamStateError(f"{len(rows)} rows of ids for {n} streams; give one per stream")
    out = PyList_New(n)
    if n == 0:
        if one_per_stream and len(rows):
            raise StreamStateError(f"{len(rows)} ids for 0 streams; give one per stream")
        return out
    # The reach of the batch: its widest place's (an "audio" envelope reaches past the
    # vocabulary); each place is held to its own below, before any moves.
    reach = -1
    for k in range(n):
        item = <object>PyList_GET_ITEM(states, k)
        if type(item) is Stream:
            own = (<Stream>item).vocab_size
        else:
            dicts = True
            if dict_reach < 0:
                dict_reach = tok.vocab_size
            own = dict_reach
        if own > reach:
            reach = own
    r.ids = r.starts = NULL
    r.n = 0
    column.heap = NULL
    column.in_place = NULL
    column.column = NULL
    steps = <Step*>PyMem_Malloc(n * sizeof(Step))
    if steps == NULL:
        raise MemoryError()
    try:
        if one_per_stream:  # (one id a place: place k's is column.ids[k])
            try:
                read_ids(&column, rows, reach)
            except TokenizerError as exc:
                raise type(exc)(f"one id per stream: {exc}") from None
            if column.n != n:
                raise StreamStateError(f"{column.n} ids for {n} streams; give one per stream")
        else:
            _read_rows(&r, rows, n, reach)
        # One state given for two places: a dict by its address, up front; a Stream found busy
        # in the loop below as one of the places before it (the loop marks each one busy).
        if dicts and some_address_twice(states, n):
            raise StreamStateError("one state is given for two streams of the batch; each stream has its own")
        # -- every place checked, and its step planned; nothing moves -----------------------------
        # Each Stream is marked busy once planned: no other call (another thread, Python code a
        # step below runs, a dict kind's check here) may use it until this one returns.
        try:  # (one handler for the loop: a place's error names it)
            for k in range(n):
                item = <object>PyList_GET_ITEM(states, k)
                p = &steps[k]
                if one_per_stream:
                    p.ids = column.ids + k
                    p.n = 1
                else:
                    p.ids = r.ids + r.starts[k]
                    p.n = r.counts[k]
                p.old_pending = NULL
                p.free = p.taken = False
                planned = k + 1
                if type(item) is Stream:
                    s = <Stream>item
                    if s.busy or (tok is not s.tokenizer and not same_maker(tok, s)):
                        if s.busy:
                            _check_given_once(states, k)
                        s._check_free()
                        check_maker(tok, s)
                    if s.vocab_size < reach or s.special_flags is not None:
                        s._check_ids(p.ids, p.n)
                    s._plan(p, final)
                    others = True
                    if p.free:
                        if s.table is table:
                            free_steps += 1
                        else:
                            p.free = False  # (a maker's copy: its own table takes it, with the GIL)
                    if s.record.envelope is not None and not whole:
                        whole = s._foreign_parser()
                    s.busy = True
                elif type(item) is not dict:
                    raise StreamStateError(f"a stream state is a Stream (tok.new_stream()) or a dict ({{}} to start), "
                                           f"got {type(item).__name__}")
                else:
                    if dict_reach < reach:
                        _check_reach(p.ids, p.n, dict_reach)
                    if table is not None:
                        if prepared == NULL:
                            prepared = <Prepared*>PyMem_Malloc(n * sizeof(Prepared))
                            if prepared == NULL:
                                raise MemoryError()
                        table._prepare(item, &prepared[k], p.n)
                        p.plan = DICT_TABLE
                    else:
                        check_stream(tok, item, p.n != 0)
                        p.plan = DICT_KIND
                        others = True
                marked = k + 1
        except TokenizerError as exc:
            raise type(exc)(f"stream {k}: {exc}") from None
        # -- the usual steps that make no Python object, without the GIL in a batch that large -----
        # (A smaller batch's take their text in the pass below, each right before its delta: one
        # pass over the places instead of two.)
        if free_steps >= NOGIL_AT_LEAST:
            with nogil:
                _take_free(table, steps, n)
        # A dict state is read again before its step when anything but another dict state's step
        # ran since it was checked (a Stream's, a kind's Python step, the GIL let go).
        read_again = others
        if whole:
            saved = [None] * n
        # -- every step and its delta, in order ----------------------------------------------------
        k = 0
        try:
            while k < n:
                item = <object>PyList_GET_ITEM(states, k)
                p = &steps[k]
                if p.plan == DICT_TABLE:
                    if whole:
                        saved[k] = dict(item)
                    if read_again:
                        table._prepare(item, &prepared[k], p.n)
                    one.ids = p.ids
                    one.n = p.n
                    one.heap = NULL
                    one.in_place = NULL
                    one.column = NULL
                    delta = table._advance(&one, item, final, None, &prepared[k])
                elif p.plan == DICT_KIND:
                    if whole:
                        saved[k] = dict(item)
                    delta = tok.decode_incremental([p.ids[i] for i in range(p.n)], item, final)
                else:
                    s = <Stream>item
                    if not p.taken and (whole or p.plan == PLAN_GENERAL or p.plan == PLAN_AUDIO):
                        if saved is None:
                            saved = [None] * n
                        saved[k] = s._save(whole)
                    delta = s._finish(p, final)
                Py_INCREF(delta)
                PyList_SET_ITEM(out, k, delta)
                k += 1
        except BaseException as exc:
            for i in range(n):  # every place back: the steps taken without the GIL after k too
                if i <= k or steps[i].taken:
                    _roll_back(<object>PyList_GET_ITEM(states, i), &steps[i],
                               None if saved is None else saved[i])
            if isinstance(exc, TokenizerError):
                raise type(exc)(f"stream {k}: {exc}") from exc
            raise
    finally:
        for k in range(planned):
            if k < marked and steps[k].plan < DICT_TABLE:
                (<Stream>PyList_GET_ITEM(states, k)).busy = False
            if steps[k].old_pending != NULL:
                release_step(&steps[k])
        PyMem_Free(steps)
        PyMem_Free(prepared)
        _free_rows(&r)
        release_ids(&column)
    return out


cdef void _take_free(PieceTable table, Step* steps, Py_ssize_t n) noexcept nogil:
    """The text of every free usual step (take_text), in order."""
    cdef Py_ssize_t k
    for k in range(n):
        if steps[k].free:
            take_text(table, &steps[k])


cdef int _check_given_once(list states, Py_ssize_t k) except -1:
    """A busy Stream at place k: one of the places before it (this batch marked it), or
    another call's (the caller then says so)."""
    cdef Py_ssize_t i
    cdef PyObject* item = PyList_GET_ITEM(states, k)
    for i in range(k):
        if PyList_GET_ITEM(states, i) == item:
            raise StreamStateError("one state is given for two streams of the batch; each stream has its own")
    return 0


cdef int _check_reach(const Py_ssize_t* ids, Py_ssize_t n, Py_ssize_t size) except -1:
    """A dict state's ids, read against a wider reach: within the tokenizer's."""
    cdef Py_ssize_t i
    for i in range(n):
        if ids[i] >= size:
            raise InvalidIdError(f"token id {ids[i]} at position {i} is out of range: valid ids are 0 ... {size - 1}")
    return 0


cdef int _roll_back(object state, Step* p, object saved) except -1:
    """One place of a failed batch, back to what it was before the batch."""
    if p.plan >= DICT_TABLE:
        if saved is not None:
            (<dict>state).clear()
            (<dict>state).update(<dict>saved)
    elif saved is not None:
        (<Stream>state)._restore(<tuple>saved)
    else:
        (<Stream>state)._undo(p)
    return 0
