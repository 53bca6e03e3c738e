# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""decode_incremental_batch over dict states (the seed's `{}` streams): every row of ids and
every state read and checked before any state changes, then each stepped by its PieceTable.
Streams made by new_stream have their own batch, oasr_tok._engine.stream.feed_streams."""
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_INCREF
from libc.string cimport memset

from oasr_tok._engine.ids cimport IdBuffer, read_ids, release_ids, some_address_twice
from oasr_tok._engine.piece_table cimport PieceTable, Prepared
from oasr_tok.errors import StreamStateError, TokenizerError


def feed_batch(PieceTable table, rows, list states, bint final, bint one_per_stream):
    """decode_incremental of each dict state with its row of ids, every row and every state read
    and checked before any state changes (a bad one: its error, prefixed "stream k: "). `rows`: a
    list of id sequences, or with one_per_stream an integer sequence or buffer holding one id per
    stream. The deltas, in order. (Streams new_stream made are oasr_tok._engine.stream's batch.)"""
    cdef Py_ssize_t k, n = PyList_GET_SIZE(states)
    cdef IdBuffer all_ids
    cdef IdBuffer one
    cdef IdBuffer* bufs = NULL
    cdef Prepared* prepared = NULL
    cdef Py_ssize_t ready = 0
    cdef list out = PyList_New(n)
    cdef object state
    cdef Py_ssize_t count
    if not one_per_stream and len(rows) != n:
        raise StreamStateError(f"{len(rows)} rows of ids for {n} streams; give one per stream")
    prepared = <Prepared*>PyMem_Malloc(max(n, 1) * sizeof(Prepared))
    if prepared == NULL:
        raise MemoryError()
    memset(&all_ids, 0, sizeof(IdBuffer))
    try:
        if one_per_stream:
            try:
                read_ids(&all_ids, rows, table.vocab_size)
            except TokenizerError as exc:
                raise type(exc)(f"one id per stream: {exc}") from None
            if all_ids.n != n:
                raise StreamStateError(f"{all_ids.n} ids for {n} streams; give one per stream")
        else:
            bufs = <IdBuffer*>PyMem_Malloc(max(n, 1) * sizeof(IdBuffer))
            if bufs == NULL:
                raise MemoryError()
            for k in range(n):
                try:
                    read_ids(&bufs[k], rows[k], table.vocab_size)
                except TokenizerError as exc:
                    raise type(exc)(f"stream {k}: {exc}") from None
                ready = k + 1
        if some_address_twice(states, n):
            raise StreamStateError("a state is given for two streams of the batch; each stream has its own")
        for k in range(n):
            state = <object>PyList_GET_ITEM(states, k)
            if type(state) is not dict:
                raise StreamStateError(
                    f"stream {k}: a stream state is a dict ({{}} to start), got {type(state).__name__}")
            count = 1 if one_per_stream else bufs[k].n
            try:
                table._prepare(state, &prepared[k], count)
            except TokenizerError as exc:
                raise type(exc)(f"stream {k}: {exc}") from None
        for k in range(n):
            state = <object>PyList_GET_ITEM(states, k)
            if one_per_stream:
                one.ids = all_ids.ids + k
                one.n = 1
                delta = table._advance(&one, state, final, None, &prepared[k])
            else:
                delta = table._advance(&bufs[k], state, final, None, &prepared[k])
            Py_INCREF(delta)
            PyList_SET_ITEM(out, k, delta)
    finally:
        PyMem_Free(prepared)
        release_ids(&all_ids)
        if bufs != NULL:
            for k in range(ready):
                release_ids(&bufs[k])
            PyMem_Free(bufs)
    return out
