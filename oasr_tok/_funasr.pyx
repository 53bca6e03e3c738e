# cython: language_level=3, boundscheck=True, wraparound=False
"""The funasr_char rendering machine, compiled: the token steps of FunASR's element rules and
the held end of the element list (see oasr_tok/kinds/funasr_char.py and
docs/kinds/funasr_char.md, which state the rules). It is the only implementation: the kind's
decode, its streaming and its token pieces all run it.

Attribution (token_pieces): a Track built with `owned=True` also records, for every element,
which tokens' text it holds (`segs`, parallel to `pend`: an int position, -1 for a separator
the rules insert, or a list of (position, text) for a word built from `@@` pieces), and
`attribute` turns the finished element list into one string per token."""

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
    cdef public list segs     # per element of pend: its owner(s), see the module docstring
    cdef public list wsegs    # (position, text) of each piece in the pending word
    cdef public Py_ssize_t at # position (in the caller's ids) of the token being stepped

    def __init__(self, tuple data=None, bint owned=False):
        self.segs = self.wsegs = None
        self.at = -1
        if owned:
            self.segs, self.wsegs = [], []
        if data is None:
            self.word, self.blank, self.digit, self.c1, self.c2, self.ws, self.started = "", False, False, 0, 0, "", False
            self.pend = []
        else:
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

    cdef inline void _put(self, str text, object owner):
        self.pend.append(text)
        if self.segs is not None:
            self.segs.append(owner)

    cdef inline void _drop(self):
        self.pend.pop()
        if self.segs is not None:
            self.segs.pop()

    cdef inline void _piece(self, str text):
        self.word += text
        if self.wsegs is not None:
            self.wsegs.append((self.at, text))

    cdef object _word_owners(self, str text, bint with_token):
        """Owners of the word element about to be appended: its pieces, then (if it is part
        of the word) the current token. Empties the pending pieces."""
        cdef list owners
        if self.segs is None:
            return None
        owners = self.wsegs
        self.wsegs = []
        if with_token:
            owners.append((self.at, text))
        return owners

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

    cdef _clean_word(self, str word, object owners):
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


# -- attribution: one string per token ----------------------------------------------------------

cpdef list attribute(list ids, list info, bint clean):
    """token_pieces: the text of decode(ids), cut into one string per id, each character on the
    token whose text printed it (docs/kinds/funasr_char.md, § Token pieces). `info[id]` is the
    kind's per-id tuple (class, machine text, sentence-Chinese, sentence-alpha, divergent,
    branch text); `ids` were checked by the caller."""
    cdef Py_ssize_t n = len(ids), k, kept = 0
    cdef list pieces = [""] * n
    cdef list entries = [None] * n
    cdef tuple entry
    cdef bint chinese = True, alpha = True
    cdef Track track = Track(None, True)
    for k in range(n):
        entry = <tuple>info[ids[k]]
        if <int>entry[0] == C_SKIP:
            continue
        entries[k] = entry
        kept += 1
        chinese = chinese and entry[2]
        alpha = alpha and entry[3]
    if kept == 0:
        return pieces
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
    _assign(track.pend, track.segs, pieces)
    return pieces


cdef void _spans(object owner, str element, bint upper, list owners, list texts):
    """Append the (owner, text) spans of one element."""
    cdef tuple span
    if isinstance(owner, list):
        for span in <list>owner:
            owners.append(span[0])
            texts.append((<str>span[1]).upper() if upper else span[1])
    else:
        owners.append(owner)
        texts.append(element.upper() if upper else element)


cdef void _assign(list pend, list segs, list pieces):
    """The abbreviation rule and the final strip over owned elements, then each span of text to
    its token. A span may only go to a token at or after the one that printed the text before
    it (pieces are in id order): a separator the rules inserted (owner -1), and a pending `@@`
    piece that FunASR carried past later tokens, go with the next span that can take them."""
    cdef list owners = [], texts = []
    cdef Py_ssize_t i = 0, j, t, m = len(pend), s, o, cur = -1
    cdef str text
    cdef list carry = []
    # abbr_dispose, as _abbreviate in the kind: a run of single letters separated by single
    # " " elements is upper-cased and loses its inner spaces.
    while i < m:
        if (element_kind(pend[i]) == K_LETTER and i + 2 < m and element_kind(pend[i + 1]) == K_SPACE
                and element_kind(pend[i + 2]) == K_LETTER):
            j = i + 2
            while j + 2 < m and element_kind(pend[j + 1]) == K_SPACE and element_kind(pend[j + 2]) == K_LETTER:
                j += 2
            for t in range(i, j + 1, 2):
                _spans(segs[t], pend[t], True, owners, texts)
            i = j + 1
        else:
            _spans(segs[i], pend[i], False, owners, texts)
            i += 1
    # str.strip() of the joined text, span by span.
    s = len(texts)
    for i in range(s):
        text = (<str>texts[i]).lstrip()
        texts[i] = text
        if text:
            break
    for i in range(s - 1, -1, -1):
        text = (<str>texts[i]).rstrip()
        texts[i] = text
        if text:
            break
    for i in range(s):
        text = <str>texts[i]
        if not text:
            continue
        o = <Py_ssize_t>owners[i]
        if o < cur or o < 0:
            carry.append(text)
            continue
        if carry:
            carry.append(text)
            text = "".join(carry)
            carry = []
        pieces[o] = <str>pieces[o] + text
        cur = o
    if carry and cur >= 0:  # cannot happen (the last span is never carried); kept whole anyway
        pieces[cur] = <str>pieces[cur] + "".join(carry)
