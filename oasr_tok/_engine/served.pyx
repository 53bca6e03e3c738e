# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True
"""A request's text in a serving engine's output step, over a Stream, and the step that advances
every request of an engine step in batches: the compiled part of oasr_tok's detokenizer in vLLM
(oasr_tok/integrations/vllm/detokenizer.py; docs/engines.md § vLLM).

vLLM's output step (OutputProcessor.process_outputs) calls, for each request, its detokenizer's
`update(new_token_ids, stop_terminated)` and `get_next_output_text(finished, delta)`: a Python
call and a few list and string operations per request are what vLLM's own loop costs there, so
`ServedText` has both as C methods and its text in a GrowText (amortised O(1) per appended
character), and `step_served` walks the step's outputs in C (vLLM's EngineCoreOutput and
RequestState: `request_id`, `new_token_ids`, `finish_reason`, `error`, `new_logprobs`, read
from their slots where they are plain ones; `detokenizer`, `queue`, by attribute), steps their
streams in one decode_incremental_batch per tokenizer and per id position (one call for a step
of one id per request; k for k ids), and then does, request
after request, update's work with the text each id settled and makes the delta the request's
get_next_output_text(False, True) will hand out (while what the batch made is still in the
cache: done in vLLM's loop, after every other request's objects were read, the same work cost
twice as much). update then only appends the ids and returns the stop string found;
get_next_output_text hands out that delta when it is still the text's next one (any other call,
a finished request, a delta nobody took, computes its answer from the text as before).

What `update` and `get_next_output_text` do is vLLM 0.33's detokenizer for a fast tokenizer
(vllm/v1/engine/detokenizer.py: BaseIncrementalDetokenizer with FastIncrementalDetokenizer's
decode_next), rule for rule:

* an id's text is shown where tokenizers' DecodeStream shows it: the text ids settle is held
  while the text so far ends inside a character (the stream holds its bytes) or in U+FFFD, and
  shown, all of it, at the id after which it no longer does;
* with `added` ({id: content}: special tokens shown, spaces_between_special_tokens off) an
  added token that follows another shows its bare content;
* a step that ends on the engine's own stop id (`stop_terminated`) leaves it out of the text
  unless the output includes the stop string;
* stop strings are vLLM's check_stop_strings over the text the step added (after min_tokens):
  the one that ends earliest wins (ties: list order); the text is cut before it (after it with
  include_stop) and the ids after the one whose text reached its end are dropped;
* `get_next_output_text` holds back `stop_buffer_length` characters until the request finishes.

When the request finishes, the stream is flushed and the flush's text goes with the last id's,
by the same rule: what a kind held back comes out; bytes of a character the ids left unfinished
(rendered U+FFFD) do not, as vLLM never shows them.
"""
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject

from oasr_tok._engine.growtext cimport GrowText

from oasr_tok._engine.stream import held_bytes_of
from oasr_tok.errors import NonIntegerIdError, StreamStateError, TokenizerError

cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object, object) except? NULL
    Py_ssize_t PY_SSIZE_T_MAX
    Py_ssize_t PyList_GET_SIZE(object)
    PyObject* PyList_GET_ITEM(object, Py_ssize_t)
    long long PyLong_AsLongLongAndOverflow(object, int*) except? -1
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_UCS4 PyUnicode_READ_CHAR(object, Py_ssize_t)
    Py_UCS4 PyUnicode_READ(int kind, const void* data, Py_ssize_t index) nogil

cdef enum:
    _SMALL = 16  # a step of fewer ids than this keeps its text offsets on the C stack


cdef class ServedText:
    """One request's text over its stream, as vLLM's detokenizer keeps it (module docstring).

    `stream` was made by `view` (new_stream(prefill=prompt)); `stops` are the request's stop
    strings (in its order), `min_tokens` the ids before which none counts, `include_stop`
    whether the output keeps the stop string, `stop_buffer_length` vLLM's (the longest stop
    string less one, 0 when the output includes it), `added` the added-token rule's
    {id: content} or None; `request_id` names the request in errors.
    """

    cdef readonly object stream
    cdef readonly object view
    cdef readonly object request_id
    cdef public list token_ids
    cdef GrowText text
    cdef Py_ssize_t sent
    cdef readonly Py_ssize_t stop_buffer_length
    cdef readonly tuple stops
    cdef readonly Py_ssize_t min_tokens
    cdef readonly bint include_stop
    cdef readonly object added
    cdef bint last_added
    cdef Py_UCS4* last_chars      # each stop string's last character (a match ends in the new text)
    cdef Py_ssize_t n_last
    cdef str held                 # text settled but not shown yet (DecodeStream's rule)
    cdef bint held_open           # the stream held bytes of an unfinished character after the last id
    cdef public bint finishing
    cdef object pending_ids       # the new_token_ids list step_served stepped
    cdef str pending_one          # its text, for a step of one fed id ...
    cdef bint pending_hold        # ... and whether the stream held bytes after it
    cdef list pending_many        # several fed ids: [text, hold, text, hold, ...]
    # What step_served already did of update and get_next_output_text with the text it stepped
    # (while the request's data is hot, not in vLLM's loop after every other request's):
    cdef bint ready               # update's work is done: it appends the ids and returns ready_found
    cdef bint ready_stop          # ... for this stop_terminated (the output's finish reason)
    cdef object ready_found       # the stop string matched, or None
    cdef Py_ssize_t ready_keep    # how many of the new ids stay (the ones after a stop string's end go)
    cdef str ready_text           # get_next_output_text(False, True)'s answer, made in the step ...
    cdef Py_ssize_t ready_end     # ... and where it ends (what is sent once it is taken)
    cdef bint delta_mode          # the last get_next_output_text asked for deltas (DELTA outputs)

    def __init__(self, stream, view, request_id, stops=(), Py_ssize_t min_tokens=0, bint include_stop=False,
                 Py_ssize_t stop_buffer_length=0, added=None):
        cdef Py_ssize_t k
        stops = tuple(stops)
        for s in stops:
            if type(s) is not str or not s:
                raise StreamStateError(f"request {request_id!r}: a stop string is a non-empty str, got {s!r}")
        if stop_buffer_length < 0 or min_tokens < 0:
            raise ValueError("stop_buffer_length and min_tokens are counts (>= 0)")
        if added is not None and type(added) is not dict:
            raise TypeError("added is a dict {id: content} or None")
        lasts = sorted({s[len(s) - 1] for s in stops})
        PyMem_Free(self.last_chars)
        self.last_chars = <Py_UCS4*>PyMem_Malloc(max(len(lasts), 1) * sizeof(Py_UCS4))
        if self.last_chars == NULL:
            raise MemoryError()
        for k in range(len(lasts)):
            self.last_chars[k] = ord(lasts[k])
        self.n_last = len(lasts)
        self.stream = stream
        self.view = view
        self.request_id = request_id
        self.token_ids = []
        self.text = GrowText()
        self.sent = 0
        self.stops = stops
        self.min_tokens = min_tokens
        self.include_stop = include_stop
        self.stop_buffer_length = stop_buffer_length
        self.added = added
        self.last_added = False
        self.held = ""
        self.held_open = False
        self.finishing = False
        self.pending_ids = None
        self.pending_one = None
        self.pending_many = None
        self.ready = False
        self.ready_found = None
        self.ready_text = None
        self.delta_mode = False

    def __dealloc__(self):
        PyMem_Free(self.last_chars)

    # -- what vLLM reads ------------------------------------------------------------------------

    @property
    def output_text(self):
        """All the text shown so far (vLLM's detokenizer.output_text)."""
        return self.text.text()

    @property
    def output_token_ids(self):
        return self.token_ids

    def num_output_tokens(self):
        return len(self.token_ids)

    # -- the step --------------------------------------------------------------------------------

    cdef list _feed_each(self, list ids):
        """The request's own step, id by id (not stepped by step_served): [text, hold, ...],
        the flush with the last id when finishing."""
        cdef list parts = []
        try:
            for i in ids:
                parts.append(self.stream.feed([i]))
                parts.append(self.stream.held_bytes > 0)
            if self.finishing and not self.stream.closed:
                flushed = self.stream.feed([], True)
                if parts:
                    parts[len(parts) - 2] = parts[len(parts) - 2] + flushed
                    parts[len(parts) - 1] = False
                else:
                    parts = [flushed, False]
        except TokenizerError as exc:
            raise type(exc)(f"request {self.request_id!r}: {exc}") from None
        return parts

    cdef str _shown(self, object token_id, str settled, bint holds):
        """DecodeStream's step for one id (what it settled, whether the stream holds bytes after
        it), then the added-token rule: the text shown for the id."""
        cdef str out = ""
        cdef Py_ssize_t n
        if settled:
            self.held = self.held + settled if self.held else settled
        self.held_open = holds
        if self.held and not holds:
            n = PyUnicode_GET_LENGTH(self.held)
            if PyUnicode_READ_CHAR(self.held, n - 1) != 0xFFFD:
                out = self.held
                self.held = ""
        if self.added is not None:
            content = (<dict>self.added).get(token_id)
            if content is not None and self.last_added:
                out = content
            self.last_added = content is not None
        return out

    def update(self, list new_token_ids, bint stop_terminated):
        """vLLM's update: the new ids' text appended; the stop string matched, or None."""
        cdef Py_ssize_t keep = 0, n_new, n_fed
        if not new_token_ids:
            return None
        if self.pending_ids is new_token_ids:
            if self.ready_stop != stop_terminated:
                raise StreamStateError(
                    f"request {self.request_id!r}: the output step stepped its ids for stop_terminated="
                    f"{bool(self.ready_stop)} (its finish reason), update was called with {bool(stop_terminated)}")
            if not self.ready:
                self._take_pending()
            found, keep = self.ready_found, self.ready_keep
            self.pending_ids = self.ready_found = None
            self.ready = False
        else:
            if self.pending_ids is not None:
                raise StreamStateError(
                    f"request {self.request_id!r}: the output step did not take the text its batch stepped "
                    "(update was called with other ids)")
            self.ready_text = None  # (the text moves: a delta the step made is not the next one)
            n_new = len(new_token_ids)
            n_fed = n_new - 1 if stop_terminated and not self.include_stop else n_new
            found = self._advance(new_token_ids, n_fed, None, False, self._feed_each(new_token_ids[:n_fed]), &keep)
        if keep == PyList_GET_SIZE(new_token_ids):
            self.token_ids.extend(new_token_ids)
        else:
            self.token_ids.extend(new_token_ids[:keep])
        return found

    cdef int _take_pending(self) except -1:
        """update's work on the text step_served stepped (pending_*), done in the step: ready_*
        say what update then does; the answer of get_next_output_text(False, True) made too when
        the request takes deltas and the step does not finish it."""
        cdef Py_ssize_t keep = 0, n_new = PyList_GET_SIZE(self.pending_ids), n_fed, length
        n_fed = n_new - 1 if self.ready_stop and not self.include_stop else n_new
        found = self._advance(self.pending_ids, n_fed, self.pending_one, self.pending_hold, self.pending_many, &keep)
        self.pending_one = self.pending_many = None
        self.ready_found, self.ready_keep = found, keep
        self.ready = True
        if self.ready_text is not None:  # the last one was not taken (a stream_interval): none now
            self.ready_text = None
        elif self.delta_mode and found is None and not self.finishing:
            length = self.text.t.n - self.stop_buffer_length
            self.ready_text = self._between(self.sent, length)
            self.ready_end = length if length > self.sent else self.sent
        return 0

    cdef object _advance(self, list new_token_ids, Py_ssize_t n_fed, str one, bint one_hold, list parts,
                         Py_ssize_t* keep):
        """update's work but for the ids themselves: the text of the first n_fed of new_token_ids
        (`one`/`one_hold` for one fed id, else parts [text, hold, ...]) shown and appended, vLLM's
        stop strings checked; the stop string matched, or None, and *keep the new ids that stay
        (all of them but those after the one whose text reached a stop string's end)."""
        cdef Py_ssize_t n_new = PyList_GET_SIZE(new_token_ids), k, num_prev, check_at, hi, lo, mid, stop_end
        cdef Py_ssize_t small[_SMALL]     # the text's offsets for a step of a few ids
        cdef Py_ssize_t* offsets = NULL
        cdef str piece
        keep[0] = n_new
        num_prev = len(self.token_ids)
        if self.stops:
            if n_new < _SMALL:
                offsets = small
            else:
                offsets = <Py_ssize_t*>PyMem_Malloc((n_new + 1) * sizeof(Py_ssize_t))
                if offsets == NULL:
                    raise MemoryError()
        try:
            if offsets != NULL:
                offsets[0] = self.text.t.n
            for k in range(n_fed):
                token_id = <object>PyList_GET_ITEM(new_token_ids, k)
                if parts is None:
                    piece = self._shown(token_id, one, one_hold)
                else:
                    piece = self._shown(token_id, <str>parts[2 * k], parts[2 * k + 1])
                if piece:
                    self.text.append(piece)
                if offsets != NULL:
                    offsets[k + 1] = self.text.t.n
            if n_fed < n_new:
                if n_fed == 0:
                    # No id rendered: a finishing flush's text (if any) goes with the stop id.
                    if parts is None:
                        piece = self._shown(None, one, one_hold) if one else ""
                    else:
                        piece = self._shown(None, <str>parts[0], parts[1]) if parts else ""
                    if piece:
                        self.text.append(piece)
                if offsets != NULL:
                    offsets[n_new] = self.text.t.n
            # -- vLLM's stop strings: in the text the step added, from the min_tokens-th id on
            if offsets == NULL or num_prev + n_new <= self.min_tokens:
                return None
            check_at = offsets[self.min_tokens - num_prev if self.min_tokens > num_prev else 0]
            found, truncate_to = self._check_stops(self.text.t.n - check_at)
            if found is None:
                return None
            stop_end = self.text.t.n if truncate_to == -1 else truncate_to
            if not self.include_stop:
                stop_end += PyUnicode_GET_LENGTH(found)
            lo, hi = 1, n_new + 1  # bisect_left(offsets, stop_end, lo=1)
            while lo < hi:
                mid = (lo + hi) // 2
                if offsets[mid] < stop_end:
                    lo = mid + 1
                else:
                    hi = mid
            keep[0] = lo
            if truncate_to != -1:
                self.text.truncate(truncate_to)
            return found
        finally:
            if offsets != small:
                PyMem_Free(offsets)

    cdef tuple _check_stops(self, Py_ssize_t new_count):
        """vLLM's check_stop_strings on the text: (the stop string, where the text is cut, -1 for
        nowhere) or (None, 0). A match ends in the new characters, so none can be there unless
        one of them is a stop string's last character."""
        cdef Py_ssize_t n = self.text.t.n, i, k, start, at, end, best_end = -1, best_at = 0, longest = 0
        cdef int kind = self.text.t.kind
        cdef const void* data = self.text.t.data
        cdef bint candidate = False
        cdef str window, best = None
        if new_count <= 0 or not self.stops:
            return None, 0
        for i in range(n - new_count, n):
            for k in range(self.n_last):
                if PyUnicode_READ(kind, data, i) == self.last_chars[k]:
                    candidate = True
                    break
            if candidate:
                break
        if not candidate:
            return None, 0
        for stop in self.stops:
            if PyUnicode_GET_LENGTH(stop) > longest:
                longest = PyUnicode_GET_LENGTH(stop)
        start = n - new_count - longest + 1
        if start < 0:
            start = 0
        window = PyUnicode_FromKindAndData(kind, <const char*>data + start * kind, n - start)
        for stop in self.stops:
            # vLLM: output_text.find(stop, 1 - new_char_count - len(stop))
            at = n - new_count - PyUnicode_GET_LENGTH(stop) + 1
            at = window.find(stop, (at if at > 0 else 0) - start)
            if at < 0:
                continue
            at += start
            end = at + PyUnicode_GET_LENGTH(stop)
            if best is None or end < best_end:
                best, best_at, best_end = stop, at, end
        if best is None:
            return None, 0
        if self.include_stop:
            return best, (-1 if best_end >= n else best_end)
        return best, best_at

    def get_next_output_text(self, bint finished, bint delta):
        """vLLM's get_next_output_text: all the text when finished, else less the stop buffer;
        with `delta` only what was not given out before."""
        cdef Py_ssize_t buffer = 0 if finished else self.stop_buffer_length, length, last
        cdef str ready = self.ready_text
        self.delta_mode = delta
        if ready is not None:
            self.ready_text = None
            if delta and not finished:  # the usual call: made by the step
                self.sent = self.ready_end
                return ready
        if finished and not self.stream.closed:
            # Finished outside step_served (an abort, a caller driving it itself): the flush,
            # shown by DecodeStream's rule.
            try:
                piece = self._shown(None, self.stream.feed([], True), False)
            except TokenizerError as exc:
                raise type(exc)(f"request {self.request_id!r}: {exc}") from None
            if piece:
                self.text.append(piece)
        length = self.text.t.n - buffer
        if not delta:
            if not buffer:
                return self.text.text()
            return self._between(0, length)
        last = self.sent
        if last < length:
            self.sent = length
            return self._between(last, length)
        return ""

    cdef str _between(self, Py_ssize_t start, Py_ssize_t end):
        if end <= start:
            return ""
        if start == 0 and end == self.text.t.n:
            return self.text.text()
        return PyUnicode_FromKindAndData(self.text.t.kind, self.text.t.data + start * self.text.t.kind, end - start)


cdef object _request_named(object exc, list served):
    """A batch's error ("stream k: ...") naming the request of stream k; no stream moved."""
    text = str(exc)
    if text.startswith("stream "):
        head = text.split(":", 1)[0][len("stream "):]
        if head.isdigit() and int(head) < len(served):
            return type(exc)(f"request {(<ServedText>served[int(head)]).request_id!r} ({text})")
    return exc


# -- reading vLLM's EngineCoreOutput ---------------------------------------------------------------
# The step reads five fields of every output. EngineCoreOutput is a msgspec Struct: its fields are
# slots, each read through a member descriptor, so where the output's class reads attributes the
# generic way and the field's descriptor is a plain object slot, the step reads the slot itself
# (what getattr returns, without the lookups on the way, which were a large part of the step's
# own time: benchmarks/measurements.md). What it learns of the class lives in the call (an
# _OutputSlots on its C stack), never in module state a step writes. Any other object (tests
# drive the step with SimpleNamespaces) is read by getattr.

cdef tuple _OUTPUT_FIELDS = ("request_id", "new_token_ids", "finish_reason", "error", "new_logprobs")

cdef extern from *:
    """
    #include "structmember.h"
    /* Whether instances of t read attributes the generic way (descriptors, then the dict). */
    static int oasr_reads_generically(PyTypeObject* t) { return t->tp_getattro == PyObject_GenericGetAttr; }
    /* The slot a member descriptor reads: its offset in an instance, or -1 where the descriptor
       is not a plain object slot that getattr reads as it is (not a member descriptor, not an
       object member raising AttributeError when unset, or an audited one). */
    static Py_ssize_t oasr_object_slot(PyObject* descr) {
        PyMemberDef* m;
        if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) return -1;
        m = ((PyMemberDescrObject*)descr)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & PY_AUDIT_READ) || m->offset < (Py_ssize_t)sizeof(PyObject)) return -1;
        return m->offset;
    }
    """
    ctypedef struct PyTypeObject:
        Py_ssize_t tp_basicsize
    PyTypeObject* Py_TYPE(object)
    bint oasr_reads_generically(PyTypeObject*)
    Py_ssize_t oasr_object_slot(PyObject*)


cdef struct _OutputSlots:
    PyTypeObject* cls            # the class learnt (NULL: none yet)
    Py_ssize_t at[5]             # each field's slot in its instances, or -1: read by getattr


cdef int _learn(_OutputSlots* slots, object out) except -1:
    """What the step needs to know of `out`'s class to read its fields' slots: each field's
    descriptor found as getattr finds it (the first class of the MRO whose dict has the name)."""
    cdef PyTypeObject* cls = Py_TYPE(out)
    cdef Py_ssize_t k, at
    cdef object descr
    slots.cls = cls
    for k in range(5):
        at = -1
        if oasr_reads_generically(cls):
            descr = None
            for base in type(out).__mro__:
                descr = base.__dict__.get(_OUTPUT_FIELDS[k])
                if descr is not None:
                    break
            at = oasr_object_slot(<PyObject*>descr)
            if at + <Py_ssize_t>sizeof(PyObject*) > cls.tp_basicsize:
                at = -1
        slots.at[k] = at
    return 0


cdef inline object _field(_OutputSlots* slots, object out, Py_ssize_t k):
    """Field k of _OUTPUT_FIELDS of `out`: its slot, read as getattr reads it, where its class is
    the one learnt and the field a plain slot; else getattr (an unset slot: its AttributeError)."""
    cdef PyObject* value
    if Py_TYPE(out) != slots.cls:
        _learn(slots, out)
    if slots.at[k] >= 0:
        value = (<PyObject**>(<char*><PyObject*>out + slots.at[k]))[0]
        if value != NULL:
            return <object>value
    return getattr(out, <str>_OUTPUT_FIELDS[k])


cdef class _Batch:
    """The requests of an engine step that one rendering (a view) steps: their rows of ids, their
    ServedTexts and streams, and, while every row is one int, those ids packed as int64."""
    cdef object view
    cdef list rows
    cdef list served
    cdef list streams
    cdef bytearray packed
    cdef long long* at
    cdef Py_ssize_t count
    cdef Py_ssize_t longest
    cdef Py_ssize_t shortest
    cdef bint single          # every row so far is one int id (packed holds them)

    def __cinit__(self, object view, Py_ssize_t capacity):
        self.view = view
        self.rows = []
        self.served = []
        self.streams = []
        self.packed = bytearray(max(capacity, 1) * 8)
        self.at = <long long*><char*>self.packed
        self.count = 0
        self.longest = 0
        self.shortest = PY_SSIZE_T_MAX
        self.single = True

    cdef inline int add(self, object row, ServedText det) except -1:
        cdef Py_ssize_t n = PyList_GET_SIZE(row)
        cdef long long value
        cdef int overflow = 0
        self.rows.append(row)
        self.served.append(det)
        self.streams.append(det.stream)
        if n > self.longest:
            self.longest = n
        if n < self.shortest:
            self.shortest = n
        if self.single:
            if n == 1:
                item = <object>PyList_GET_ITEM(row, 0)
                # (a bool, a NumPy int, an int past int64: the rows' own reading decides)
                if type(item) is int:
                    value = PyLong_AsLongLongAndOverflow(item, &overflow)
                    if not overflow:
                        self.at[self.count] = value
                        self.count += 1
                        return 0
            self.single = False
        return 0


def step_served(list outputs, dict request_states, object stop_reason):
    """Step every ServedText of an engine step's `outputs` (vLLM's EngineCoreOutputs; their
    request states in `request_states`): one decode_incremental_batch per tokenizer and per id
    position, the text each id settled left for the request's update. `stop_reason` is vLLM's
    FinishReason.STOP: a step that ends with it ends on the engine's own stop id, which is not
    rendered unless the output includes the stop string; update must be called with
    stop_terminated saying the same. The outputs vLLM's loop detokenizes are
    those of a known request whose output is no error for a request with a queue (a ServedText
    serves a sampling request: it has no pooling output); the others are left alone.

    Returns [(request state, output), ...] of those outputs that carry logprobs
    (`new_logprobs`), for the step's one lookup of their strings; None when none does."""
    cdef list batches = [], finishing = [], with_logprobs = None
    cdef _Batch batch = None
    cdef ServedText det
    cdef Py_ssize_t g, n_fed, n_outputs = PyList_GET_SIZE(outputs)
    cdef PyObject* found
    cdef object view
    cdef _OutputSlots slots
    slots.cls = NULL
    try:
        for out in outputs:
            found = PyDict_GetItemWithError(request_states, _field(&slots, out, 0))
            if found == NULL:
                continue
            state = <object>found
            det_object = state.detokenizer
            if not isinstance(det_object, ServedText):
                continue
            det = <ServedText>det_object
            if _field(&slots, out, 3) is not None and state.queue is not None:
                continue
            if _field(&slots, out, 4) is not None:
                if with_logprobs is None:
                    with_logprobs = []
                with_logprobs.append((state, out))
            ids = _field(&slots, out, 1)
            if not ids:
                continue
            if type(ids) is not list:
                raise NonIntegerIdError(f"request {det.request_id!r}: new_token_ids is a list of ids, got "
                                        f"{type(ids).__name__}")
            if det.pending_ids is not None:
                raise StreamStateError(f"request {det.request_id!r}: the output step did not take the text the "
                                       "previous batch stepped for it")
            reason = _field(&slots, out, 2)
            stop_terminated = reason is not None and reason == stop_reason
            if stop_terminated and not det.include_stop:
                row = ids[:len(ids) - 1]
            else:
                row = ids
            view = det.view
            if batch is None or batch.view is not view:
                for g in range(len(batches)):
                    if (<_Batch>batches[g]).view is view:
                        batch = <_Batch>batches[g]
                        break
                else:
                    batch = _Batch(view, n_outputs)
                    batches.append(batch)
            batch.add(row, det)
            det.pending_ids = ids
            det.ready = False
            det.ready_stop = stop_terminated
            det.pending_one = ""
            det.pending_hold = det.held_open
            det.pending_many = None
            if reason is not None:
                det.finishing = True
                finishing.append(det)
        if len(batches) > 1:
            # Several renderings (special tokens skipped, shown): every id checked before the
            # first batch moves a stream, so that a bad one leaves every stream as it was.
            for g in range(len(batches)):
                batch = <_Batch>batches[g]
                _check_rows(batch.view, batch.rows, batch.served)
        for g in range(len(batches)):
            batch = <_Batch>batches[g]
            if batch.longest <= 1:
                _step_once(batch)
            else:
                _step_each(batch)
    except BaseException:
        for g in range(len(batches)):
            for det_object in (<_Batch>batches[g]).served:
                det = <ServedText>det_object
                det.pending_ids = det.pending_one = det.pending_many = None
                det.finishing = False
        raise
    for det_object in finishing:
        det = <ServedText>det_object
        if det.stream.closed:
            continue
        flushed = det.stream.feed([], True)
        if det.pending_many is not None:
            n_fed = len(det.pending_many)
            det.pending_many[n_fed - 2] = det.pending_many[n_fed - 2] + flushed
            det.pending_many[n_fed - 1] = False
        else:
            det.pending_one = det.pending_one + flushed
            det.pending_hold = False
    # update's and get_next_output_text's work, request after request, while what each step made
    # is still in the cache (vLLM's loop then only takes it)
    for g in range(len(batches)):
        for det_object in (<_Batch>batches[g]).served:
            (<ServedText>det_object)._take_pending()
    return with_logprobs


cdef int _step_once(_Batch batch) except -1:
    """A step of at most one id per request: one batch call (the ids as one 1-D int64 buffer
    when every request brings one int: read in C, no list per row)."""
    cdef Py_ssize_t k, n = len(batch.rows)
    cdef ServedText det
    cdef list streams = batch.streams
    deltas = None
    if batch.single and batch.count == n:
        try:
            deltas = batch.view.decode_incremental_batch(memoryview(batch.packed).cast("q")[:n], streams)
        except (TokenizerError, TypeError, OverflowError):
            deltas = None  # nothing moved: the rows again, for the error that names the stream
    if deltas is None:
        try:
            deltas = batch.view.decode_incremental_batch(batch.rows, streams)
        except TokenizerError as exc:
            raise _request_named(exc, batch.served) from None
    cdef bytes holds = held_bytes_of(streams)
    cdef const unsigned char* hold = holds
    if type(deltas) is not list or PyList_GET_SIZE(deltas) != n or len(holds) != n:
        raise StreamStateError(f"a batch of {n} streams gave {len(deltas)} deltas")
    for k in range(n):
        det = <ServedText>PyList_GET_ITEM(batch.served, k)
        det.pending_one = <str>PyList_GET_ITEM(deltas, k)
        det.pending_hold = hold[k]
    return 0


cdef int _check_rows(object view, list rows, list served) except -1:
    """Every id of every row an int in the vocabulary, checked before any stream moves: in C,
    and through the kind's own check_ids (its typed error, naming the request) for a row that
    fails it."""
    cdef Py_ssize_t k, size = view.vocab_size
    cdef object value
    for k in range(len(rows)):
        for value in <list>rows[k]:
            if type(value) is not int or not 0 <= value < size:
                try:
                    view.check_ids(rows[k])
                except TokenizerError as exc:
                    raise type(exc)(f"request {(<ServedText>served[k]).request_id!r}: {exc}") from None
    return 0


cdef object _column(list rows, Py_ssize_t p, Py_ssize_t* at, Py_ssize_t n):
    """The p-th id of the rows at[0 ... n - 1], as a 1-D int64 buffer (checked ids)."""
    cdef bytearray packed = bytearray(n * 8)
    cdef long long* out = <long long*><char*>packed
    cdef Py_ssize_t k
    for k in range(n):
        out[k] = (<list>rows[at[k]])[p]
    return memoryview(packed).cast("q")


cdef int _step_each(_Batch batch) except -1:
    """A step of several ids per request (speculative decoding): one batch call per id position,
    so that each id's text, and whether the stream holds bytes after it, is known (DecodeStream
    decides id by id). Every id is checked before the first call moves a stream."""
    cdef list rows = batch.rows, served = batch.served
    cdef Py_ssize_t k, p, n = len(rows), count, longest = batch.longest
    cdef ServedText det
    cdef Py_ssize_t* at = <Py_ssize_t*>PyMem_Malloc(max(n, 1) * sizeof(Py_ssize_t))
    cdef const unsigned char* hold
    cdef bytes holds
    cdef list streams, parts
    if at == NULL:
        raise MemoryError()
    try:
        _check_rows(batch.view, rows, served)
        for k in range(n):
            (<ServedText>served[k]).pending_many = [None] * (2 * PyList_GET_SIZE(rows[k]))
        for p in range(longest):
            if p < batch.shortest:  # every request has a p-th id: the batch's own streams
                count = n
                if p == 0:
                    for k in range(n):
                        at[k] = k
                streams = batch.streams
            else:
                count = 0
                streams = []
                for k in range(n):
                    if PyList_GET_SIZE(rows[k]) > p:
                        at[count] = k
                        count += 1
                        streams.append((<ServedText>served[k]).stream)
            try:
                deltas = batch.view.decode_incremental_batch(_column(rows, p, at, count), streams)
            except TokenizerError as exc:  # (a stream's own error: a closed one, "stream k")
                raise _request_named(exc, [served[at[k]] for k in range(count)]) from None
            holds = held_bytes_of(streams)
            hold = holds
            if type(deltas) is not list or PyList_GET_SIZE(deltas) != count or len(holds) != count:
                raise StreamStateError(f"a batch of {count} streams gave {len(deltas)} deltas")
            for k in range(count):
                parts = (<ServedText>PyList_GET_ITEM(served, at[k])).pending_many
                parts[2 * p] = <object>PyList_GET_ITEM(deltas, k)
                parts[2 * p + 1] = hold[k] == 1
        for k in range(n):
            det = <ServedText>served[k]
            if not det.pending_many:  # no id fed (only the engine's own stop id): nothing settled
                det.pending_many = None
    finally:
        PyMem_Free(at)
    return 0
