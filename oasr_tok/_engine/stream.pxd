# A Stream (oasr_tok/_engine/stream.pyx) and its one step, for the one batch engine that steps many
# of them beside dict states (oasr_tok/_engine/batch.pyx).
cimport cython
from cpython.object cimport PyObject

from oasr_tok._engine.growtext cimport GrowText, TextData
from oasr_tok._engine.piece_table cimport PieceTable, TableCursor, Vars
from oasr_tok._engine.stream_record cimport StreamRecord


cdef enum:  # how a step is taken: what Stream._plan, the one predicate of the usual step, decides
    PLAN_NONE = 0     # nothing to step: no ids and no flush, or the flush of a closed stream
    PLAN_ONE = 1      # the usual step of one id: the table's step_one, which makes no Python object
    PLAN_PLAIN = 2    # the usual step of ids that are plain pieces: appended to the text as they are
    PLAN_TABLE = 3    # the usual step, by the table's compiled step (advance_cursor)
    PLAN_AUDIO = 4    # one audio id of an "audio" envelope: its parser takes it, the kind never sees it
    PLAN_GENERAL = 5  # every other step: serving.py's rules, in Stream._general


cdef struct Step:
    # One stream's step of a call (a feed, or one place of a batch), as Stream._plan set it up.
    const Py_ssize_t* ids    # its checked ids (C memory the caller holds until the step is over)
    Py_ssize_t n
    int plan                 # a PLAN_*
    bint free                # PLAN_ONE or PLAN_PLAIN with no envelope: take_text, which needs no GIL
    bint taken               # take_text took the text step (the delta is made with the GIL after)
    bint stop_char           # the new text holds a stop string's first character: the record's filter decides
    # Where a usual step writes: the stream's C fields (kept alive by the stream, held by the caller)
    TextData* text
    Vars* v
    bint* in_prompt
    unsigned char held[4]    # PLAN_ONE: the cursor's pending bytes, before and after the step
    Py_ssize_t n_held
    const Py_UCS4* firsts    # the stop strings' first characters (n_first: 0 without stop strings)
    Py_ssize_t n_first
    # What undoes a usual step (old_pending: a reference held; NULL for a step that is not usual)
    Py_ssize_t old_n, old_emitted, old_tokens
    Vars old_v
    PyObject* old_pending
    bint old_in_prompt


@cython.final
cdef class Stream:
    cdef readonly object tokenizer  # the tokenizer that made it
    cdef PieceTable table           # None: `inner` is the kind's own state dict
    cdef TableCursor cursor
    cdef GrowText settled
    cdef dict inner
    cdef StreamRecord record
    cdef bytes special_flags        # an envelope's: per id, 1 special, 2 audio, 3 neither (refused)
    cdef Py_ssize_t vocab_size      # the ids it takes: the tokenizer's, or as far as its audio ids reach
    cdef bint busy                  # a call holds its internals (a feed, a batch)
    cdef bint text_gone             # it arrived without its text (Travel(text=False))

    cdef int _check_free(self) except -1
    cdef str _text(self)
    cdef str _held(self)
    cdef bint _holds_nothing(self) noexcept
    cdef tuple _keys(self)
    cdef int _check_ids(self, const Py_ssize_t* ids, Py_ssize_t n) except -1
    cdef int _plan(self, Step* p, bint final) except -1
    cdef str _finish(self, Step* p, bint final)
    cdef int _undo(self, Step* p) except -1
    cdef str _kind_step(self, object ids, bint final)
    cdef str _text_of(self, list ids, bint final, Py_ssize_t start)
    cdef tuple _save(self, bint whole)
    cdef int _restore(self, tuple saved) except -1
    cdef bint _foreign_parser(self)
    cdef str _general(self, const Py_ssize_t* ids, Py_ssize_t n, bint final)
    cdef tuple _fields(self)
    cdef tuple _compared(self)


cdef bint take_text(PieceTable table, Step* p) noexcept nogil
cdef void release_step(Step* p) noexcept
cdef PieceTable table_of(object tok)
cdef bint same_maker(object tok, Stream s) except -1
cdef int check_maker(object tok, Stream s) except -1
