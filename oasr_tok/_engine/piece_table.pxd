# The compiled streaming engine's declarations (oasr_tok/_engine/piece_table.pyx), for the one module
# that steps a table's decoder state without a state dict: decode_hypothesis (_engine/revisions.pyx),
# which also reads a kind's engine from TableMethods' field, as its decode_incremental does.
from cpython.object cimport PyObject

from oasr_tok._engine.growtext cimport TextData
from oasr_tok._engine.ids cimport IdBuffer
from oasr_tok._engine.textbuf cimport oasr_textstate


cdef struct Vars:
    bint first        # the "first" table is still in force
    bint lead         # no character has been output yet (the lead rule is pending)
    bint run_invalid  # whole_run: the current byte run already failed to decode
    bint closed       # final=True was given


cdef struct Prepared:
    # What _prepare read of a stream state, for _advance (borrowed: the state keeps them alive)
    Vars v
    PyObject* held
    PyObject* pending
    PyObject* prompt_flag   # NULL: the state has none
    bint in_prompt
    oasr_textstate text_read


cdef enum:  # what PieceTable.step_one did
    STEP_DONE = 0
    STEP_NEEDS_GIL = 1    # the id's step is another: nothing was changed
    STEP_NO_MEMORY = -1   # the text could not grow: nothing was changed


ctypedef object (*stream_feed_fn)(object tok, object stream, object new_ids, bint final)
cdef void set_stream_type(object stream_type, stream_feed_fn feed) noexcept


cdef class TableCursor:
    cdef Vars v
    cdef bytes pending
    cdef bint in_prompt
    cdef object table  # the PieceTable that made it (a cursor is stepped by that table alone)

    cdef tuple snapshot(self)
    cdef TableCursor copy_cursor(self)


cdef class PieceTable:
    cdef readonly Py_ssize_t vocab_size
    cdef list pieces
    cdef list first_pieces
    cdef list texts            # mode bytes: the piece decoded, when it is complete UTF-8 alone
    cdef list first_texts      # mode bytes: the same for first_pieces
    cdef bytes flags
    cdef bytes byte_values
    cdef const unsigned char* _flags
    cdef const unsigned char* _bytes
    cdef PyObject** _plain    # per id: the str a plain id renders once no rule is pending, else NULL
    cdef const char** _piece_data  # mode bytes: per id its piece's bytes (borrowed), NULL for a skipped id
    cdef Py_ssize_t* _piece_size
    cdef int mode, rule, lead_rule
    cdef bint has_first
    cdef str errors
    cdef tuple fresh
    cdef readonly tuple fresh_snapshot  # the decoder state of a new stream, as a snapshot
    cdef tuple plain_snapshot  # no rule pending, no bytes held, no prompt block open
    cdef readonly Py_ssize_t prompt_open, prompt_close  # the prompt rule's ids; -1: no rule
    cdef readonly object tag  # the fingerprint of these tables, recorded in the states they make

    cdef object _close_run(self, Vars* v, bytes pending, object out)
    cdef object _step(self, Py_ssize_t tid, Vars* v, list pending_box, object out)
    cdef object _break_run(self, Vars* v, list pending_box, object out)
    cdef object _step_bytes(self, Vars* v, bytes pending, bytes piece, list pending_box, object out)
    cdef str _tail(self, Vars v, bytes pending)
    cdef list _pieces_of(self, object ids)
    cdef str _feed(self, IdBuffer* ids, object state, bint final, list per_id)
    cdef int _prepare(self, object state, Prepared* p, Py_ssize_t n) except -1
    cdef str _advance(self, IdBuffer* ids, object state, bint final, list per_id, Prepared* p)
    cdef object _run(self, const Py_ssize_t* ids, Py_ssize_t n, Vars* v, list pending_box, bint* in_prompt,
                     list per_id)
    cdef object _finish(self, Vars* v, list pending_box, object out)
    cdef bint _valid_state(self, object st, Py_ssize_t size=*)
    cdef int load_snapshot(self, object snapshot, Vars* v, list pending_box, bint* in_prompt) except -1
    cdef tuple snapshot(self, Vars* v, bytes pending, bint in_prompt, tuple before)
    cdef bint plain_through(self, Vars* v, bytes pending, bint in_prompt, const Py_ssize_t* ids, Py_ssize_t n) noexcept
    cdef list _pieces(self, IdBuffer* ids, unsigned char* held=*)
    cdef TableCursor new_cursor(self)
    cdef str advance_cursor(self, TableCursor c, const Py_ssize_t* ids, Py_ssize_t n, bint final)
    cdef str cursor_tail(self, TableCursor c)
    cdef int load_cursor(self, TableCursor c, tuple snapshot) except -1
    cdef int step_one(self, Vars* v, unsigned char* held, Py_ssize_t* n_held, bint* in_prompt, Py_ssize_t tid,
                      TextData* text) noexcept nogil


cdef inline str _joined(object out):
    """The text of what PieceTable's steps build (None, a str, or a list of str: see _append)."""
    if out is None:
        return ""
    if type(out) is list:
        return "".join(<list>out)
    return <str>out


cdef class TableMethods:
    cdef public object _table  # the engine: a PieceTable, or one with the same two methods

    cdef inline object _engine(self):
        if self._table is None:
            raise TypeError(f"{type(self).__name__} has no decoding engine yet (set self._table in __init__)")
        return self._table
