# cython: language_level=3, boundscheck=True, wraparound=False
"""The funasr_char rendering machine, compiled: the token steps of FunASR's element rules and
the held end of the element list (see oasr_tok/kinds/funasr_char.py and
docs/kinds/funasr_char.md, which state the rules). It is the only implementation: the kind's
decode, its streaming and its token pieces all run it.

Attribution (token_pieces): a Track built with `owned=True` also records, for every element,
which tokens' text it holds (an _Owners: a token position, -1 for a separator the rules
insert, or the (position, text) spans of a word built from `@@` pieces), and `attribute` turns
the finished element list into one string per token. The record is kept in C arrays: a long
transcript makes no Python object per token, so the cost per token stays flat."""

from cpython.mem cimport PyMem_Free, PyMem_Realloc

from oasr_tok._engine.ids cimport ID_BLOCK, IdBuffer, id_block, read_ids, read_ids_in_place, release_ids
from oasr_tok._engine.ids import ReadAgain

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object)


# Token classes (the kind module imports these: one definition).
cdef enum:
    C_SKIP = 0
    C_CJK = 1
    C_PIECE = 2
    C_WORD = 3
    C_OTHER = 4
    C_DIGITS = 5

SKIP, CJK, PIECE, WORD, OTHER, DIGITS = C_SKIP, C_CJK, C_PIECE, C_WORD, C_OTHER, C_DIGITS

# Kinds of element the abbreviation rule looks at.
cdef enum:
    K_OTHER = 0
    K_LETTER = 1
    K_SPACE = 2


cdef inline int element_kind(str element):
    cdef Py_UCS4 ch
    if len(element) != 1:
        return K_OTHER
    ch = element[0]
    if ch == u" ":
        return K_SPACE
    # FunASR: len(w) == 1 and w.encode("utf-8").isalpha() -- an ASCII letter.
    if (u"a" <= ch <= u"z") or (u"A" <= ch <= u"Z"):
        return K_LETTER
    return K_OTHER


cdef Py_ssize_t _abbreviation_end(list elements, Py_ssize_t i, Py_ssize_t m) except -2:
    """abbr_dispose, the one statement of its runs: the index of the last letter of the run of
    single ASCII letters separated by single " " elements that starts at `i` (two letters or
    more), or -1 when none starts there. Track's streaming steps apply the same rule online
    (their tests check them against this)."""
    cdef Py_ssize_t j
    if not (element_kind(elements[i]) == K_LETTER and i + 2 < m and element_kind(elements[i + 1]) == K_SPACE
            and element_kind(elements[i + 2]) == K_LETTER):
        return -1
    j = i + 2
    while j + 2 < m and element_kind(elements[j + 1]) == K_SPACE and element_kind(elements[j + 2]) == K_LETTER:
        j += 2
    return j


def abbreviate(list elements):
    """`elements` after abbr_dispose: each run (see _abbreviation_end) becomes one upper-cased
    element without its inner spaces."""
    cdef list out = []
    cdef Py_ssize_t i = 0, j, m = len(elements)
    while i < m:
        j = _abbreviation_end(elements, i, m)
        if j < 0:
            out.append(elements[i])
            i += 1
        else:
            out.append("".join(elements[i:j + 1:2]).upper())
            i = j + 1
    return out


cdef class Track:
    """One rendering in progress: the token machine (pending `@@` word, whether the last
    element may still be popped, whether it ended with digits) and the held end of the element
    list, with what the abbreviation and strip rules need to know about what was released."""

    cdef public str word      # the pending `@@` word
    cdef public bint blank    # FunASR's alpha_blank: a CJK token would pop the last element
    cdef public bint digit    # (clean mode) the last element came from a digit token
    cdef public list pend     # elements not released yet (a few at most)
    cdef public int c1, c2    # kinds of the last two released elements
    cdef public str ws        # released trailing whitespace, held for the final strip
    cdef public bint started  # something visible was emitted (the leading strip is over)
    # Attribution only (None otherwise, so the streaming path pays one test per element):
    cdef _Owners own          # who printed each element of pend
    cdef public Py_ssize_t at  # position (in the caller's ids) of the token being stepped

    def __init__(self, tuple data=None, bint owned=False):
        self.own = _Owners() if owned else None
        self.at = -1
        if data is None:
            self.word, self.blank, self.digit, self.ws, self.started = "", False, False, "", False
            self.c1 = self.c2 = 0
            self.pend = []
        else:
            if not _frozen_track(data):
                raise ValueError("not the frozen data of a funasr_char Track")
            if owned and data[3]:
                # The owners record starts empty: it cannot say who printed elements that exist already.
                raise ValueError("an owned Track starts with no pending elements")
            self.word, self.blank, self.digit, pend, self.c1, self.c2, self.ws, self.started = data
            self.pend = list(pend)

    cpdef tuple freeze(self):
        """Plain immutable data for the stream state (copy.deepcopy forks it)."""
        return (self.word, self.blank, self.digit, tuple(self.pend), self.c1, self.c2, self.ws, self.started)

    cpdef Track copy(self):
        return Track(self.freeze())

    # -- the machine: one token's effect on the element list ---------------------------------

    cpdef parity_step(self, int cls, str text):
        if cls == C_CJK:
            if self.blank:
                self._drop()
            self._put(text, self.at)
            self.blank = False
        elif cls == C_PIECE:
            self._piece(text)
            self.blank = False
        elif cls == C_WORD:
            self._put(self.word + text, self._word_owners(text, True))
            self._put(" ", -1)
            self.word = ""
            self.blank = True
        else:  # OTHER: appended; the pending word and the pop flag stay as they are
            self._put(text, self.at)

    # Element bookkeeping: the text, and in an owned track who printed it.

    cdef inline int _put(self, str text, Py_ssize_t owner) except -1:
        self.pend.append(text)
        if self.own is not None:
            self.own.element(owner)
        return 0

    cdef inline int _drop(self) except -1:
        if self.own is not None and (self.own.n_seg <= 0 or self.own.n_seg != len(self.pend)):
            raise ValueError("Track: element owners out of step with the elements")
        self.pend.pop()
        if self.own is not None:
            self.own.n_seg -= 1
        return 0

    cdef inline int _piece(self, str text) except -1:
        self.word += text
        if self.own is not None:
            self.own.span(self.at, text)
        return 0

    cdef Py_ssize_t _word_owners(self, str text, bint with_token) except? -1:
        """Owner of the word element about to be appended: its pieces, then (if it is part of
        the word) the current token."""
        if self.own is None:
            return -1
        if with_token:
            self.own.span(self.at, text)
        return self.own.word()

    cpdef clean_step(self, int cls, str text):
        if cls == C_PIECE:
            self._piece(text)
            self.blank = False
            return
        if cls == C_WORD or (cls == C_DIGITS and self.word):
            self._clean_word(self.word + text, self._word_owners(text, True))
            return
        if self.word:  # a piece that nothing continued: it ends here, as a word of its own
            self._clean_word(self.word, self._word_owners("", False))
        if cls == C_CJK:
            if self.blank:
                self._drop()
            self._put(text, self.at)
            self.digit = False
        elif cls == C_DIGITS:
            self._put(text, self.at)
            self.digit = True
        else:
            self._put(text, self.at)
            self.digit = False
        self.blank = False

    cdef _clean_word(self, str word, Py_ssize_t owners):
        if self.digit:
            self._put(" ", -1)
        self._put(word, owners)
        self._put(" ", -1)
        self.word = ""
        self.blank = True
        self.digit = False

    cpdef clean_close(self):
        """End of sentence in clean mode: a pending piece is kept as a word."""
        if self.word:
            self._clean_word(self.word, self._word_owners("", False))

    # -- the held end: release every element whose rendering no later token can change ------

    cpdef settle(self, list out, bint final=False):
        cdef list pend = self.pend
        cdef Py_ssize_t n
        cdef int kind
        cdef str element, rendered
        while pend:
            n = len(pend)
            if n == 1 and self.blank and not final:
                break  # a CJK token may still pop it
            element = pend[0]
            kind = element_kind(element)
            if kind == K_LETTER:
                if self.c1 == K_SPACE and self.c2 == K_LETTER:
                    rendered = element.upper()  # continues a run
                elif n >= 3 and pend[1] == " ":
                    rendered = element.upper() if element_kind(pend[2]) == K_LETTER else element
                elif n >= 2 and pend[1] != " ":
                    rendered = element
                elif final:
                    rendered = element
                else:
                    break  # "x" + " ": a letter may follow and start a run
            elif kind == K_SPACE and self.c1 == K_LETTER:
                if n >= 2:
                    rendered = "" if element_kind(pend[1]) == K_LETTER else " "
                elif final:
                    rendered = " "
                else:
                    break  # inside a run if a letter follows
            else:
                rendered = element
            del pend[0]
            self.c2, self.c1 = self.c1, kind
            if rendered:
                self._emit(rendered, out)

    cdef _emit(self, str text, list out):
        # The final strip(): leading whitespace is dropped for good, trailing whitespace is
        # held until something visible follows it.
        cdef str body
        if not self.started:
            text = text.lstrip()
            if not text:
                return
        body = text.rstrip()
        if body:
            out.append(self.ws + body if self.ws else body)
            self.started = True
            self.ws = text[len(body):]
        else:
            self.ws += text

    cpdef str rest(self, bint clean):
        """What this track adds if the sentence ends now (the track itself is unchanged)."""
        cdef str element
        cdef Track probe
        cdef list out
        cdef bint visible = clean and bool(self.word)
        if not visible:
            for element in self.pend:
                if element and not element.isspace():
                    visible = True
                    break
        if not visible:
            return ""  # the usual case (nothing, or the space after a word): the strip takes it
        probe = self.copy()
        if clean:
            probe.clean_close()
        out = []
        probe.settle(out, True)
        return "".join(out)


cdef bint _frozen_track(tuple data):
    """Whether `data` is what Track.freeze makes: (word, blank, digit, pending elements, kind of
    the last two released elements, held whitespace, started)."""
    if len(data) != 8:
        return False
    word, blank, digit, pend, c1, c2, ws, started = data
    if type(word) is not str or type(ws) is not str or type(pend) is not tuple:
        return False
    if type(blank) is not bool or type(digit) is not bool or type(started) is not bool:
        return False
    if type(c1) is not int or type(c2) is not int or not (K_OTHER <= c1 <= K_SPACE and K_OTHER <= c2 <= K_SPACE):
        return False
    if ws and not ws.isspace():
        return False
    for element in <tuple>pend:
        if type(element) is not str:
            return False
    return True


# -- attribution: one string per token ----------------------------------------------------------

cpdef list attribute(object ids, list info, bint clean):
    """token_pieces: the text of decode(ids), cut into one string per id, each character on the
    token whose text printed it (docs/kinds/funasr_char.md, § Token pieces). `info[id]` is the
    kind's per-id tuple (class, machine text, sentence-Chinese, sentence-alpha, divergent,
    branch text), one per id of the vocabulary; `ids` (any id sequence or buffer) are read
    where they are and checked as check_ids checks them, with no Python int made per id."""
    cdef IdBuffer buf
    read_ids_in_place(&buf, ids, len(info))
    try:
        return _attribute(&buf, info, clean)
    except ReadAgain:  # (see _engine/ids.pxd) the walk has no effect: walked again over a copy
        pass
    finally:
        release_ids(&buf)
    read_ids(&buf, ids, len(info))
    try:
        return _attribute(&buf, info, clean)
    finally:
        release_ids(&buf)


cdef list _attribute(const IdBuffer* buf, list info, bint clean):
    cdef Py_ssize_t n = buf.n, k, kept = 0, token_id
    cdef list pieces = [""] * n
    cdef list entries = [None] * n
    cdef tuple entry
    cdef bint chinese = True, alpha = True
    cdef object raw
    cdef Py_ssize_t scratch[ID_BLOCK]
    cdef const Py_ssize_t* block
    cdef Py_ssize_t start, j
    for start in range(0, n, ID_BLOCK):
        block = id_block(buf, start, min(<Py_ssize_t>ID_BLOCK, n - start), scratch)
        for j in range(min(<Py_ssize_t>ID_BLOCK, n - start)):
            k = start + j
            token_id = block[j]
            raw = info[token_id]  # (in range: checked against len(info), and info is bounds-checked)
            if type(raw) is not tuple or len(<tuple>raw) != 6:
                raise TypeError(f"attribute: info[{token_id}] is not a 6-tuple")
            entry = <tuple>raw
            if <int>entry[0] == C_SKIP:
                continue
            entries[k] = entry
            kept += 1
            chinese = chinese and entry[2]
            alpha = alpha and entry[3]
    if kept == 0:
        return pieces
    cdef Track track = Track(None, True)
    if clean:
        for k in range(n):
            entry = <tuple>entries[k]
            if entry is not None:
                track.at = k
                track.clean_step(entry[0], entry[1])
        track.clean_close()
    elif chinese or alpha:
        # FunASR's whole-sentence branches: every token as its branch text (the all-alpha
        # branch puts a space after each); nothing is popped or carried.
        for k in range(n):
            entry = <tuple>entries[k]
            if entry is not None:
                track._put(entry[5], k)
                if not chinese:
                    track._put(" ", -1)
    else:
        for k in range(n):
            entry = <tuple>entries[k]
            if entry is not None:
                track.at = k
                track.parity_step(entry[0], entry[1])
    _assign(track.pend, track.own, pieces)
    return pieces


cdef int _grow(Py_ssize_t **array, Py_ssize_t *capacity, Py_ssize_t need) except -1:
    cdef Py_ssize_t size
    cdef void *grown
    if need <= capacity[0]:
        return 0
    size = max(need, 2 * capacity[0], 64)
    grown = PyMem_Realloc(array[0], size * sizeof(Py_ssize_t))
    if grown == NULL:
        raise MemoryError()
    array[0] = <Py_ssize_t *>grown
    capacity[0] = size
    return 0


cdef class _Owners:
    """Who printed each element of an owned Track's pend. seg[i] is a token position, -1 for a
    separator the rules inserted, or -2 - w for word w, whose (position, text) spans are
    span_pos/span_text[word_at[2w]:word_at[2w + 1]]. The spans of the pending `@@` word run
    from `pending` to the end: only one word is ever pending, so words' spans never interleave."""

    cdef Py_ssize_t *seg
    cdef Py_ssize_t n_seg, cap_seg
    cdef Py_ssize_t *span_pos
    cdef Py_ssize_t n_span, cap_span
    cdef list span_text
    cdef Py_ssize_t *word_at
    cdef Py_ssize_t n_word, cap_word
    cdef Py_ssize_t pending

    def __cinit__(self):
        self.span_text = []

    def __dealloc__(self):
        PyMem_Free(self.seg)
        PyMem_Free(self.span_pos)
        PyMem_Free(self.word_at)

    cdef inline int element(self, Py_ssize_t owner) except -1:
        if self.n_seg == self.cap_seg:
            _grow(&self.seg, &self.cap_seg, self.n_seg + 1)
        self.seg[self.n_seg] = owner
        self.n_seg += 1
        return 0

    cdef int span(self, Py_ssize_t position, str text) except -1:
        if self.n_span == self.cap_span:
            _grow(&self.span_pos, &self.cap_span, self.n_span + 1)
        self.span_text.append(text)
        self.span_pos[self.n_span] = position
        self.n_span += 1
        return 0

    cdef Py_ssize_t word(self) except? -1:
        """Close the pending word's spans; the owner code for its element."""
        if 2 * self.n_word + 2 > self.cap_word:
            _grow(&self.word_at, &self.cap_word, 2 * self.n_word + 2)
        self.word_at[2 * self.n_word] = self.pending
        self.word_at[2 * self.n_word + 1] = self.n_span
        self.pending = self.n_span
        self.n_word += 1
        return -2 - (self.n_word - 1)


cdef inline bint _visible(str text):
    return PyUnicode_GET_LENGTH(text) > 0 and not text.isspace()


cdef class _Cut:
    """Hands the spans of the finished element list, in order, to their tokens: the final
    str.strip() span by span (`last` marks the last span with visible text), then each span to
    its token. A span may only go to a token at or after the one that printed the text before
    it (pieces are in id order): a separator the rules inserted (owner -1), and a pending `@@`
    piece that FunASR carried past later tokens, go with the next span that can take them."""

    cdef list pieces
    cdef bint started
    cdef Py_ssize_t cur
    cdef list carry

    cdef int put(self, Py_ssize_t owner, str text, bint upper, bint last) except -1:
        if upper:
            text = text.upper()
        if not self.started:
            text = text.lstrip()
            if not text:
                return 0
            self.started = True
        if last:
            text = text.rstrip()
        if not text:
            return 0
        if owner < self.cur or owner < 0:
            self.carry.append(text)
            return 0
        if self.carry:
            self.carry.append(text)
            text = "".join(self.carry)
            del self.carry[:]
        self.pieces[owner] = <str>self.pieces[owner] + text
        self.cur = owner
        return 0

    cdef int finish(self) except -1:
        if self.carry and self.cur >= 0:  # cannot happen (the last span is never carried)
            self.pieces[self.cur] = <str>self.pieces[self.cur] + "".join(self.carry)
        return 0


cdef bint _element(list pend, _Owners own, _Cut cut, Py_ssize_t t, bint upper,
                   Py_ssize_t last_el, Py_ssize_t last_span) except -1:
    """Hand element t's spans to `cut`; True once the last visible span has gone."""
    cdef Py_ssize_t code = own.seg[t], w, s
    if code <= -2:
        w = -2 - code
        for s in range(own.word_at[2 * w], own.word_at[2 * w + 1]):
            cut.put(own.span_pos[s], <str>own.span_text[s], upper, t == last_el and s == last_span)
            if t == last_el and s == last_span:
                return True
        return False
    cut.put(code, <str>pend[t], upper, t == last_el)
    return t == last_el


cdef int _assign(list pend, _Owners own, list pieces) except -1:
    """The abbreviation rule and the final strip over owned elements, each span of text to its
    token (see _Cut)."""
    cdef Py_ssize_t m = len(pend), i, j, t, w, s, code
    cdef Py_ssize_t last_el = -1, last_span = -1
    if own.n_seg != m:
        raise AssertionError("element owners out of step with the elements")
    # str.strip() of the joined text keeps nothing after the last span with visible text.
    i = m - 1
    while i >= 0 and last_el < 0:
        code = own.seg[i]
        if code <= -2:
            w = -2 - code
            for s in range(own.word_at[2 * w + 1] - 1, own.word_at[2 * w] - 1, -1):
                if _visible(<str>own.span_text[s]):
                    last_el, last_span = i, s
                    break
        elif _visible(<str>pend[i]):
            last_el = i
        i -= 1
    if last_el < 0:
        return 0  # nothing visible: every piece stays ""
    cdef _Cut cut = _Cut.__new__(_Cut)
    cut.pieces, cut.started, cut.cur, cut.carry = pieces, False, -1, []
    # abbr_dispose (_abbreviation_end): a run of single letters separated by single " "
    # elements is upper-cased and loses its inner spaces.
    i = 0
    while i < m:
        j = _abbreviation_end(pend, i, m)
        if j >= 0:
            for t in range(i, j + 1, 2):
                if _element(pend, own, cut, t, True, last_el, last_span):
                    return cut.finish()
            i = j + 1
        else:
            if _element(pend, own, cut, i, False, last_el, last_span):
                return cut.finish()
            i += 1
    return cut.finish()
