# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""SGLang's detokenizer step over Streams, in one pass: the compiled part of oasr_tok's
replacement of SGLang 0.5.23's DetokenizerManager._decode_batch_token_id_output
(oasr_tok/integrations/sglang.py says what it gives out and where it differs from SGLang, on
purpose; docs/engines.md § SGLang).

`step_requests` reads a BatchTokenIDOutput once, in C: each request id's `Request` (its Stream
and SGLang's send rule) looked up once, the new requests started, the finishing ones' stop token
trimmed, the ids of every request put in one batch call of the batch engine (_engine/batch.pyx
feed_owned: every id checked before any stream moves), then SGLang's rule for what each request
sends applied: a request that has no rule pending and whose stream holds nothing sends its delta
as it is (nearly every request of a step, and nothing else is done for it); the others go
through the rule, calling SGLang's own find_printable_text only on a held step's text; a
finishing request's last text is cut by the manager's own trim_matched_stop when a stop string
matched.

What is rare or SGLang's own is asked of `owner` (the RequestStreams, duck-typed: this room
imports no integration): `_dropped` (the request ids whose state was dropped),
`_start(rid, ids, read_offset, skip)` for a request's first batch that is not the usual one,
`_trim`, `_printable`, `_named(exc, rids, rows)` for an error naming the request, and
`_step_mixed(rids, rows, streams, keeps)` for a batch whose requests do not all skip special
tokens. Atomic: every check and every start comes before the batch call; nothing is registered,
dropped or ruled until it returned.

Example:
    >>> from types import SimpleNamespace as Batch
    >>> from oasr_tok.demo import DATA
    >>> from oasr_tok.integrations.sglang import RequestStreams
    >>> tok = oasr_tok.load(DATA / "sentencepiece")
    >>> streams = RequestStreams(tok, trim_matched_stop=lambda out, reason, keep: out,
    ...                          find_printable_text=lambda text: text[: text.rfind(" ") + 1])
    >>> ids = tok.encode("the café")
    >>> batch = Batch(rids=["r1"], decode_ids=[ids], read_offsets=[1], finished_reasons=[None],
    ...               skip_special_tokens=[True], no_stop_trim=[False])
    >>> step_requests(streams, streams._states, batch, 1, tok)
    [' café']
    >>> streams.request("r1").stream.emitted
    5
"""
from cpython cimport array
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF

from oasr_tok._engine.batch cimport feed_owned
from oasr_tok._engine.stream cimport Stream

from oasr_tok.errors import StreamStateError, TokenizerError

from libc.string cimport memcmp, memcpy

cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object, object) except? NULL
    bint PyUnicode_IS_COMPACT_ASCII(object)
    void* PyUnicode_DATA(object)
    long long PyLong_AsLongLongAndOverflow(object, int*) except? -1
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_UCS4 PyUnicode_READ_CHAR(object, Py_ssize_t)

cdef Py_UCS4 _FFFD = 0xFFFD

cdef enum:
    RID_INLINE = 48  # the longest ASCII rid a Request holds the characters of (a uuid4's hex is 32)


cdef class Request:
    """One SGLang request: its Stream, whether it keeps special tokens, and SGLang's send rule
    while it is not empty (a request whose stream held something lately): `buf` the text the
    stream settled since the rule last committed, `skip` how many of its first characters that
    commit already took (a byte run SGLang committed while the stream still held it), `pending`
    how many characters after the commit point went out already (a held step's printable prefix).
    `seen` is the number of the last batch that stepped it.

    A Request is its own key in the states: it hashes as its `rid` and equals it. A dict keyed by
    the rids themselves reads the stored rid's string object on every lookup (CPython keeps no
    hash beside a str key), and in a batch of 1,024 requests those strings are out of the cache
    each time; the Request is read right after anyway, and holds an ASCII rid's characters
    (SGLang's are uuid4 hex) within itself (benchmarks/measurements.md, SGLang's step)."""

    cdef readonly Stream stream
    cdef readonly bint keeps_specials
    cdef bint ruled
    cdef str buf
    cdef Py_ssize_t skip, pending
    cdef public Py_ssize_t seen
    cdef readonly object rid    # SGLang's request id
    cdef Py_hash_t rid_hash
    cdef Py_ssize_t rid_size  # the rid's length when it is an ASCII str of at most RID_INLINE, else -1
    cdef char rid_chars[RID_INLINE]

    def __init__(self, Stream stream not None, bint keeps_specials, Py_ssize_t seen=0, object rid=None):
        cdef Py_ssize_t size
        self.rid = rid
        self.rid_hash = hash(rid)  # (a rid that is not hashable is refused here, as a dict would)
        self.rid_size = -1
        if type(rid) is str and PyUnicode_IS_COMPACT_ASCII(rid):
            size = PyUnicode_GET_LENGTH(rid)
            if size <= RID_INLINE:
                memcpy(self.rid_chars, PyUnicode_DATA(rid), size)
                self.rid_size = size
        self.stream = stream
        self.keeps_specials = keeps_specials
        self.ruled = False
        self.buf = ""
        self.skip = self.pending = 0
        self.seen = seen

    def __hash__(self):
        return self.rid_hash

    def __eq__(self, other):
        cdef Py_ssize_t size
        if other is self:
            return True
        if type(other) is Request:
            return self.rid == (<Request>other).rid
        if self.rid_size >= 0 and type(other) is str and PyUnicode_IS_COMPACT_ASCII(other):
            size = PyUnicode_GET_LENGTH(other)
            return size == self.rid_size and memcmp(PyUnicode_DATA(other), self.rid_chars, size) == 0
        return self.rid == other

    @property
    def rule(self):
        """SGLang's send rule as (buf, skip, pending); None while it is empty."""
        return (self.buf, self.skip, self.pending) if self.ruled else None


cdef inline int _set_rule(Request r, str buf, Py_ssize_t skip, Py_ssize_t pending) except -1:
    r.ruled = True
    r.buf = buf
    r.skip = skip
    r.pending = pending
    return 0


cdef inline int _clear_rule(Request r) except -1:
    r.ruled = False
    r.buf = ""
    r.skip = r.pending = 0
    return 0


cdef inline str _after(str text, Py_ssize_t start):
    if start == 0:
        return text
    return text[start:]


cdef str _rule_step(Request r, str delta, str held, object printable):
    """A streaming step of a request whose stream holds something, or whose last steps did:
    SGLang's rule on (text settled since its last commit) + (what the stream holds)."""
    cdef str buf = r.buf + delta if r.ruled and r.buf else delta
    cdef Py_ssize_t skip = r.skip if r.ruled else 0, pending = r.pending if r.ruled else 0, size
    cdef str new_text = _after(buf + held, skip) if (held or skip) else buf
    size = PyUnicode_GET_LENGTH(new_text)
    if size and (not held or PyUnicode_READ_CHAR(new_text, size - 1) != _FFFD):
        # SGLang commits clean text; a U+FFFD that is settled (not an unfinished character)
        # is final too.
        if held:
            _set_rule(r, "", PyUnicode_GET_LENGTH(held), 0)
        else:
            _clear_rule(r)
        return _after(new_text, pending)
    shown = printable(new_text)
    if type(shown) is not str:
        raise TypeError(f"find_printable_text gave {type(shown).__name__}, not str")
    if PyUnicode_GET_LENGTH(shown) > pending:
        _set_rule(r, buf, skip, PyUnicode_GET_LENGTH(shown))  # text that went out never goes out again
        return _after(<str>shown, pending)
    _set_rule(r, buf, skip, pending)
    return ""


cdef str _finish(Request r, str delta, object reason, object no_stop_trim, object trim):
    """The last output of a request: the rest of its text, cut at the matched stop string by
    the manager's own trim_matched_stop."""
    cdef Stream s = r.stream
    cdef str held = s._held()
    cdef str buf = r.buf + delta if r.ruled else delta
    cdef Py_ssize_t skip = r.skip if r.ruled else 0, pending = r.pending if r.ruled else 0
    cdef str new_text = _after(buf + held, skip) if (held or skip) else buf
    matched = reason.get("matched") if isinstance(reason, dict) else None
    if matched is None or isinstance(matched, int):
        return _after(new_text, pending)
    # A stop string: SGLang cuts at its first occurrence in the whole output (the stream's text
    # ends with it and what is held).
    cdef str text = s.text
    text = text[len(text) - len(held) - s.emitted:]
    cdef Py_ssize_t sent = len(text) - len(new_text) + pending
    cut = trim(text, reason, no_stop_trim)
    return (<str>cut)[sent:] if isinstance(cut, str) else _after(new_text, pending)


cdef object _started(object tok, Py_ssize_t size, object ids, object read_offset):
    """A request's first batch, the usual way (what owner._start does, without its Python
    frame): its Stream primed with the `read_offset` prompt ids the batch starts with, and the
    generated ids after them; None for anything else (owner._start then decides, and names the
    request in its error)."""
    cdef Py_ssize_t k, offset
    cdef list prompt
    if type(read_offset) is not int:
        return None
    offset = read_offset
    try:
        if not 0 <= offset <= len(ids):
            return None
        # (a list, or the array('i') SGLang's scheduler sends)
        prompt = (<list>ids)[:offset] if type(ids) is list else list(ids[:offset])
    except Exception:
        return None
    cdef long long value
    cdef int overflow = 0
    for k in range(offset):
        item = <object>PyList_GET_ITEM(prompt, k)
        if type(item) is not int:
            return None
        value = PyLong_AsLongLongAndOverflow(item, &overflow)
        if overflow or not 0 <= value < size:
            return None  # (a placeholder id past the vocabulary, not an int: owner._start)
    try:
        stream = tok.new_stream(prefill=prompt or None)
    except (TypeError, TokenizerError):
        return None
    if type(stream) is not Stream:
        return None
    return stream, ids[offset:]


cdef object _one_each(list rows, Py_ssize_t n):
    """The rows' ids as one 1-D int64 buffer when every row is one id (a step of one id per
    request: the batch engine then reads one buffer, not a row at a time), else None. A row is
    the array('i') SGLang's scheduler sends, or a list of an int."""
    cdef bytearray packed = bytearray(n * 8)
    cdef long long* at = <long long*><char*>packed
    cdef Py_ssize_t k
    cdef int overflow = 0
    for k in range(n):
        row = <object>PyList_GET_ITEM(rows, k)
        if type(row) is array.array:
            if len(<array.array>row) != 1 or (<array.array>row).ob_descr.typecode != b"i":
                return None
            at[k] = (<array.array>row).data.as_ints[0]
        elif type(row) is list and PyList_GET_SIZE(row) == 1 and type(<object>PyList_GET_ITEM(row, 0)) is int:
            at[k] = PyLong_AsLongLongAndOverflow(<object>PyList_GET_ITEM(row, 0), &overflow)
            if overflow:
                return None
        else:
            return None
    return memoryview(packed).cast("q")


cdef inline object _item(object seq, Py_ssize_t k):
    if type(seq) is list:
        return <object>PyList_GET_ITEM(seq, k)
    return seq[k]


def step_requests(object owner, dict states, object recv_obj, Py_ssize_t batch_no, object tok):
    """The output_strs of one BatchTokenIDOutput `recv_obj` (rids, decode_ids, finished_reasons,
    skip_special_tokens, read_offsets, no_stop_trim), over `states` ({Request: Request}: each its
    own key, equal to its rid) and `tok` (the tokenizer of the requests that skip special tokens);
    `batch_no` is this batch's number (each stepped Request's `seen`). The module docstring says
    what `owner` answers. Raises the error of the first request refused, naming it; then nothing
    moved."""
    cdef object rids = recv_obj.rids
    cdef Py_ssize_t k, n = len(rids)
    if n == 0:
        return []
    cdef object rows_in = recv_obj.decode_ids, finished = recv_obj.finished_reasons
    cdef object skips = recv_obj.skip_special_tokens, read_offsets = None, no_stop_trim = None
    cdef list reqs = PyList_New(n), streams = PyList_New(n), rows = None, keeps = None
    cdef list ending = None
    cdef dict fresh = None, dropped = None
    cdef Py_ssize_t size = -1
    cdef PyObject* found
    cdef Request r
    cdef bint mixed = False, skip
    if len(rows_in) != n or len(finished) != n or len(skips) != n:
        raise StreamStateError(f"a batch of {n} requests with {len(rows_in)} rows of ids, {len(finished)} finish "
                               f"reasons and {len(skips)} skip_special_tokens")
    for k in range(n):  # (the lists are filled before anything can raise)
        Py_INCREF(None)
        PyList_SET_ITEM(reqs, k, None)
        Py_INCREF(None)
        PyList_SET_ITEM(streams, k, None)
    # -- every request looked up, started or checked; its row of ids; nothing moves -------------
    for k in range(n):
        rid = _item(rids, k)
        skip = _item(skips, k)
        found = PyDict_GetItemWithError(states, rid)
        if found != NULL:
            r = <Request>found
            if r.keeps_specials == skip:
                raise StreamStateError(
                    f"request {rid!r} changed skip_special_tokens to {_item(skips, k)!r} mid-stream; it is taken "
                    "from the request's first batch")
        else:
            if fresh is None:
                fresh = {}
                read_offsets = recv_obj.read_offsets
                dropped = owner._dropped
            elif rid in fresh:
                raise StreamStateError(f"request {rid!r} is given twice in one batch")
            if rows is None:
                rows = list(rows_in)
            started = None
            if skip and not (dropped and rid in dropped):
                if size < 0:
                    size = tok.vocab_size
                started = _started(tok, size, _item(rows_in, k), _item(read_offsets, k))
            if started is None:
                started = owner._start(rid, _item(rows_in, k), _item(read_offsets, k), _item(skips, k))
            stream, row = started
            r = Request(stream, not skip, batch_no, rid)
            fresh[r] = r
            rows[k] = row
        if r.keeps_specials:
            mixed = True
        reason = _item(finished, k)
        if reason is not None:
            if ending is None:
                ending = []
                no_stop_trim = recv_obj.no_stop_trim
            ending.append(k)
            row = _item(rows_in, k) if rows is None else rows[k]
            if len(row):
                # SGLang's own rule for the stop token: not rendered (unless no_stop_trim, a
                # tool call's closer).
                kept = owner._trim(list(row), reason, _item(no_stop_trim, k))
                if isinstance(kept, list) and len(<list>kept) < len(row):
                    if rows is None:
                        rows = list(rows_in)
                    rows[k] = kept
        (<list>reqs)[k] = r
        (<list>streams)[k] = r.stream
    if rows is None:
        rows = list(rows_in)  # (the batch engine steps this call's own lists)
    # -- one batch call (one per tokenizer when some keep special tokens) ------------------------
    if not mixed:
        deltas = None
        column = _one_each(rows, n)
        if column is not None:
            try:
                deltas = feed_owned(tok, column, streams, False, True)
            except TokenizerError:
                deltas = None  # nothing moved: the rows again, for the error that names the request
        if deltas is None:
            try:
                deltas = feed_owned(tok, rows, streams, False, False)
            except TokenizerError as exc:
                raise owner._named(exc, rids, rows) from exc
    else:
        keeps = [(<Request>reqs[k]).keeps_specials for k in range(n)]
        deltas = owner._step_mixed(rids, rows, streams, keeps)
    if type(deltas) is not list or PyList_GET_SIZE(deltas) != n:
        raise StreamStateError(f"a batch of {n} streams gave {len(deltas)} deltas")
    # -- what each request sends; the finished ones leave, the new ones join ----------------------
    cdef list out = <list>deltas
    cdef Stream s
    cdef str held
    printable = owner._printable
    for k in range(n):
        r = <Request>PyList_GET_ITEM(reqs, k)
        if ending is not None and _item(finished, k) is not None:
            continue
        r.seen = batch_no
        s = r.stream
        if r.ruled or not s._holds_nothing():
            held = s._held()
            if r.ruled or held:
                out[k] = _rule_step(r, <str>PyList_GET_ITEM(out, k), held, printable)
    if ending is not None:
        trim = owner._trim
        for k in ending:
            r = <Request>PyList_GET_ITEM(reqs, k)
            out[k] = _finish(r, <str>PyList_GET_ITEM(out, k), _item(finished, k), _item(no_stop_trim, k), trim)
            rid = _item(rids, k)
            if fresh is not None and fresh.get(rid) is r:
                del fresh[rid]  # started and finished in one batch: never kept
            else:
                states.pop(rid, None)
    if fresh:
        states.update(fresh)
    return out
