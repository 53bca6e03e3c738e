# cython: language_level=3, boundscheck=True, wraparound=False
"""The funasr_char rendering machine, compiled: the token steps of FunASR's element rules and
the held end of the element list (see oasr_tok/kinds/funasr_char.py and
docs/kinds/funasr_char.md, which state the rules). It is the only implementation: the kind's
decode and its streaming both run it."""

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

    def __init__(self, tuple data=None):
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
                self.pend.pop()
            self.pend.append(text)
            self.blank = False
        elif cls == C_PIECE:
            self.word += text
            self.blank = False
        elif cls == C_WORD:
            self.pend.append(self.word + text)
            self.pend.append(" ")
            self.word = ""
            self.blank = True
        else:  # OTHER: appended; the pending word and the pop flag stay as they are
            self.pend.append(text)

    cpdef clean_step(self, int cls, str text):
        if cls == C_PIECE:
            self.word += text
            self.blank = False
            return
        if cls == C_WORD or (cls == C_DIGITS and self.word):
            self._clean_word(self.word + text)
            return
        if self.word:  # a piece that nothing continued: it ends here, as a word of its own
            self._clean_word(self.word)
        if cls == C_CJK:
            if self.blank:
                self.pend.pop()
            self.pend.append(text)
            self.digit = False
        elif cls == C_DIGITS:
            self.pend.append(text)
            self.digit = True
        else:
            self.pend.append(text)
            self.digit = False
        self.blank = False

    cdef _clean_word(self, str word):
        if self.digit:
            self.pend.append(" ")
        self.pend.append(word)
        self.pend.append(" ")
        self.word = ""
        self.blank = True
        self.digit = False

    cpdef clean_close(self):
        """End of sentence in clean mode: a pending piece is kept as a word."""
        if self.word:
            self._clean_word(self.word)

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
