# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""`oasr_tok.Stream`: a stream that owns its state (what tok.new_stream returns), and its one step.

A dict state keeps its fields where its caller can see and change them, so every step reads,
checks and writes them again, holds the GIL for it, and a batch must read them again after any
code it does not control ran. A Stream keeps them in C:

* a kind whose streaming is a PieceTable's (symbol_table, sentencepiece, bbpe, whisper, gguf,
  tekken, aggregate, most huggingface files) has its decoder state in a TableCursor and its
  settled text in a GrowText (amortised O(1) per appended character; the str made on request);
* every other kind keeps its own decode_incremental state, a dict nobody else can reach;
* the server's rules (a prompt's held text, stop strings, an envelope parser) in a StreamRecord.

A step is planned, then taken. Stream._plan is the one predicate of the usual step: it reads the
stream's C fields and says how the step of its checked ids is taken (a Step: PLAN_ONE, PLAN_PLAIN,
PLAN_TABLE, PLAN_AUDIO, PLAN_GENERAL) and keeps what undoes a usual step. take_text takes the text
of a usual step that makes no Python object (without the GIL, in a batch of 8,192 such steps or
more; else in Stream._finish); Stream._finish makes the delta and takes every other step, with
it. A feed is one plan and one finish; the batch (_engine/batch.pyx) plans every stream before
any moves and rolls them all back if a later step fails. A step is atomic: ids are read and
checked first, and a step that fails later (an envelope parser's error) is undone. serving.py
states the rules.
"""
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.string cimport memcmp, memcpy

from oasr_tok._engine.growtext cimport GrowText, text_append_reserved, text_reserve_nogil
from oasr_tok._engine.ids cimport IdBuffer, read_ids, release_ids
from oasr_tok._engine.piece_table cimport STEP_DONE, PieceTable, TableCursor, TableMethods, set_stream_type
from oasr_tok._engine.stream_record cimport StreamRecord, no_first_char

from collections.abc import Mapping

from oasr_tok.outputs.envelopes import feed as _envelope_feed
from oasr_tok.outputs.envelopes import new_parser, prime
from oasr_tok.errors import InvalidIdError, StreamStateError, short_repr, stream_closed_error
from oasr_tok._engine.serving import PREFILL_TAIL, check_stops, ids_sequence, prefill_tail
from oasr_tok._engine.travel import arrive, carry, travel_of
from oasr_tok._engine.revisions import keeps_whole_text, lean

cdef extern from "Python.h":
    bytes PyBytes_FromStringAndSize(const char*, Py_ssize_t)
    Py_ssize_t PyBytes_GET_SIZE(PyObject*)
    Py_ssize_t raw_length "PyUnicode_GET_LENGTH"(PyObject*) nogil
    int PyUnicode_KIND(PyObject*) nogil

cdef object _table_decode_incremental = TableMethods.decode_incremental
cdef tuple _PUBLIC_KEYS = ("text", "stop")
cdef tuple _ENVELOPE_KEYS = ("text", "stop", "envelope")


cdef PieceTable table_of(object tok):
    """The tokenizer's PieceTable when its streaming is that table's own (the kind did not
    replace decode_incremental), else None: its own decode_incremental steps a private dict."""
    engine = getattr(tok, "_table", None)
    if (type(engine) is PieceTable and type(tok).decode_incremental is _table_decode_incremental
            and "decode_incremental" not in getattr(tok, "__dict__", ())):
        return <PieceTable>engine
    return None


cdef bytes _special_flags(object tok, Py_ssize_t size):
    """One byte per id, 1 for a special id (an envelope stream's usual step is a non-special
    id): made once per tokenizer and kept on it."""
    cache = getattr(tok, "__dict__", None)
    flags = cache.get("_oasr_special_flags") if cache is not None else None
    if type(flags) is bytes and len(<bytes>flags) == size:
        return <bytes>flags
    marks = bytearray(size)
    for i in tok.special_ids:
        if 0 <= i < size:
            marks[i] = 1
    flags = bytes(marks)
    if cache is not None:
        cache["_oasr_special_flags"] = flags
    return <bytes>flags


cdef int _attach_envelope(Stream s, object tok, object parser) except -1:
    """The stream's per-id flags for its envelope parser: 1 for a special id (the parser reads
    it). A parser that takes audio ids out of the text (the "audio" envelope) gives its own:
    2 for an audio id, 3 for an id that is neither text nor audio (refused before a step), and
    the stream's ids reach as far as its audio ids do (past the tokenizer's vocabulary, for
    Kimi-Audio's)."""
    id_flags = getattr(parser, "id_flags", None)
    if id_flags is None:
        s.special_flags = _special_flags(tok, s.vocab_size)
        return 0
    flags = id_flags(tok)
    if type(flags) is not bytes or len(<bytes>flags) < s.vocab_size:
        raise StreamStateError("an envelope's id flags must be bytes, one per id of the tokenizer at least")
    s.special_flags = <bytes>flags
    s.vocab_size = len(<bytes>flags)
    return 0


cdef object _closed_error(StreamRecord record):
    """What ids given to a closed stream raise: it stopped at a stop string, or it was flushed."""
    stopped = record.stop
    if stopped is not None:
        return StreamStateError(f"this stream stopped at {stopped.text!r}; it takes no more ids")
    return stream_closed_error()


cdef class Stream:
    """One stream of a tokenizer: feed it ids, get the text they settle (docs/decoding.md §
    The server loop). Made by tok.new_stream(prefill=None, stop=None, include_stop=False,
    envelope=None).

    A read-only Mapping too: stream["text"], stream["stop"] (and stream["envelope"] for a stream
    with an envelope) read what a dict state holds, so code written for dict states keeps
    reading it. `fork()` copies it; a pickle carries its state and a ticket naming its tokenizer
    by fingerprint (by reference: the receiving process holds the same tokenizer; or with the
    tokenizer's files or spec, as oasr_tok.Travel says), so it goes on in another worker with
    exactly the deltas it would have given here (docs/scale.md § Streams that travel).

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "sentencepiece")
        >>> stream = tok.new_stream(stop=["9"])
        >>> [stream.feed([i]) for i in tok.encode("the café opens at 9")]
        ['the', ' café', ' o', 'p', 'ens', ' at', ' ', '']
        >>> stream.stop
        StopMatch(text='9', token_index=7, char_offset=18)
    """

    # Its fields: _engine/stream.pxd.

    def __init__(self, *args, **kwargs):
        raise TypeError("a Stream is made by tok.new_stream(...)")

    # -- what it is -----------------------------------------------------------------------

    cdef int _check_free(self) except -1:
        if self.busy:
            raise StreamStateError("this stream is being stepped by another call (a decode_incremental_batch, "
                                   "or a feed in another thread); use it once that call has returned")
        return 0

    @property
    def text(self):
        """The decode of every id fed so far (after a prompt: of the prompt's tail and what
        followed), made when asked for and kept until the next feed. A stream that travelled
        without its text (Travel(text=False)) has none to give: StreamStateError."""
        self._check_free()
        if self.text_gone:
            raise StreamStateError("this stream travelled without its text (Travel(text=False)): it goes on with the "
                                   "same deltas, but its whole text is only where it came from")
        return self._text()

    cdef str _text(self):
        if self.table is None:
            text = self.inner.get("text", "")
            return text if type(text) is str else ""
        cdef str tail = self.table.cursor_tail(self.cursor)
        return self.settled.text() + tail if tail else self.settled.text()

    @property
    def held(self):
        """The end of the stream's text that is not given out yet, as decode renders it now: a
        character or byte run not finished (a U+FFFD each where decode shows one), a tail the
        kind may still rewrite, and text held back as the possible start of a stop string.
        '' when nothing is held, and once the stream is closed. A prompt's own unfinished text
        is not part of it (it never comes out as it was). Made from the held part alone.

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> stream = tok.new_stream(stop=["open"])
            >>> stream.feed(tok.encode("the café op")), stream.held
            ('the café ', 'op')
        """
        self._check_free()
        return self._held()

    cdef str _held(self):
        """What it holds back: its decoder's held tail, through the record's rule (held_after)."""
        cdef str tail
        if self.record.closed:
            return ""
        if self.table is None:
            text, size = self.inner.get("text", ""), self.inner.get("_tail", 0)
            tail = text[len(text) - size:] if type(text) is str and type(size) is int and 0 < size <= len(text) else ""
        else:
            tail = self.table.cursor_tail(self.cursor)
        return self.record.held_after(tail)

    cdef bint _holds_nothing(self) noexcept:
        """Whether it surely holds nothing back, read from C fields alone (the usual case: no
        bytes of a character pending, no possible start of a stop string held back); when not
        sure, _held says."""
        cdef StreamRecord record = self.record
        return record.closed or (self.table is not None and not PyBytes_GET_SIZE(<PyObject*>self.cursor.pending)
                                 and (not record.pending or record.keeps_stop))

    @property
    def emitted(self):
        """How many characters the deltas have given out so far (the length of the stream's
        output: stream.text ends with that output and then `held`, until the stream stops)."""
        return self.record.emitted

    @property
    def stop(self):
        """None, or the StopMatch of the stop string that ended the stream."""
        return self.record.stop

    @property
    def envelope(self):
        """The envelope's fields known so far (a stream made with envelope=...), else None."""
        return None if self.record.envelope is None else self.record.envelope.known()

    @property
    def closed(self):
        """Whether the stream takes no more ids: flushed with final=True, or stopped."""
        return self.record.closed

    def take_audio(self):
        """The audio ids that came since the last call, as AudioRuns (ids, token_index,
        char_offset), for a stream made with envelope="audio" or an AudioIds (docs/envelopes.md
        § audio); a run still growing continues in the next call's first run."""
        self._check_free()
        parser = self.record.envelope
        take = getattr(parser, "take_audio", None)
        if take is None:
            raise StreamStateError("this stream tells no audio ids apart: make it with new_stream(envelope='audio') "
                                   "or envelope=AudioIds(start, end)")
        return take()

    @property
    def held_bytes(self):
        """How many bytes of characters the ids have not settled yet the stream holds back (a
        character split across tokens, a ByteFallback byte run): 0 when the text so far ends on
        a settled character. A kind that keeps its own state (not a table's) reports 0. What a
        server that shows text only where tokenizers' DecodeStream shows it needs
        (oasr_tok._engine.served)."""
        return 0 if self.table is None else len(self.cursor.pending)

    # -- the Mapping view (read-only) ---------------------------------------------------------

    cdef tuple _keys(self):
        return _PUBLIC_KEYS if self.record.envelope is None else _ENVELOPE_KEYS

    def __getitem__(self, key):
        if key == "text":
            return self.text
        if key == "stop":
            return self.record.stop
        if key == "envelope" and self.record.envelope is not None:
            return self.record.envelope.known()
        raise KeyError(key)

    def get(self, key, default=None):
        return self[key] if key in self._keys() else default

    def __contains__(self, key):
        return key in self._keys()

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def keys(self):
        return list(self._keys())

    def values(self):
        return [self[k] for k in self._keys()]

    def items(self):
        return [(k, self[k]) for k in self._keys()]

    def __setitem__(self, key, value):
        raise TypeError("a Stream is read-only: feed it ids (stream.feed) to change it")

    def __delitem__(self, key):
        raise TypeError("a Stream is read-only: feed it ids (stream.feed) to change it")

    # -- stepping -------------------------------------------------------------------------

    def feed(self, new_ids, final=False):
        """Feed `new_ids`; return the text they settle (what decode_incremental(new_ids, stream)
        gives). final=True flushes what was held back and closes the stream.

        Args:
            new_ids: the ids (a list, a NumPy array, any integer buffer).
            final: flush and close.

        Returns:
            The newly settled text: never taken back.

        A failed call leaves the stream as it was.

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "sentencepiece")
            >>> stream = tok.new_stream()
            >>> stream.feed(tok.encode("the café")), stream.feed([], final=True), stream.closed
            ('the café', '', True)
        """
        cdef IdBuffer ids
        cdef Step p
        if type(final) is not bool:
            final = bool(final)
        self._check_free()
        read_ids(&ids, new_ids, self.vocab_size)
        p.old_pending = NULL
        # Busy while it steps: Python code the step may run (an envelope parser, a kind's own
        # step) or another thread cannot step this stream in the middle of it.
        self.busy = True
        try:
            if self.special_flags is not None:
                self._check_ids(ids.ids, ids.n)
            p.ids = ids.ids
            p.n = ids.n
            self._plan(&p, final)
            if p.free:
                take_text(self.table, &p)
            return self._finish(&p, final)
        finally:
            release_step(&p)
            self.busy = False
            release_ids(&ids)

    cdef int _check_ids(self, const Py_ssize_t* ids, Py_ssize_t n) except -1:
        """Ids (each checked against some vocabulary already) that this stream takes: within its
        own ids, and for an "audio" envelope none that is neither text nor audio (flag 3)."""
        cdef const unsigned char* marks
        cdef Py_ssize_t i
        for i in range(n):
            if ids[i] >= self.vocab_size:
                raise InvalidIdError(f"token id {ids[i]} at position {i} is out of range: valid ids are "
                                     f"0 ... {self.vocab_size - 1}")
        if self.special_flags is not None:
            marks = self.special_flags
            for i in range(n):
                if marks[ids[i]] == 3:
                    raise InvalidIdError(f"token id {ids[i]} at position {i} is neither a text id of the tokenizer "
                                         "nor one of the stream's audio ids")
        return 0

    cdef int _plan(self, Step* p, bint final) except -1:
        """The one predicate of the usual step: how this stream takes the step of p.ids (checked
        by _check_ids), set in *p, with what undoes a usual step. Reads C fields only.

        The usual step: not final, a table kind, the stream open and the prompt's held text gone;
        with stop strings or an envelope to watch, one id and nothing pending; for an envelope, a
        non-special id and no stop strings beside it. It is the table's compiled step and, at
        most, its delta checked against the stop strings' first characters or handed to the
        envelope parser: PLAN_ONE (one id, step_one), PLAIN (plain pieces), TABLE (the rest).
        One audio id of an "audio" envelope is PLAN_AUDIO; every other step PLAN_GENERAL.
        Ids for a closed stream raise StreamStateError; no ids and no flush are PLAN_NONE."""
        cdef StreamRecord record = self.record
        cdef TableCursor cursor
        p.free = p.taken = p.stop_char = False
        p.old_pending = NULL
        if record.closed:
            if p.n:
                raise _closed_error(record)
            p.plan = PLAN_NONE
            return 0
        if p.n == 0 and not final:
            p.plan = PLAN_NONE  # no ids and no flush: nothing to step (a check writes nothing)
            return 0
        if record.envelope is not None and not final and p.n == 1 and self.special_flags[p.ids[0]] == 2 and (
                not record.stops and not record.prompt_rest):
            p.plan = PLAN_AUDIO
            return 0
        if (final or self.table is None or record.prompt_rest
                or ((record.stops or record.envelope is not None) and (record.pending or p.n != 1))
                or (record.envelope is not None and (record.stops or self.special_flags[p.ids[0]]))):
            p.plan = PLAN_GENERAL
            return 0
        # A usual step: where it writes, and what undoes it, in C (no snapshot objects)
        cursor = self.cursor
        p.text = &self.settled.t
        p.v = &cursor.v
        p.in_prompt = &cursor.in_prompt
        p.firsts = record.first_chars
        p.n_first = record.n_first if record.stops else 0
        p.old_n = self.settled.t.n
        p.old_emitted = record.emitted
        p.old_tokens = record.tokens
        p.old_v = cursor.v
        p.old_in_prompt = cursor.in_prompt
        Py_INCREF(cursor.pending)
        p.old_pending = <PyObject*>cursor.pending
        p.plan = PLAN_TABLE
        if p.n == 1:
            p.n_held = PyBytes_GET_SIZE(p.old_pending)
            if p.n_held <= 3:
                if p.n_held:
                    memcpy(p.held, <char*>cursor.pending, p.n_held)
                p.plan = PLAN_ONE
        elif self.table.plain_through(&cursor.v, cursor.pending, cursor.in_prompt, p.ids, p.n):
            p.plan = PLAN_PLAIN
        p.free = p.plan != PLAN_TABLE and record.envelope is None
        return 0

    cdef str _finish(self, Step* p, bint final):
        """The step of a plan, with the GIL: the delta of a text step take_text took, and every
        other step taken here. A usual step whose envelope parser raises is undone."""
        cdef StreamRecord record = self.record
        cdef str delta
        cdef PyObject* raw = NULL
        if p.plan == PLAN_NONE:
            return ""
        if p.plan == PLAN_AUDIO:
            # The parser takes it, the kind never sees it (what _general's envelope feed does with
            # it, without its copies).
            record.envelope.audio(p.ids[0], record.tokens)
            record.tokens += 1
            return ""
        if p.plan == PLAN_GENERAL:
            return self._general(p.ids, p.n, final)
        if not p.taken and p.plan != PLAN_TABLE:
            take_text(self.table, p)  # (a step not taken before: a batch's with the GIL, an envelope's)
        if p.taken:
            if p.text.n != p.old_n:
                self.settled.cached = None
            if p.plan == PLAN_ONE:
                if p.n_held != PyBytes_GET_SIZE(<PyObject*>self.cursor.pending) or (
                        p.n_held and memcmp(p.held, <char*>self.cursor.pending, p.n_held)):
                    self.cursor.pending = PyBytes_FromStringAndSize(<char*>p.held, p.n_held)
                if p.n_held == 0 and PyBytes_GET_SIZE(p.old_pending) == 0:
                    raw = self.table._plain[p.ids[0]]
            if p.text.n == p.old_n:
                delta = ""
            elif raw != NULL:
                delta = <str>raw  # the piece itself (what step_one appended), not a copy
            else:
                delta = self.settled.slice(p.old_n)
        else:
            delta = self.table.advance_cursor(self.cursor, p.ids, p.n, False)
            self.settled.append(delta)
        if record.envelope is not None:
            parser = record.envelope
            kept = parser.copy() if self._foreign_parser() else None
            try:
                delta = parser.text(delta, False)
            except BaseException:
                self._undo(p)
                if kept is not None:
                    record.envelope = kept
                raise
        elif p.n_first and (p.stop_char if p.taken else not record.starts_no_stop(delta)):
            delta = record.filter(delta, record.tokens, False)
        else:
            record.emitted += len(delta)
        record.tokens += p.n
        return delta

    cdef int _undo(self, Step* p) except -1:
        """A usual step undone, from what its plan kept in C (nothing for another step)."""
        cdef StreamRecord record = self.record
        if p.old_pending == NULL:
            return 0
        self.cursor.v = p.old_v
        self.cursor.pending = <bytes>p.old_pending
        self.cursor.in_prompt = p.old_in_prompt
        self.settled.truncate(p.old_n)
        self.settled.cached = None
        record.emitted = p.old_emitted
        record.tokens = p.old_tokens
        record.pending = ""
        record.stop = None
        record.closed = False
        return 0

    cdef str _kind_step(self, object ids, bint final):
        """The kind's own step of `ids` (a list of checked ids): the text it settles."""
        cdef IdBuffer buf
        cdef str delta
        if self.table is None:
            return self.tokenizer.decode_incremental(ids, self.inner, final)
        read_ids(&buf, ids, self.table.vocab_size)  # (the table's ids: an envelope's audio ids never come here)
        try:
            delta = self.table.advance_cursor(self.cursor, buf.ids, buf.n, final)
        finally:
            release_ids(&buf)
        self.settled.append(delta)
        return delta

    def _kind_step_py(self, ids, final=False):
        return self._kind_step(ids, final)

    cdef str _text_of(self, list ids, bint final, Py_ssize_t start):
        """The kind's step of `ids`, through the envelope parser when there is one (`start`: the
        index of ids[0] among the generated ids)."""
        parser = self.record.envelope
        if parser is None:
            return self._kind_step(ids, final)
        return _envelope_feed(self.tokenizer, parser, ids, self._kind_step_py, final, start)

    cdef tuple _save(self, bint whole):
        """What _restore needs to undo a step. The kind's own step and the rules are atomic and
        cannot fail on checked ids; what can is an envelope parser's Python code: `whole` (a
        parser that is not oasr_tok's own, or a batch holding one) copies the parser and the
        kind's state dict too."""
        cdef StreamRecord r = self.record
        parser = r.envelope
        return (None if self.cursor is None else self.cursor.copy_cursor(), self.settled.t.n,
                dict(self.inner) if whole and self.inner is not None else None,
                (r.pending, r.emitted, r.tokens, r.prompt_rest, r.closed, r.stop),
                parser.copy() if whole and parser is not None else None)

    cdef int _restore(self, tuple saved) except -1:
        cdef StreamRecord r = self.record
        cursor, n, inner, scalars, parser = saved
        if cursor is not None:
            self.cursor = <TableCursor>cursor
        self.settled.truncate(n)
        if inner is not None:
            self.inner.clear()
            self.inner.update(inner)
        r.pending, r.emitted, r.tokens, r.prompt_rest, r.closed, r.stop = scalars
        if parser is not None:
            r.envelope = parser
        return 0

    cdef bint _foreign_parser(self):
        parser = self.record.envelope
        return parser is not None and type(parser).__module__ != "oasr_tok.outputs.envelopes"

    cdef str _general(self, const Py_ssize_t* ids, Py_ssize_t n, bint final):
        """Every step that is not the usual one, by serving.py's rules; rolled back on error."""
        cdef StreamRecord record
        cdef list new = [ids[i] for i in range(n)], out
        cdef Py_ssize_t k
        cdef str result, delta
        saved = self._save(self._foreign_parser())
        try:
            record = self.record
            if record.stops or record.prompt_rest:
                out = []
                # One id at a time: which token completes a stop string is part of the answer.
                for k in range(len(new)):
                    delta = self._text_of([new[k]], False, record.tokens + k)
                    out.append(record.filter(delta, record.tokens + k, False))
                    if record.closed:
                        break
                record.tokens += len(new)
                if final and not record.closed:
                    delta = self._text_of([], True, record.tokens)
                    out.append(record.filter(delta, record.tokens - 1, True))
                    if not record.keeps_stop:
                        out.append(record.pending)
                    record.pending = ""
                result = "".join(out)
            else:
                result = self._text_of(new, final, record.tokens)
                record.emitted += len(result)
                record.tokens += len(new)
            if final:
                record.closed = True
        except BaseException:
            self._restore(saved)
            raise
        return result

    # -- copies -----------------------------------------------------------------------------

    def fork(self):
        """An independent copy (a beam): what one is fed changes nothing of the other."""
        self._check_free()
        cdef Stream other = Stream.__new__(Stream)
        other.tokenizer = self.tokenizer
        other.table = self.table
        other.cursor = None if self.cursor is None else self.cursor.copy_cursor()
        other.settled = self.settled.copy_text()
        other.inner = None if self.inner is None else dict(self.inner)
        other.record = self.record.copy_record()
        other.special_flags = self.special_flags
        other.vocab_size = self.vocab_size
        other.text_gone = self.text_gone
        return other

    def __copy__(self):
        return self.fork()

    def __deepcopy__(self, memo):
        return self.fork()

    cdef tuple _fields(self):
        return (None if self.cursor is None else self.cursor.snapshot(), self.settled.text(),
                None if self.inner is None else dict(self.inner), self.text_gone)

    cdef tuple _compared(self):
        """Every field, the envelope parser's by its contents (a copy is another object)."""
        parser = self.record.envelope
        parsed = None if parser is None else (
            type(parser), {k: v for k, v in vars(parser).items() if k != "_known"})
        r = self.record
        return (self._fields(), (r.stops, r.keeps_stop, r.pending, r.emitted, r.tokens, r.prompt_rest,
                                 r.closed, r.stop), parsed)

    def __reduce__(self):
        """Its state and a ticket naming its tokenizer (_engine/travel.py): the decoder state,
        the rules' record, and its text unless Travel(text=False) (or it arrived without it):
        then the decoder state of a kind that keeps a dict is cut to its held-back tail, as
        decode_hypothesis keeps one (a kind whose reference decode_incremental reads its whole
        text keeps it: its text travels)."""
        self._check_free()
        tok = self.tokenizer
        ticket = carry(tok)
        with_text = not self.text_gone and travel_of(tok).text
        if self.table is not None:
            # (the table's tag binds the decoder state to the decoder that made it, as a dict
            # state's "_tok" does: a ticket swapped for another stream's is refused)
            return (_stream_from_fields, (ticket, self.cursor.snapshot(), self.settled.text() if with_text else None,
                                          None, self.record, self.table.tag))
        inner = dict(self.inner)
        if not with_text and not keeps_whole_text(tok):
            return (_stream_from_fields, (ticket, None, None, lean(inner), self.record, None))
        return (_stream_from_fields, (ticket, None, None if self.text_gone else "", inner, self.record, None))

    def __eq__(self, other):
        """Equal streams: the same tokenizer and the same state, field by field (what a
        deep-compare before and after a refused call checks)."""
        if type(other) is not Stream:
            return NotImplemented
        self._check_free()
        (<Stream>other)._check_free()
        return same_maker(self.tokenizer, <Stream>other) and self._compared() == (<Stream>other)._compared()

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # mutable, compared by value

    def __repr__(self):
        chars = "?" if self.busy or self.text_gone else len(self._text())
        return (f"<oasr_tok.Stream of {type(self.tokenizer).__name__}: {chars} "
                f"chars, {self.record.tokens} generated ids{', closed' if self.record.closed else ''}>")


cdef Stream _blank(object tok):
    cdef Stream s = Stream.__new__(Stream)
    s.tokenizer = tok
    s.table = table_of(tok)
    s.cursor = None if s.table is None else s.table.new_cursor()
    s.inner = {} if s.table is None else None
    s.settled = GrowText()
    s.vocab_size = s.table.vocab_size if s.table is not None else tok.vocab_size
    s.special_flags = None
    return s


def new_stream(tok, prefill=None, stop=None, include_stop=False, envelope=None):
    """tok.new_stream (streaming.py has its documentation): a Stream, primed with the prompt's
    tail, with its stop strings and envelope parser."""
    cdef Stream s
    cdef str settled
    parser = None if envelope is None else new_parser(envelope, tok)
    stops = () if stop is None else check_stops(stop)
    if type(include_stop) is not bool:
        raise StreamStateError(f"include_stop must be True or False, got {short_repr(include_stop)}")
    s = _blank(tok)
    if parser is not None:
        _attach_envelope(s, tok, parser)
    held = ""
    if prefill is not None:
        if parser is not None and parser.audio_span is not None:
            prefill = parser.text_ids(parser.checked_ids(tok, prefill))  # only the prompt's text primes it
        if type(prefill) is not list:  # (a list is its own sequence)
            prefill = ids_sequence(tok, prefill)
        total = len(prefill)
        size = min(total, PREFILL_TAIL)
        while True:
            # (the whole prompt as the tail: what prefill_tail reads then, without its Python frame)
            tail = tok.check_ids(prefill[:]) if size == total else prefill_tail(tok, prefill, size)
            settled = s._kind_step(tail, False)
            if settled or len(tail) >= total:
                break
            s = _blank(tok)  # it rendered nothing yet: look further back
            size = min(total, size * 4)
        held = s._text()[len(settled):]
        if parser is not None:
            prime(tok, parser, tail)
            _attach_envelope(s, tok, parser)
    if parser is not None:
        parser.after_prompt()
    s.record = StreamRecord(stops, include_stop, held, parser)
    return s


def _stream_from_fields(ticket, cursor, settled, inner, record, maker=None):
    """A pickled Stream: its tokenizer found from its ticket (the one that made it, or a typed
    error), each field checked for its type, then the record checked against the decoder's
    state and text (StreamRecord.check_against). A forged one raises StreamStateError.
    `settled`: the table's settled text (a kind with a state dict: "" when its text travelled
    in it), None when the text did not travel. `maker`: the tag of the table whose decoder state
    `cursor` is (a state dict names its maker itself, in "_tok")."""
    cdef Stream s
    cdef str tail
    cdef object text = None
    tok = arrive(ticket, "stream")
    if not hasattr(tok, "decode_incremental") or not hasattr(tok, "vocab_size"):
        raise StreamStateError("a pickled stream's tokenizer is not a tokenizer; start a new stream")
    s = _blank(tok)
    if not (settled is None or type(settled) is str) or type(record) is not StreamRecord:
        raise StreamStateError("a pickled stream's text or record is not one a stream made; start a new stream")
    s.text_gone = settled is None
    if s.table is not None:
        if type(cursor) is not tuple or inner is not None or type(maker) is not type(s.table.tag) or (
                maker != s.table.tag):
            raise StreamStateError("a pickled stream's decoder state is not one this tokenizer makes; "
                                   "start a new stream")
        s.table.load_cursor(s.cursor, <tuple>cursor)
        if settled is not None:
            s.settled.append(settled)
        text, tail = settled, s.table.cursor_tail(s.cursor)
    else:
        if cursor is not None or type(inner) is not dict or settled or maker is not None:
            raise StreamStateError("a pickled stream's decoder state is not one this tokenizer makes; "
                                   "start a new stream")
        tok.decode_incremental([], dict(inner))  # the kind checks its own state (a dry step, on a copy)
        s.inner = inner
        whole = inner.get("text", "")
        held = inner.get("_tail", 0)
        whole = whole if type(whole) is str else ""
        held = held if type(held) is int and 0 <= held <= len(whole) else 0
        tail = whole[len(whole) - held:]
        if settled is not None:
            text = whole[:len(whole) - held]
    (<StreamRecord>record).check_against(text, tail)
    s.record = record
    if record.envelope is not None:
        _attach_envelope(s, tok, record.envelope)
    return s


cdef bint same_maker(object tok, Stream s) except -1:
    """Whether `tok` made the stream, or renders exactly as its maker does (the same files
    rebuilt, a worker's copy)."""
    if tok is s.tokenizer:
        return True
    other = table_of(tok)
    if s.table is not None and other is not None and other.tag == s.table.tag:
        return True
    if s.table is None and other is None and getattr(tok, "_stream_tag", None) is not None:
        return tok._stream_tag() == s.tokenizer._stream_tag()
    return False


cdef int check_maker(object tok, Stream s) except -1:
    """A stream is stepped only by the tokenizer that made it, or one rendering as it does."""
    if same_maker(tok, s):
        return 0
    raise StreamStateError(f"this stream was made by another tokenizer ({type(s.tokenizer).__name__}); "
                           "a stream is stepped by the tokenizer that made it")


cdef object _feed_for(object tok, object stream, object new_ids, bint final):
    """decode_incremental(new_ids, stream) of `tok`: the stream's own step, once `tok` is its
    maker (or renders as it does)."""
    check_maker(tok, <Stream>stream)
    return (<Stream>stream).feed(new_ids, final)


def feed_for(tok, Stream stream, new_ids, final=False):
    """decode_incremental(new_ids, stream) for kinds whose decode_incremental is Python's."""
    return _feed_for(tok, stream, new_ids, bool(final))


# -- a usual step's text, without the GIL ---------------------------------------------------------

cdef bint take_text(PieceTable table, Step* p) noexcept nogil:
    """The text of a usual step of one id (the table's step_one) or of plain pieces, appended to
    the stream's text with no Python object made or changed, so without the GIL in a batch; and
    whether that text holds a stop string's first character (the record's filter then decides,
    with the GIL). False, with nothing changed, when the id's step is another (a rule pending, a
    byte piece of a text table, a long piece) or the text could not grow: the step is then taken
    with the GIL, by the table's compiled step."""
    cdef Py_ssize_t i, added = 0
    cdef int kind = 1
    cdef PyObject* raw
    if p.plan == PLAN_ONE:
        if table.step_one(p.v, p.held, &p.n_held, p.in_prompt, p.ids[0], p.text) != STEP_DONE:
            return False
    elif p.plan == PLAN_PLAIN:
        for i in range(p.n):
            raw = table._plain[p.ids[i]]
            added += raw_length(raw)
            if PyUnicode_KIND(raw) > kind:
                kind = PyUnicode_KIND(raw)
        if text_reserve_nogil(p.text, kind, added) < 0:
            return False
        for i in range(p.n):
            text_append_reserved(p.text, table._plain[p.ids[i]])
    else:
        return False
    p.stop_char = p.n_first != 0 and not no_first_char(p.text.kind, p.text.data, p.old_n, p.text.n,
                                                       p.firsts, p.n_first)
    p.taken = True
    return True


cdef void release_step(Step* p) noexcept:
    """What a plan held (the reference that undoes a usual step), let go once the step is over."""
    Py_XDECREF(p.old_pending)
    p.old_pending = NULL


def holding(list streams):
    """The places of the streams of `streams` that hold something back (whose `held` is not
    ''), in order: one pass in C, for a server loop that treats those few apart from the rest
    of a batch (oasr_tok/integrations/sglang.py)."""
    cdef list out = []
    cdef Py_ssize_t k
    cdef Stream s
    for k in range(PyList_GET_SIZE(streams)):
        obj = <object>PyList_GET_ITEM(streams, k)
        if type(obj) is not Stream:
            raise StreamStateError(f"stream {k}: not a Stream (tok.new_stream()), got {type(obj).__name__}")
        s = <Stream>obj
        if not s._holds_nothing() and s._held():
            out.append(k)
    return out


def held_bytes_of(list streams):
    """Stream.held_bytes of each of `streams` (Streams), in one call: bytes, 1 where a stream
    holds bytes of a character its ids have not settled, else 0 (what a server's batch asks
    after each step: oasr_tok._engine.served)."""
    cdef Py_ssize_t k, n = PyList_GET_SIZE(streams)
    cdef Stream s
    out = bytearray(n)
    for k in range(n):
        item = <object>PyList_GET_ITEM(streams, k)
        if type(item) is not Stream:
            raise StreamStateError(f"stream {k}: not a Stream ({type(item).__name__})")
        s = <Stream>item
        if s.table is not None and len(s.cursor.pending):
            out[k] = 1
    return bytes(out)


set_stream_type(Stream, _feed_for)
Mapping.register(Stream)  # a read-only Mapping view: isinstance(stream, Mapping) holds
