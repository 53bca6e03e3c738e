# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""The compiled streaming engine for context-free renderers.

Most decoders render each token on its own: a piece of text, or a few raw bytes that are
assembled into UTF-8 with their neighbours. A PieceTable holds that per-id rendering,
precomputed once, and streams it at constant cost per token:

* ``mode="text"``: every id renders a str, except byte pieces (``<0xNN>``), whose runs are
  assembled into UTF-8 by one of three rules: ``"replace"`` (one U+FFFD per maximal invalid
  subpart, as Python and Rust's from_utf8_lossy do), ``"per_byte"`` (one U+FFFD per invalid
  byte, as SentencePiece does), ``"whole_run"`` (a run with any invalid byte renders entirely
  as U+FFFD, one per byte, as the `tokenizers` ByteFallback decoder does).
* ``mode="bytes"``: every id renders raw bytes, and the whole stream is one lossy UTF-8 byte
  string (byte-level BPE: GPT-2, Qwen, Whisper): with ``"replace"``, or with ``"ignore"``
  (invalid bytes render nothing, as icefall's byte-level BPE recovers them).

A "first" table lets a piece render differently while no piece has ended the leading rule yet
(SentencePiece's dropped leading space, Metaspace's first token, WordPiece's first token); a
lead rule drops one leading space or all leading whitespace of the output.

Whether bytes are "incomplete" is decided from the bytes (a valid UTF-8 prefix of at most 3
bytes is held back), never from a rendered U+FFFD: a genuine U+FFFD or an invalid byte is
emitted at once. The held-back tail is rendered into state["text"] so that it always equals
the full decode of the ids so far.
"""
import codecs

from cpython.list cimport PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.string cimport memcpy
from cpython.mem cimport PyMem_Free, PyMem_Malloc

cimport cython

from oasr_tok._engine.growtext cimport TextData, text_append_reserved, text_reserve_nogil
from oasr_tok._engine.ids cimport ID_BLOCK, IdBuffer, id_block, read_ids, read_ids_in_place, release_ids
from oasr_tok._engine.ids import ReadAgain
from oasr_tok._engine.textbuf cimport oasr_check_owner, oasr_check_tail_read, oasr_commit_read, oasr_tag
from oasr_tok.errors import StreamStateError, stream_closed_error

cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object, object) except? NULL
    int PyUnicode_KIND(PyObject*) nogil
    Py_ssize_t raw_length "PyUnicode_GET_LENGTH"(PyObject*) nogil
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value) nogil
    Py_ssize_t PyBytes_GET_SIZE(object)
    char* PyBytes_AS_STRING(object)
    bytes PyBytes_FromStringAndSize(const char*, Py_ssize_t)
    str PyUnicode_DecodeUTF8Stateful(const char*, Py_ssize_t, const char*, Py_ssize_t*)
    str PyUnicode_DecodeUTF8(const char*, Py_ssize_t, const char*)
    PyObject** PySequence_Fast_ITEMS(object)


def _one_fffd_per_byte(exc):
    # SentencePiece replaces each invalid byte on its own; Python's "replace" would replace
    # a whole maximal invalid subpart with a single U+FFFD.
    return "\ufffd", exc.start + 1


codecs.register_error("oasr_tok.per_byte", _one_fffd_per_byte)

cdef object _utf8_decode = codecs.utf_8_decode
# The compiled Stream's type and step (oasr_tok._engine.stream, which cimports this module: it registers
# them when it is imported, with oasr_tok itself), so that decode_incremental(ids, stream) reaches
# it with one C call and this module imports nothing above it.
cdef object _stream_type = None
cdef stream_feed_fn _stream_feed = NULL


cdef void set_stream_type(object stream_type, stream_feed_fn feed) noexcept:
    global _stream_type, _stream_feed
    _stream_type = stream_type
    _stream_feed = feed
cdef PyObject* _EMPTY = <PyObject*>""

FLAG_SKIP = 1
FLAG_BYTE = 2
FLAG_KEEP_FIRST = 4
FLAG_BREAK = 8
FLAG_END_FIRST = 16

cdef enum:
    F_SKIP = 1
    F_BYTE = 2
    F_KEEP_FIRST = 4
    F_BREAK = 8
    F_END_FIRST = 16

cdef enum:
    MODE_TEXT = 0
    MODE_BYTES = 1

cdef enum:
    RULE_REPLACE = 0
    RULE_PER_BYTE = 1
    RULE_WHOLE_RUN = 2
    RULE_IGNORE = 3

cdef enum:
    LEAD_NONE = 0
    LEAD_ONE_SPACE = 1
    LEAD_WHITESPACE = 2

cdef dict _MODES = {"text": MODE_TEXT, "bytes": MODE_BYTES}
cdef dict _RULES = {"replace": RULE_REPLACE, "per_byte": RULE_PER_BYTE, "whole_run": RULE_WHOLE_RUN,
                    "ignore": RULE_IGNORE}
cdef dict _LEADS = {"none": LEAD_NONE, "one_space": LEAD_ONE_SPACE, "whitespace": LEAD_WHITESPACE}

cdef class PieceTable:
    """Per-id renderings plus the rules that join them; see the module docstring.

    pieces: list of str (mode "text"; ignored for byte ids) or bytes (mode "bytes"), one per id.
    first_pieces: optional list like `pieces`, used while the first rule is in force.
    flags: bytes, one per id: FLAG_SKIP (renders nothing, changes nothing), FLAG_BYTE (a byte
      piece, mode "text" only; its value is in `byte_values`), FLAG_KEEP_FIRST (does not end
      the first rule), FLAG_BREAK (with FLAG_SKIP: renders nothing, but ends the byte run as
      the end of the ids would, so bytes never join across it; mistral-common's tekken),
      FLAG_END_FIRST (with FLAG_SKIP: renders nothing, but ends the first rule, which skipped
      ids otherwise leave in force; llama.cpp's rule is about the first id, whatever it is).
    byte_values: bytes, one per id (the byte of a FLAG_BYTE id; anything for the others).
    prompt: optional (open_id, close_id): the ids from an open_id up to the next close_id render
      nothing (Whisper's <|startofprev|> block, closed by <|startoftranscript|>); streams keep
      whether a block is open in state["_prompt"].

    Example:
        >>> from oasr_tok.kinds.api import FLAG_BYTE, FLAG_SKIP, PieceTable
        >>> table = PieceTable(
        ...     ["the", " caf", "", "", "<blank>"],
        ...     flags=bytes([0, 0, FLAG_BYTE, FLAG_BYTE, FLAG_SKIP]),
        ...     byte_values=bytes([0, 0, 0xC3, 0xA9, 0]),  # ids 2 and 3: the two bytes of "é"
        ... )
        >>> table.render([0, 1, 4, 2, 3])
        'the café'
        >>> state = {}
        >>> [table.decode_incremental([i], state) for i in [0, 1, 2, 3]]  # "é" once it is whole
        ['the', ' caf', '', 'é']
        >>> table.token_pieces([0, 1, 2, 3])
        ['the', ' caf', '', 'é']
    """
    # The attributes are declared in _engine/piece_table.pxd.

    def __init__(self, pieces, *, first_pieces=None, bytes flags=None, bytes byte_values=None,
                 str mode="text", str byte_rule="replace", str lead="none", tuple prompt=None):
        # The table's own copies (a list or tuple given), checked below: the caller's may change.
        pieces = list(pieces)
        if first_pieces is not None:
            first_pieces = list(first_pieces)
        cdef Py_ssize_t n = len(pieces), i
        if mode not in _MODES or byte_rule not in _RULES or lead not in _LEADS:
            raise ValueError(f"bad PieceTable rules: mode={mode!r} byte_rule={byte_rule!r} lead={lead!r}")
        self.mode = _MODES[mode]
        self.rule = _RULES[byte_rule]
        self.lead_rule = _LEADS[lead]
        if self.rule == RULE_IGNORE and self.mode != MODE_BYTES:
            raise ValueError("PieceTable: byte_rule 'ignore' is for mode 'bytes'")
        if self.mode == MODE_BYTES:  # one lossy UTF-8 stream: "replace", or "ignore"
            self.errors = "ignore" if self.rule == RULE_IGNORE else "replace"
        else:
            self.errors = "oasr_tok.per_byte" if self.rule == RULE_PER_BYTE else "replace"
        if flags is None:
            flags = bytes(n)
        if byte_values is None:
            byte_values = bytes(n)
        if len(flags) != n or len(byte_values) != n or (first_pieces is not None and len(first_pieces) != n):
            raise ValueError("PieceTable: pieces, first_pieces, flags and byte_values must have one entry per id")
        want = bytes if self.mode == MODE_BYTES else str
        for i in range(n):
            if not (flags[i] & (F_SKIP | F_BYTE)):
                if type(pieces[i]) is not want or (first_pieces is not None and type(first_pieces[i]) is not want):
                    raise TypeError(f"PieceTable: piece {i} must be {want.__name__}")
            if self.mode == MODE_BYTES and flags[i] & F_BYTE:
                raise ValueError("PieceTable: byte pieces are only for mode 'text'")
            if flags[i] & (F_BREAK | F_END_FIRST) and not flags[i] & F_SKIP:
                raise ValueError("PieceTable: FLAG_BREAK and FLAG_END_FIRST are only for skipped ids (FLAG_SKIP)")
        self.vocab_size = n
        self.pieces = pieces
        self.first_pieces = first_pieces if first_pieces is not None else self.pieces
        self.has_first = first_pieces is not None
        self.flags = flags
        self.byte_values = byte_values
        self._flags = self.flags
        self._bytes = self.byte_values
        if self.mode == MODE_BYTES:
            self.texts = [_complete_text(p) for p in self.pieces]
            self.first_texts = [_complete_text(p) for p in self.first_pieces] if self.has_first else self.texts
        else:
            self.texts = self.first_texts = None
        self.fresh = (self.has_first, self.lead_rule != LEAD_NONE, b"", False, False)
        self.fresh_snapshot = self.fresh + (False,)
        self.plain_snapshot = (False, False, b"", False, False, False)
        self.prompt_open = self.prompt_close = -1
        if prompt is not None:
            opener, closer = prompt
            if not (0 <= opener < n and 0 <= closer < n and flags[opener] & F_SKIP and flags[closer] & F_SKIP):
                raise ValueError("PieceTable: the prompt rule's ids must be FLAG_SKIP ids of the table")
            self.prompt_open, self.prompt_close = opener, closer
        used = F_SKIP | F_BYTE
        self.tag = oasr_tag((mode, byte_rule, lead, flags, byte_values, prompt,
                             [None if self._flags[i] & used else p for i, p in enumerate(self.pieces)],
                             None if first_pieces is None else
                             [None if self._flags[i] & used else p for i, p in enumerate(self.first_pieces)]))
        PyMem_Free(self._plain)  # __init__ may run twice
        self._plain = <PyObject**>PyMem_Malloc(max(n, 1) * sizeof(PyObject*))
        if self._plain == NULL:
            raise MemoryError()
        plain = self.texts if self.mode == MODE_BYTES else self.pieces
        for i in range(n):
            # Borrowed: self.pieces / self.texts keep these alive as long as the table lives.
            self._plain[i] = NULL if (self._flags[i] or plain[i] is None) else <PyObject*>plain[i]
        # Mode bytes: each piece's bytes, for the step that runs without the GIL (step_one);
        # borrowed from self.pieces, as above.
        PyMem_Free(self._piece_data)
        PyMem_Free(self._piece_size)
        self._piece_data = NULL
        self._piece_size = NULL
        if self.mode == MODE_BYTES:
            self._piece_data = <const char**>PyMem_Malloc(max(n, 1) * sizeof(char*))
            self._piece_size = <Py_ssize_t*>PyMem_Malloc(max(n, 1) * sizeof(Py_ssize_t))
            if self._piece_data == NULL or self._piece_size == NULL:
                raise MemoryError()
            for i in range(n):
                if self._flags[i] & F_SKIP or type(self.pieces[i]) is not bytes:
                    self._piece_data[i] = NULL
                    self._piece_size[i] = 0
                else:
                    self._piece_data[i] = PyBytes_AS_STRING(self.pieces[i])
                    self._piece_size[i] = PyBytes_GET_SIZE(self.pieces[i])

    def __dealloc__(self):
        PyMem_Free(self._plain)
        PyMem_Free(self._piece_data)
        PyMem_Free(self._piece_size)

    def joined_form(self):
        """(pieces, errors) when what this table renders for ids is
        b"".join(pieces[i] for i in ids).decode("utf-8", errors) -- bytes mode, no leading-space
        rule, no first pieces, no prompt rule, no flag but FLAG_SKIP (a skipped id's piece is
        b"") -- so that a decode can be that join (_join.join_pieces, which lets go of the GIL on
        long ones); else None. The pieces come in a tuple."""
        cdef Py_ssize_t i
        if self.mode != MODE_BYTES or self.lead_rule != LEAD_NONE or self.has_first or self.prompt_open >= 0:
            return None
        for i in range(self.vocab_size):
            if self._flags[i] & ~F_SKIP:
                return None
        return tuple([b"" if self._flags[i] else self.pieces[i] for i in range(self.vocab_size)]), self.errors

    def piece_bytes(self):
        """Per id, the bytes it adds to a text in the middle of it (no first or lead rule
        pending): a byte piece's one byte, a mode-"bytes" piece's bytes (a piece of a character
        split across tokens: its partial bytes), a text piece in UTF-8, b"" for a skipped id.
        OpenAI's logprobs `bytes` (oasr_tok.integrations.vllm.token_strings)."""
        cdef Py_ssize_t i
        out = []
        for i in range(self.vocab_size):
            if self._flags[i] & F_SKIP:
                out.append(b"")
            elif self.mode == MODE_BYTES:
                out.append(self.pieces[i])
            elif self._flags[i] & F_BYTE:
                out.append(bytes((self._bytes[i],)))
            else:
                out.append((<str>self.pieces[i]).encode("utf-8", "surrogatepass"))
        return tuple(out)

    # -- the per-token step ---------------------------------------------------------------

    cdef object _close_run(self, Vars* v, bytes pending, object out):
        """A non-byte piece ends the byte run: render what the run held."""
        if self.rule == RULE_WHOLE_RUN:
            v.run_invalid = False
            if PyBytes_GET_SIZE(pending):
                out = _emit(self, v, out, _whole_run_text(pending))
        elif PyBytes_GET_SIZE(pending):
            out = _emit(self, v, out, _utf8_decode(pending, self.errors, True)[0])
        return out

    cdef object _step(self, Py_ssize_t tid, Vars* v, list pending_box, object out):
        """Render one id. pending_box[0] holds the pending bytes."""
        cdef unsigned char f = self._flags[tid]
        cdef bytes pending, cand
        cdef str text
        if f & F_SKIP:
            if f & F_BREAK:
                out = self._break_run(v, pending_box, out)
            if f & F_END_FIRST:
                v.first = False
            return out
        pending = <bytes>pending_box[0]
        if self.mode == MODE_BYTES:
            text = (self.first_texts if v.first else self.texts)[tid]
            if text is not None and not PyBytes_GET_SIZE(pending):
                out = _emit(self, v, out, text)
            else:
                out = self._step_bytes(
                    v, pending, <bytes>(self.first_pieces if v.first else self.pieces)[tid], pending_box, out
                )
        elif f & F_BYTE:
            if self.rule == RULE_WHOLE_RUN:
                if v.run_invalid:
                    out = _emit(self, v, out, "\ufffd")
                elif _extends_validly(<const unsigned char*>PyBytes_AS_STRING(pending),
                                      PyBytes_GET_SIZE(pending), self._bytes[tid]):
                    pending_box[0] = _with_byte(pending, self._bytes[tid])
                else:
                    out = _emit(self, v, out, "\ufffd" * (PyBytes_GET_SIZE(pending) + 1))
                    pending_box[0] = b""
                    v.run_invalid = True
            else:
                cand = pending + self.byte_values[tid:tid + 1]
                decoded = _utf8_decode(cand, self.errors, False)
                out = _emit(self, v, out, decoded[0])
                pending_box[0] = cand[<Py_ssize_t>decoded[1]:]
                if _dead_end(<bytes>pending_box[0]):
                    out = _emit(self, v, out, _utf8_decode(<bytes>pending_box[0], self.errors, True)[0])
                    pending_box[0] = b""
        else:
            if PyBytes_GET_SIZE(pending) or v.run_invalid:
                out = self._close_run(v, pending, out)
                pending_box[0] = b""
            out = _emit(self, v, out, <str>(self.first_pieces[tid] if v.first else self.pieces[tid]))
        if v.first and not (f & F_KEEP_FIRST):
            v.first = False
        return out

    cdef object _break_run(self, Vars* v, list pending_box, object out):
        """A FLAG_BREAK id: what the byte run held is rendered now, as at the end of the ids."""
        cdef bytes pending = <bytes>pending_box[0]
        if self.mode == MODE_BYTES:
            if PyBytes_GET_SIZE(pending):
                out = _emit(self, v, out, _utf8_decode(pending, self.errors, True)[0])
        elif PyBytes_GET_SIZE(pending) or v.run_invalid:
            out = self._close_run(v, pending, out)
        pending_box[0] = b""
        return out

    cdef object _step_bytes(self, Vars* v, bytes pending, bytes piece, list pending_box, object out):
        """The byte-level step without Python-level bytes or codec calls: the pending bytes and
        the piece are joined in a C buffer (on the stack unless the piece is long), and what a
        short join decodes to comes from a small cache (a Chinese character split over two byte
        tokens decodes to the same str every time it occurs)."""
        cdef unsigned char stack[JOIN_BYTES]
        cdef unsigned char* joined = stack
        cdef Py_ssize_t np = PyBytes_GET_SIZE(pending), total = np + PyBytes_GET_SIZE(piece)
        cdef Py_ssize_t consumed = 0, rest
        if total > JOIN_BYTES:
            joined = <unsigned char*>PyMem_Malloc(total)
            if joined == NULL:
                raise MemoryError()
        try:
            memcpy(joined, PyBytes_AS_STRING(pending), np)
            memcpy(joined + np, PyBytes_AS_STRING(piece), total - np)
            out = _emit(self, v, out, _decode_prefix(joined, total, &consumed, self.rule == RULE_IGNORE))
            rest = total - consumed
            if rest == 0:
                pending_box[0] = b""
            elif _dead_end_at(joined + consumed, rest):
                # both bytes are invalid: "replace" gives one U+FFFD each, "ignore" nothing
                if self.rule != RULE_IGNORE:
                    out = _emit(self, v, out, PyUnicode_DecodeUTF8(<char*>joined + consumed, rest, "replace"))
                pending_box[0] = b""
            else:
                pending_box[0] = PyBytes_FromStringAndSize(<char*>joined + consumed, rest)
        finally:
            if joined != stack:
                PyMem_Free(joined)
        return out

    cdef str _tail(self, Vars v, bytes pending):
        """What the pending bytes render as if the stream ended now (v is a copy)."""
        cdef str text
        if not PyBytes_GET_SIZE(pending):
            return ""
        if self.mode == MODE_BYTES:
            # Held bytes are always a proper prefix of one valid character (_valid_state, and
            # _step_bytes keeps nothing else), which "replace" renders as one U+FFFD, never
            # whitespace for a lead rule to strip, and "ignore" as nothing.
            return "" if self.rule == RULE_IGNORE else "\ufffd"
        if self.rule == RULE_WHOLE_RUN:
            text = _whole_run_text(pending)
        elif self.rule == RULE_PER_BYTE:
            # Pending bytes are an unfinished character (a valid prefix, see _dead_end): cut
            # off now, each is one U+FFFD. Said directly: the decoder would call the Python
            # error handler once per byte, on every token of a multi-byte character.
            text = "\ufffd" * PyBytes_GET_SIZE(pending)
        else:
            text = _utf8_decode(pending, self.errors, True)[0]
        out = _emit(self, &v, None, text)
        return "" if out is None else out

    # -- public entry points --------------------------------------------------------------

    def decode_incremental(self, new_ids, state, bint final=False):
        """Feed `new_ids`; return the newly settled text. See Tokenizer.decode_incremental."""
        cdef IdBuffer ids
        read_ids(&ids, new_ids, self.vocab_size)  # first: a bad id must leave the state as it was
        try:
            return self._feed(&ids, state, final, None)
        finally:
            release_ids(&ids)

    def step_snapshot(self, new_ids, tuple snapshot):
        """Feed `new_ids` one at a time to a stream whose decoder state is `snapshot` (see
        load_snapshot; fresh_snapshot for a new stream): (what each id settled, the snapshot
        after them, the text held back after them). What decode_hypothesis does in C, per id
        as one decode_incremental call per id would settle it."""
        cdef IdBuffer ids
        cdef Vars v
        cdef list pending_box = [b""]
        cdef list per_id = []
        cdef bint in_prompt = False
        read_ids(&ids, new_ids, self.vocab_size)
        try:
            self.load_snapshot(snapshot, &v, pending_box, &in_prompt)
            if v.closed and ids.n:
                raise stream_closed_error()
            self._run(ids.ids, ids.n, &v, pending_box, &in_prompt, per_id)
        finally:
            release_ids(&ids)
        return (per_id, self.snapshot(&v, <bytes>pending_box[0], in_prompt, snapshot),
                self._tail(v, <bytes>pending_box[0]) if not v.closed else "")

    def token_pieces(self, ids):
        """One string per id; they concatenate to the decode. A piece is what its token
        settled; text still held back when the ids end goes on the last token that rendered."""
        return self._pieces_of(ids)

    cdef list _pieces_of(self, object ids):
        """token_pieces: the ids read where they are, or again over a copy (see _engine/ids.pxd)."""
        cdef IdBuffer checked
        read_ids_in_place(&checked, ids, self.vocab_size)
        try:
            return self._pieces(&checked)
        except ReadAgain:  # the walk has no effect: walked again over a copy
            pass
        finally:
            release_ids(&checked)
        read_ids(&checked, ids, self.vocab_size)
        try:
            return self._pieces(&checked)
        finally:
            release_ids(&checked)

    cdef int _prepare(self, object state, Prepared* p, Py_ssize_t n) except -1:
        """Read and check everything of `state` a feed of n ids reads, into *p (borrowed
        references: `state` keeps them alive until it is changed); changes nothing. A state
        another tokenizer made, a forged one, or a closed one given ids raises here."""
        oasr_check_owner(state, self.tag)
        st = (<dict>state).get("_s")
        if st is None:
            if "_tok" in state:
                raise StreamStateError("this stream state has lost its decoder state; start from {}")
            st = self.fresh
        elif not self._valid_state(st):
            raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
        p.in_prompt = False
        p.prompt_flag = NULL
        if self.prompt_open >= 0:
            prompt_flag = (<dict>state).get("_prompt")
            if prompt_flag is not None:
                if type(prompt_flag) is not bool:
                    raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
                p.in_prompt = prompt_flag
                p.prompt_flag = <PyObject*>prompt_flag
        held = <tuple>st  # checked above: a 5-tuple
        p.held = <PyObject*>held
        p.v.first = held[0]
        p.v.lead = held[1]
        p.pending = <PyObject*>held[2]
        p.v.run_invalid = held[3]
        p.v.closed = held[4]
        # What the state's text must end with: its held tail, rendered from its own pending bytes.
        oasr_check_tail_read(state, self._tail(p.v, <bytes>p.pending) if not p.v.closed else "", &p.text_read)
        if p.v.closed and n:
            raise stream_closed_error()
        return 0

    cdef str _feed(self, IdBuffer* ids, object state, bint final, list per_id):
        """Feed the ids to the stream; return the text they settled. With per_id (final
        is then False), the text each id settled is appended to it, as one call per id
        would have returned it."""
        cdef Prepared p
        self._prepare(state, &p, ids.n)
        return self._advance(ids, state, final, per_id, &p)

    cdef str _advance(self, IdBuffer* ids, object state, bint final, list per_id, Prepared* p):
        """The feed itself, from what _prepare read of `state` (unchanged since)."""
        cdef Py_ssize_t i, n = ids.n
        cdef Vars v = p.v
        cdef object out = None
        cdef list pending_box = None  # made only when a step needs the general path
        cdef bytes pending = <bytes>p.pending
        cdef str settled, tail
        cdef Py_ssize_t tid
        cdef PyObject* raw
        cdef bint fast
        cdef bint in_prompt = p.in_prompt
        cdef object prompt_flag = <object>p.prompt_flag if p.prompt_flag != NULL else None
        cdef tuple held = <tuple>p.held
        if v.closed:
            return ""
        # The loop is _run's (the same rules, checked against each other by
        # tests/engine/test_stream_engine.py's step_snapshot test), kept here with the pending bytes in a
        # local: _run's list for them, made on every call, is a measurable part of this per-token
        # path (benchmarks/RESULTS.md § Measurements behind the code).
        fast = _plain_state(&v, pending)
        for i in range(n):
            tid = ids.ids[i]
            if tid == self.prompt_open:  # never, without a prompt rule (-1)
                in_prompt = True
            elif tid == self.prompt_close:
                in_prompt = False
            if not in_prompt:
                # The common case, as in _pieces: a plain piece once no rule is pending.
                raw = self._plain[tid]
                if fast and raw != NULL:
                    out = _append(out, <str>raw)
                else:
                    if pending_box is None:
                        pending_box = [pending]
                    out = self._step(tid, &v, pending_box, out)
                    fast = _plain_state(&v, <bytes>pending_box[0])
            if per_id is not None:
                per_id.append(_joined(out))
                out = None
        if pending_box is not None:
            pending = <bytes>pending_box[0]
        if final:
            if pending_box is None:
                pending_box = [pending]
            out = self._finish(&v, pending_box, out)
            pending = b""
            tail = ""
        else:
            tail = self._tail(v, pending)
        if per_id is None:
            settled = _joined(out)
        else:  # this call's ids only: per_id may hold an earlier feed's
            settled = "".join(per_id[PyList_GET_SIZE(per_id) - n:] if PyList_GET_SIZE(per_id) > n else per_id)
        oasr_commit_read(state, &p.text_read, settled, tail, <PyObject*>self.tag)
        # Most steps change no rule and hold no bytes: the state's tuple is still right.
        if (held is self.fresh or v.first != <bint>held[0] or v.lead != <bint>held[1] or pending is not held[2]
                or v.run_invalid != <bint>held[3] or v.closed != <bint>held[4]):
            (<dict>state)["_s"] = (v.first, v.lead, pending, v.run_invalid, v.closed)
        if (in_prompt if prompt_flag is None else in_prompt != <bint>prompt_flag):  # written when it changes
            (<dict>state)["_prompt"] = in_prompt
        return settled

    cdef object _run(self, const Py_ssize_t* ids, Py_ssize_t n, Vars* v, list pending_box, bint* in_prompt,
                     list per_id):
        """Step n ids (each in 0 ... vocab_size - 1: the caller checked them) from the decoder
        state (v, pending_box[0], in_prompt[0]), which they change; return what they settled,
        as _append builds it, or with per_id, append the text each id settled to it."""
        cdef Py_ssize_t i, tid
        cdef object out = None
        cdef PyObject* raw
        cdef bint fast = _plain_state(v, <bytes>pending_box[0])
        for i in range(n):
            tid = ids[i]
            if tid == self.prompt_open:  # never, without a prompt rule (-1)
                in_prompt[0] = True
            elif tid == self.prompt_close:
                in_prompt[0] = False
            if not in_prompt[0]:
                # The common case, as in _pieces: a plain piece once no rule is pending.
                raw = self._plain[tid]
                if fast and raw != NULL:
                    out = _append(out, <str>raw)
                else:
                    out = self._step(tid, v, pending_box, out)
                    fast = _plain_state(v, <bytes>pending_box[0])
            if per_id is not None:
                per_id.append(_joined(out))
                out = None
        return out

    cdef object _finish(self, Vars* v, list pending_box, object out):
        """The end of the stream (final=True): what the pending bytes render as, after `out`;
        the state is closed."""
        cdef bytes pending = <bytes>pending_box[0]
        if self.mode == MODE_TEXT:
            out = self._close_run(v, pending, out)
        elif PyBytes_GET_SIZE(pending):
            out = _emit(self, v, out, _utf8_decode(pending, self.errors, True)[0])
        pending_box[0] = b""
        v.closed = True
        return out

    def run_ids(self):
        """The ids whose run is rendered as a whole (byte pieces under the "whole_run" rule: a
        ByteFallback run is valid or not as a whole), as a frozenset; empty under other rules.
        A prompt's tail that starts inside such a run is read back to the run's start."""
        cdef Py_ssize_t i
        if self.mode != MODE_TEXT or self.rule != RULE_WHOLE_RUN:
            return frozenset()
        return frozenset([i for i in range(self.vocab_size) if self._flags[i] & F_BYTE])

    # -- cursors: a decoder state a Stream holds in C (oasr_tok/_engine/stream.pyx) ------------------

    cdef TableCursor new_cursor(self):
        """The decoder state of a new stream."""
        cdef TableCursor c = TableCursor.__new__(TableCursor)
        c.v.first = self.has_first
        c.v.lead = self.lead_rule != LEAD_NONE
        c.v.run_invalid = False
        c.v.closed = False
        c.pending = b""
        c.in_prompt = False
        c.table = self
        return c

    cdef str advance_cursor(self, TableCursor c, const Py_ssize_t* ids, Py_ssize_t n, bint final):
        """Step n ids (each in range: the caller checked them) from the cursor's state, which
        they change; return what they settled. The rules are _run's: plain pieces in a loop of
        their own while no rule is pending, every other id through _step."""
        cdef Py_ssize_t i = 0, tid
        cdef object out = None
        cdef PyObject* raw
        cdef list box
        if c.v.closed:
            return ""
        if not c.in_prompt and _plain_state(&c.v, c.pending):
            while i < n:
                tid = ids[i]
                raw = self._plain[tid]
                if raw == NULL or tid == self.prompt_open or tid == self.prompt_close:
                    break
                out = _append(out, <str>raw)
                i += 1
        if i < n or final:
            box = [c.pending]
            if i < n:
                out = _merge(out, self._run(ids + i, n - i, &c.v, box, &c.in_prompt, None))
            if final:
                out = self._finish(&c.v, box, out)
            c.pending = <bytes>box[0]
        return _joined(out)

    cdef str cursor_tail(self, TableCursor c):
        """What the cursor holds back, rendered as if the stream ended now."""
        if c.v.closed:
            return ""
        return self._tail(c.v, c.pending)

    cdef int step_one(self, Vars* v, unsigned char* held, Py_ssize_t* n_held, bint* in_prompt, Py_ssize_t tid,
                      TextData* text) noexcept nogil:
        """One id's usual step with no Python object made or changed, so without the GIL: a
        prompt block's ids, a plain skipped id, a plain piece, and in mode "bytes" (rule
        "replace") any piece, its bytes joined to the held ones (held[:n_held], an unfinished
        character: at most 3) and decoded as CPython's UTF-8 decoder with errors="replace" does
        (one U+FFFD per maximal invalid subpart; a valid unfinished character at the end held).
        The characters go to `text`. Returns STEP_DONE; STEP_NEEDS_GIL when the id's step is
        another (a rule pending, a byte piece of a text table, a long piece), with nothing
        changed; STEP_NO_MEMORY (nothing changed) when `text` could not grow. The rules are
        _step's, and tests/engine/test_streams.py holds both to the dict path on every kind."""
        cdef unsigned char f
        cdef PyObject* raw
        cdef unsigned char joined[JOIN_BYTES]
        cdef unsigned int out[JOIN_BYTES]  # code points (Py_UCS4 is a character type to Cython)
        cdef Py_ssize_t m, size, i, j, k, count = 0, rest
        cdef unsigned char c, x, lo, hi
        cdef unsigned int cp, widest = 0
        cdef int kind
        if v.closed:
            return STEP_NEEDS_GIL
        if tid == self.prompt_open:  # (never, without a prompt rule: -1)
            in_prompt[0] = True
            return STEP_DONE
        if tid == self.prompt_close:
            in_prompt[0] = False
            return STEP_DONE
        if in_prompt[0]:
            return STEP_DONE  # inside a prompt block an id renders nothing and changes nothing
        f = self._flags[tid]
        if f & F_SKIP:
            return STEP_DONE if f == F_SKIP else STEP_NEEDS_GIL
        if v.first or v.lead or v.run_invalid:
            return STEP_NEEDS_GIL
        raw = self._plain[tid]
        if n_held[0] == 0 and raw != NULL:
            if text_reserve_nogil(text, PyUnicode_KIND(raw), raw_length(raw)) < 0:
                return STEP_NO_MEMORY
            text_append_reserved(text, raw)
            return STEP_DONE
        if self.mode != MODE_BYTES or self.rule != RULE_REPLACE or self._piece_data[tid] == NULL:
            return STEP_NEEDS_GIL
        m = n_held[0] + self._piece_size[tid]
        if m > JOIN_BYTES:
            return STEP_NEEDS_GIL
        if n_held[0]:
            memcpy(joined, held, n_held[0])
        if self._piece_size[tid]:
            memcpy(joined + n_held[0], self._piece_data[tid], self._piece_size[tid])
        i = 0
        rest = 0
        while i < m:
            c = joined[i]
            if c < 0x80:
                out[count] = c
                count += 1
                i += 1
                continue
            lo, hi = 0x80, 0xBF
            if 0xC2 <= c <= 0xDF:
                size = 2
            elif 0xE0 <= c <= 0xEF:
                size = 3
                if c == 0xE0:
                    lo = 0xA0
                elif c == 0xED:
                    hi = 0x9F
            elif 0xF0 <= c <= 0xF4:
                size = 4
                if c == 0xF0:
                    lo = 0x90
                elif c == 0xF4:
                    hi = 0x8F
            else:
                out[count] = 0xFFFD  # no lead byte: invalid on its own
                count += 1
                i += 1
                continue
            j = 1
            while j < size:
                if i + j >= m:
                    break
                x = joined[i + j]
                if j == 1:
                    if x < lo or x > hi:
                        break
                elif x < 0x80 or x > 0xBF:
                    break
                j += 1
            if j == size:
                if size == 2:
                    cp = c & 0x1F
                elif size == 3:
                    cp = c & 0x0F
                else:
                    cp = c & 0x07
                for k in range(1, size):
                    cp = (cp << 6) | (joined[i + k] & 0x3F)
                out[count] = cp
                count += 1
                i += size
            elif i + j >= m:
                rest = m - i  # a valid unfinished character at the end: held
                break
            else:
                out[count] = 0xFFFD  # the maximal invalid subpart joined[i:i + j]
                count += 1
                i += j
        for k in range(count):
            if out[k] > widest:
                widest = out[k]
        if widest < 0x100:
            kind = 1
        elif widest < 0x10000:
            kind = 2
        else:
            kind = 4
        if count and text_reserve_nogil(text, kind, count) < 0:
            return STEP_NO_MEMORY
        for k in range(count):
            PyUnicode_WRITE(text.kind, text.data, text.n + k, <Py_UCS4>out[k])
        text.n += count
        if rest:
            memcpy(held, joined + m - rest, rest)
        n_held[0] = rest
        return STEP_DONE

    cdef int load_cursor(self, TableCursor c, tuple snapshot) except -1:
        """Set the cursor to a snapshot (its pickled form), checked: a forged one raises."""
        cdef list box = [b""]
        self.load_snapshot(snapshot, &c.v, box, &c.in_prompt)
        c.pending = <bytes>box[0]
        return 0

    # -- snapshots: a decoder state without its text, for decode_hypothesis -------------------
    #
    # (first, lead, pending, run_invalid, closed, in_prompt): what state["_s"] and
    # state["_prompt"] hold. decode_hypothesis keeps its streams' states so (plain data: a deep
    # copy or a pickle of its state forks it) and steps them with _run: no state dict to read,
    # check and write on every call.

    cdef int load_snapshot(self, object snapshot, Vars* v, list pending_box, bint* in_prompt) except -1:
        """Read a snapshot into (v, pending_box[0], in_prompt[0]); a forged one raises
        StreamStateError. The table's own fresh and plain snapshots need no check."""
        cdef tuple t
        if snapshot is not self.plain_snapshot and snapshot is not self.fresh_snapshot and (
                not self._valid_state(snapshot, 6) or (snapshot[5] and self.prompt_open < 0)):
            raise StreamStateError("this stream state was not made by this tokenizer kind; start from {}")
        t = <tuple>snapshot
        v.first = t[0]
        v.lead = t[1]
        pending_box[0] = t[2]
        v.run_invalid = t[3]
        v.closed = t[4]
        in_prompt[0] = t[5]
        return 0

    cdef tuple snapshot(self, Vars* v, bytes pending, bint in_prompt, tuple before):
        """The snapshot of (v, pending, in_prompt): `before` itself when it says the same (most
        steps change no rule and hold no bytes), the table's plain snapshot when that does."""
        if (before is not None and v.first == <bint>before[0] and v.lead == <bint>before[1]
                and pending is before[2] and v.run_invalid == <bint>before[3] and v.closed == <bint>before[4]
                and in_prompt == <bint>before[5]):
            return before
        if _plain_state(v, pending) and not v.closed and not in_prompt:
            return self.plain_snapshot
        return (v.first, v.lead, pending, v.run_invalid, v.closed, in_prompt)

    cdef bint plain_through(self, Vars* v, bytes pending, bint in_prompt, const Py_ssize_t* ids,
                            Py_ssize_t n) noexcept:
        """Whether stepping these n ids (each in range: the caller checked) from this state
        changes nothing but the text: no rule pending, no bytes held, no prompt block open,
        and each id a plain piece that opens or closes none."""
        cdef Py_ssize_t i, tid
        if not _plain_state(v, pending) or v.closed or in_prompt:
            return False
        for i in range(n):
            tid = ids[i]
            if self._plain[tid] == NULL or tid == self.prompt_open or tid == self.prompt_close:
                return False
        return True

    cdef bint _valid_state(self, object st, Py_ssize_t size=5):
        """Whether `st` is a decoder state this table could have made: four bools and the
        pending bytes, which are an unfinished UTF-8 character (at most 3 bytes; a whole_run
        table holds a valid run of any length), and none while a run is invalid or closed.
        A snapshot (size 6) has whether a prompt block is open last, a bool."""
        cdef bytes pending
        cdef tuple t
        cdef Py_ssize_t n
        if type(st) is not tuple or len(<tuple>st) != size:
            return False
        t = <tuple>st
        if (type(t[0]) is not bool or type(t[1]) is not bool or type(t[3]) is not bool
                or type(t[4]) is not bool or type(t[2]) is not bytes or (size == 6 and type(t[5]) is not bool)):
            return False
        pending = <bytes>t[2]
        n = PyBytes_GET_SIZE(pending)
        if n == 0:
            return True
        if t[3] or t[4] or _dead_end(pending):
            return False
        if self.mode == MODE_TEXT and self.rule == RULE_WHOLE_RUN:
            try:
                _utf8_decode(pending, "strict", False)
            except UnicodeDecodeError:
                return False
            return True
        if n > MAX_HELD_BYTES:
            return False
        return _unfinished_character(<const unsigned char*>PyBytes_AS_STRING(pending), n)

    cdef list _pieces(self, IdBuffer* ids, unsigned char* held=NULL):
        """One str per id (token_pieces); with `held` (n bytes, zeroed), held[i] = 1 where bytes
        of a character not yet complete wait after id i (it carries bytes of a later piece)."""
        cdef Py_ssize_t i, tid, n = ids.n, last_visible = -1
        cdef list result = PyList_New(n)
        cdef Vars v
        cdef list pending_box = [b""]
        cdef object out, piece
        cdef unsigned char f
        cdef bint bytes_mode = self.mode == MODE_BYTES
        cdef PyObject* raw
        cdef const unsigned char* flags = self._flags
        v.first = self.has_first
        v.lead = self.lead_rule != LEAD_NONE
        v.run_invalid = False
        v.closed = False
        cdef PyObject** fast_items = self._plain
        cdef bint fast = not (v.first or v.lead)
        cdef bint in_prompt = False
        cdef Py_ssize_t prompt_open = self.prompt_open, prompt_close = self.prompt_close
        cdef Py_ssize_t scratch[ID_BLOCK]
        cdef const Py_ssize_t* block
        cdef Py_ssize_t start, j, k, count
        cdef PyObject** out_items = PySequence_Fast_ITEMS(result)  # ours alone: never resized
        for start in range(0, n, ID_BLOCK):
            count = min(<Py_ssize_t>ID_BLOCK, n - start)
            block = id_block(ids, start, count, scratch)
            j = 0
            while j < count:
                if fast and not in_prompt:
                    # The common case, in a loop of its own: plain pieces, once the leading
                    # rules are done, while no bytes wait and no prompt block is open.
                    k = j
                    while k < count:
                        tid = block[k]
                        raw = fast_items[tid]
                        if raw == NULL or tid == prompt_open or tid == prompt_close:
                            break
                        Py_INCREF(<object>raw)
                        out_items[start + k] = raw
                        k += 1
                    if k > j:
                        last_visible = start + k - 1
                        j = k
                        if j == count:
                            break
                i = start + j
                tid = block[j]
                j += 1
                if tid == prompt_open:  # never, without a prompt rule (-1)
                    in_prompt = True
                elif tid == prompt_close:
                    in_prompt = False
                if in_prompt:
                    tid = prompt_open  # a FLAG_SKIP id: renders nothing, changes nothing
                # A plain piece outside the loop above (a prompt id with a piece of its own): as there.
                raw = fast_items[tid]
                if fast and raw != NULL:
                    Py_INCREF(<object>raw)
                    PyList_SET_ITEM(result, i, <object>raw)
                    last_visible = i
                    continue
                f = flags[tid]
                if f == F_SKIP:  # a special id renders nothing and changes nothing
                    Py_INCREF(<object>_EMPTY)
                    PyList_SET_ITEM(result, i, <object>_EMPTY)
                    if held != NULL and PyBytes_GET_SIZE(<bytes>pending_box[0]):
                        held[i] = 1
                    continue
                if f & F_BREAK:  # (with F_SKIP) the held bytes go on the token that printed them
                    out = self._break_run(&v, pending_box, None)
                    if out is not None and last_visible >= 0:
                        piece = "".join(out) if type(out) is list else out
                        result[last_visible] = result[last_visible] + piece
                    Py_INCREF(<object>_EMPTY)
                    PyList_SET_ITEM(result, i, <object>_EMPTY)
                    fast = _plain_state(&v, <bytes>pending_box[0])
                    continue
                out = self._step(tid, &v, pending_box, None)
                if out is None:
                    piece = ""
                elif type(out) is list:
                    piece = "".join(<list>out)
                else:
                    piece = out
                Py_INCREF(piece)
                PyList_SET_ITEM(result, i, piece)
                if not (f & F_SKIP):
                    last_visible = i
                fast = _plain_state(&v, <bytes>pending_box[0])
                if held != NULL and PyBytes_GET_SIZE(<bytes>pending_box[0]):
                    held[i] = 1
        if PyBytes_GET_SIZE(<bytes>pending_box[0]) and last_visible >= 0:
            if bytes_mode:
                out = _emit(self, &v, None, _utf8_decode(<bytes>pending_box[0], self.errors, True)[0])
            else:
                out = self._close_run(&v, <bytes>pending_box[0], None)
            if out is not None:
                result[last_visible] = result[last_visible] + ("".join(out) if type(out) is list else out)
        return result

    def pieces_and_carriers(self, ids):
        """(token_pieces(ids), carriers): carriers is bytes, 1 for each id after which bytes of
        an unfinished character wait: its bytes belong to the first character of a later piece
        (word timings give such an id to that character's word, as openai-whisper does)."""
        cdef IdBuffer checked
        cdef bytearray held
        read_ids(&checked, ids, self.vocab_size)
        try:
            held = bytearray(checked.n)
            pieces = self._pieces(&checked, <unsigned char*>held if checked.n else NULL)
        finally:
            release_ids(&checked)
        return pieces, bytes(held)

    def render(self, ids):
        """The whole rendering of `ids` (what the token pieces concatenate to)."""
        return "".join(self.token_pieces(ids))


cdef inline bint _plain_state(Vars* v, bytes pending) noexcept:
    """Whether no rule is pending and no bytes are held: a plain id (its str in _plain) then
    renders as that str and changes nothing else."""
    return not (v.first or v.lead or v.run_invalid or PyBytes_GET_SIZE(pending))


cdef inline object _emit(PieceTable self, Vars* v, object out, str text):
    """Append `text` (after the lead rule) to `out` (None, a str, or a list of str)."""
    if v.lead and PyUnicode_GET_LENGTH(text):
        if self.lead_rule == LEAD_ONE_SPACE:
            if text[0] == " ":
                text = text[1:]
            v.lead = False
        else:
            text = text.lstrip()
            if PyUnicode_GET_LENGTH(text):
                v.lead = False
    return _append(out, text)


cdef inline object _append(object out, str text):
    """`out` (None, a str, or a list of str) with `text` after it."""
    if not PyUnicode_GET_LENGTH(text):
        return out
    if out is None:
        return text
    if type(out) is list:
        (<list>out).append(text)
        return out
    return [out, text]


cdef inline object _merge(object out, object more):
    """`out` with `more` (each None, a str, or a list of str) after it."""
    if more is None:
        return out
    if type(more) is list:
        for text in <list>more:
            out = _append(out, <str>text)
        return out
    return _append(out, <str>more)


@cython.auto_pickle(False)
cdef class TableCursor:
    """A stream's decoder state kept in C (what a state dict keeps in "_s" and "_prompt"):
    made by PieceTable.new_cursor, stepped by its advance_cursor."""

    cdef tuple snapshot(self):
        """The state as a snapshot (PieceTable.load_snapshot's form): plain data, for a pickle."""
        return (self.v.first, self.v.lead, self.pending, self.v.run_invalid, self.v.closed, self.in_prompt)

    cdef TableCursor copy_cursor(self):
        cdef TableCursor other = TableCursor.__new__(TableCursor)
        other.v = self.v
        other.pending = self.pending
        other.in_prompt = self.in_prompt
        other.table = self.table
        return other


@cython.auto_pickle(False)
cdef class TableMethods:
    """The streaming methods of a kind whose streaming and token pieces are one engine's.

    A kind class lists this first among its bases and sets `self._table`: a PieceTable, reached
    with a C call so the per-token path has no Python frame of ours, or another engine with the
    same two methods (a CTCStream, whose neighbour rules wrap a PieceTable), reached by them.
    These are real methods: a subclass that overrides one is honoured.

    Example:
        >>> from oasr_tok.kinds.api import PieceTable, TableMethods, Tokenizer
        >>> class Letters(TableMethods, Tokenizer):
        ...     vocab_size = 3
        ...     special_ids = frozenset()
        ...     def __init__(self, spec=None):
        ...         self.spec = spec
        ...         self._table = PieceTable(["a", "b", " "])
        ...     def decode(self, ids):  # the rules stated plainly: the oracle of the table
        ...         return "".join("ab "[i] for i in self.check_ids(ids))
        >>> tok, state = Letters(), {}
        >>> tok.decode_incremental([0, 2], state), tok.decode_incremental([1], state)
        ('a ', 'b')
        >>> tok.token_pieces([1, 2, 0])
        ['b', ' ', 'a']
    """
    # _table and _engine: declared in _engine/piece_table.pxd (decode_hypothesis reads _table there).

    def decode_incremental(self, new_ids, state, final=False):
        """Feed `new_ids` to the stream whose state is `state`; return the newly settled text.
        See Tokenizer.decode_incremental."""
        cdef object engine
        cdef PieceTable table
        cdef IdBuffer ids
        if type(state) is not dict and type(state) is _stream_type:  # a Stream (oasr_tok._engine.stream)
            return _stream_feed(self, state, new_ids, final)
        engine = self._engine()
        if not isinstance(engine, PieceTable):
            return engine.decode_incremental(new_ids, state, final)
        table = <PieceTable>engine
        read_ids(&ids, new_ids, table.vocab_size)
        try:
            return table._feed(&ids, state, final, None)
        finally:
            release_ids(&ids)

    def token_pieces(self, ids):
        """One string per id, concatenating to decode(ids). See Tokenizer.token_pieces."""
        cdef object engine = self._engine()
        if not isinstance(engine, PieceTable):
            return engine.token_pieces(ids)
        return (<PieceTable>engine)._pieces_of(ids)


cdef inline bint _dead_end(bytes data):
    """Whether `data` ends with ED A0..ED BF. CPython's incremental decoder holds those two
    bytes back as if a third could complete them, but no byte can (they would encode a
    surrogate): they are invalid now, and an invalid byte is emitted at once."""
    return _dead_end_at(<const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


cdef enum:  # what bytes are as the start of one UTF-8 character (_character_state)
    NOT_UTF8 = 0
    UNFINISHED = 1
    COMPLETE = 2


cdef inline int _character_state(const unsigned char* p, Py_ssize_t n) noexcept:
    """p[:n] (n >= 1) as the start of one UTF-8 character: exactly one valid character
    (COMPLETE), a proper prefix of one (UNFINISHED: what a strict decode consumes nothing of
    and does not reject), or neither. ED A0..ED BF is neither (see _dead_end)."""
    cdef unsigned char lead = p[0], low = 0x80, high = 0xBF
    cdef Py_ssize_t size, k
    if lead < 0x80:
        return COMPLETE if n == 1 else NOT_UTF8
    if 0xC2 <= lead <= 0xDF:
        size = 2
    elif 0xE0 <= lead <= 0xEF:
        size = 3
    elif 0xF0 <= lead <= 0xF4:
        size = 4
    else:
        return NOT_UTF8
    if n > size:
        return NOT_UTF8
    if lead == 0xE0:
        low = 0xA0
    elif lead == 0xED:
        high = 0x9F
    elif lead == 0xF0:
        low = 0x90
    elif lead == 0xF4:
        high = 0x8F
    if n >= 2 and not low <= p[1] <= high:
        return NOT_UTF8
    for k in range(2, n):
        if not 0x80 <= p[k] <= 0xBF:
            return NOT_UTF8
    return COMPLETE if n == size else UNFINISHED


cdef inline bint _unfinished_character(const unsigned char* p, Py_ssize_t n) noexcept:
    """Whether p[:n] is a proper prefix of a valid UTF-8 character. Said in C: the per-token
    state check ran a codec call for it."""
    return _character_state(p, n) == UNFINISHED


cdef inline bint _dead_end_at(const unsigned char* p, Py_ssize_t n):
    return n >= 2 and p[n - 2] == 0xED and p[n - 1] >= 0xA0


cdef inline bint _extends_validly(const unsigned char* p, Py_ssize_t n, unsigned char byte) noexcept:
    """Whether p[:n] + byte is still what a byte run may hold (a strict, non-final decode
    accepts it and it does not end in a dead end, see _dead_end), given that p[:n] is: only
    p's last character, if unfinished, and the byte can change that. Said in C: the check was
    a codec call per byte token (a tuple, a buffer, an exception when invalid)."""
    cdef unsigned char last[4]
    cdef Py_ssize_t start = n, k = n, m
    # Back over at most two continuation bytes (all an unfinished character has): so the
    # character copied into last[] is at most 3 bytes before the new one.
    while k > 0 and n - k < 2 and 0x80 <= p[k - 1] <= 0xBF:
        k -= 1
    if k > 0 and _unfinished_character(p + k - 1, n - k + 1):
        start = k - 1
    m = n - start
    memcpy(last, p + start, m)
    last[m] = byte
    return _character_state(last, m + 1) != NOT_UTF8


cdef bytes _with_byte(bytes held, unsigned char byte):
    """held + bytes([byte]), made once."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(held)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + 1)
    cdef char* buf = PyBytes_AS_STRING(out)
    memcpy(buf, PyBytes_AS_STRING(held), n)
    buf[n] = <char>byte
    return out


# What short byte strings decode to, as codecs.utf_8_decode(data, "replace" or "ignore", False)
# gives it: the text and how many bytes it consumed. Direct-mapped; a collision replaces the
# entry. The key's top bit says which error rule made it.
cdef enum:
    MAX_HELD_BYTES = 3  # mode "bytes" holds back at most an unfinished character
    JOIN_BYTES = 64     # longer joins are made on the heap
    CACHED_BYTES = 7    # the key packs up to 7 bytes and the length into 64 bits
    CACHE_SLOTS = 4096

cdef unsigned long long _cache_key[CACHE_SLOTS]
cdef PyObject* _cache_text[CACHE_SLOTS]
cdef Py_ssize_t _cache_consumed[CACHE_SLOTS]


cdef str _decode_prefix(const unsigned char* data, Py_ssize_t n, Py_ssize_t* consumed, bint ignore):
    cdef unsigned long long key = (<unsigned long long>n << 56) | (<unsigned long long>ignore << 63)
    cdef Py_ssize_t i, slot
    cdef str text
    cdef const char* errors = "ignore" if ignore else "replace"
    if n > CACHED_BYTES:
        return PyUnicode_DecodeUTF8Stateful(<char*>data, n, errors, consumed)
    for i in range(n):
        key |= (<unsigned long long>data[i]) << (8 * i)
    slot = <Py_ssize_t>((key * 0x9E3779B97F4A7C15ULL) >> 52) & (CACHE_SLOTS - 1)
    if _cache_text[slot] != NULL and _cache_key[slot] == key:
        consumed[0] = _cache_consumed[slot]
        return <str>_cache_text[slot]
    text = PyUnicode_DecodeUTF8Stateful(<char*>data, n, errors, consumed)
    Py_XDECREF(_cache_text[slot])
    Py_INCREF(text)
    _cache_text[slot] = <PyObject*>text
    _cache_key[slot] = key
    _cache_consumed[slot] = consumed[0]
    return text


cdef str _whole_run_text(bytes run):
    # A held run is a valid UTF-8 prefix, so a non-final decode does not raise: a character
    # left incomplete (the usual case, rendered as the tail on every streamed byte) shows as
    # unconsumed bytes instead of as an exception, which cost more than the rest of the step.
    cdef Py_ssize_t consumed = 0
    cdef str text
    try:
        text = PyUnicode_DecodeUTF8Stateful(PyBytes_AS_STRING(run), PyBytes_GET_SIZE(run), "strict", &consumed)
    except UnicodeDecodeError:
        return "\ufffd" * PyBytes_GET_SIZE(run)
    if consumed == PyBytes_GET_SIZE(run):
        return text
    return "\ufffd" * PyBytes_GET_SIZE(run)


cdef object _complete_text(object piece):
    """The str a byte piece renders alone, or None if it is not complete, valid UTF-8."""
    try:
        return (<bytes>piece).decode("utf-8")
    except UnicodeDecodeError:
        return None
