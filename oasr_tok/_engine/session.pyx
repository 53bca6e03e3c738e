# cython: language_level=3, boundscheck=True, wraparound=False
"""A re-decoding session: the text a recogniser that re-prompts itself has produced, and the
re-prompt prefix "k tokens back" exactly as qwen-asr's `streaming_transcribe` computes it
(docs/decoding.md § Re-decoding sessions; tok.new_session makes one).

Qwen3-ASR's streaming (qwen-asr 0.0.6) prompts every chunk with the text so far minus its last
k tokens: `cur_ids = encode(raw)`, then `decode(cur_ids[:len(cur_ids) - k])`, k widened by one
while that prefix holds a U+FFFD; the raw text becomes that prefix plus what the model generates
next. Done so, each chunk re-encodes and re-decodes the whole transcript.

Here the session keeps the raw text in a growable buffer and, beside it, checkpoints: positions
p of the text at which encode(text) == encode(text[:p]) + encode(text[p:]) for any text that
follows (a hard boundary of the tokenizer's pre-tokenizer and normaliser, decided from the two
characters around p: the rule below), each with len(encode(text[:p])). A rollback re-encodes
the text from the last checkpoint on (what the last chunk may have changed), finds the cut
among those tokens, and decodes only them: the whole text's encode before the checkpoint is
the same tokens whatever follows, and its decode is the text itself (the kind's decode is the
pieces' bytes joined: the byte-level tables). A cut further back than the last checkpoint
re-encodes the one segment between two checkpoints that holds it.

Which boundaries are hard is the kind's to say (its `_session_plan()`, here a rule name the
engine knows); a kind without one gets qwen-asr's own computation over the whole text, exact
and O(transcript) per rollback.
"""
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc

from oasr_tok._engine.growtext cimport GrowText

from oasr_tok._engine.ids import check_ids
from oasr_tok._engine.join import join_pieces
from oasr_tok.errors import (
    EncodeNotSupportedError,
    KeepSpecialsNotSupportedError,
    NonIntegerRollbackError,
    RollbackError,
    StreamStateError,
    UnknownEnvelopeError,
)
from oasr_tok._engine.travel import arrive, carry
from oasr_tok.outputs.envelopes import new_parser

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    int PyUnicode_KIND(object)
    void* PyUnicode_DATA(object)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    char* PyBytes_AS_STRING(object)
    Py_ssize_t PyBytes_GET_SIZE(object)

#: Checkpoints are kept at least this many characters apart (the last one excepted, which is
#: the text's last hard boundary): a rollback further back than the last one re-encodes at most
#: one such stretch, and a session holds one checkpoint (16 bytes) per this many characters.
SPACING = 64
cdef Py_ssize_t _SPACING = SPACING

#: The envelope a session takes apart: the re-decoding model's own (qwen-asr's `language X<asr_text>`).
ENVELOPES = ("qwen3_asr",)

cdef enum:
    RULE_NONE = 0
    RULE_QWEN2 = 1

_RULES = {"qwen2": RULE_QWEN2}
cdef str _FFFD = "\ufffd"
cdef bytes _FFFD_BYTES = b"\xef\xbf\xbd"
cdef str _TAG = "<asr_text>"  # where Qwen3-ASR's header ends


# -- the boundary rule of Qwen2's pre-tokenizer ----------------------------------------------
#
# Qwen2's Split regex (Qwen2, Qwen2.5, Qwen3, Qwen3-ASR tokenizer.json), run left to right,
# leftmost-first, with no look-behind:
#     (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} | ?[^\s\p{L}\p{N}]+[\r\n]*
#     | \s*[\r\n]+ | \s+(?!\S) | \s+
# then NFC before it and byte-level BPE within each piece. A position p between characters a
# and b is hard when every match that starts before p ends at or before p, and decides so
# without reading past p differently than the end of the text would (then the pieces from p on
# are those of the text from p alone), and NFC neither composes nor reorders across p:
#   * b is a space or a tab and a is not white space: every run stops before a space as at the
#     end (letters, digits, punctuation; `[\r\n]*` takes no space), and no run of white space
#     ends at p, so `\s+(?!\S)` never looks at b;
#   * b is an ASCII digit and a is not white space: likewise (no alternative takes a digit into
#     a longer match);
#   * a is an ASCII digit: a digit is a match of its own, and no alternative reads past it;
#   * a is a letter and b punctuation, both from the tables below: the letters stop, and
#     punctuation after a letter starts a match of its own;
#   * a is \r or \n and b punctuation of the table: `\s*[\r\n]+` ends at a, as at the end.
# The characters the rule names are NFC starters that compose with nothing before them (no
# character decomposes to a digit and another), and those it names as b compose with nothing
# after them either (a space, a digit, the punctuation below; not a letter, which a combining
# mark after it may turn into another), so NFC does not cross p and keeps the pair one the rule
# names (where b may be anything, after a digit, the rule does not look at it): a checkpoint's
# pair is always one the rule names. The tables hold only characters whose categories have not
# changed since early Unicode versions, so the
# regex engine's tables and Python's agree on them. tests/engine/test_session.py checks the rule
# against the tokenizers runtime on random texts of every script, split at every hard boundary.

cdef inline bint _maybe_space(Py_UCS4 c) noexcept:
    """White space in any Unicode version, or in Python's str.isspace (a superset kept safe)."""
    return (c <= 0x20 and (c == 0x20 or 0x09 <= c <= 0x0D or 0x1C <= c <= 0x1F)) or c == 0x85 or c == 0xA0 \
        or c == 0x1680 or c == 0x180E or 0x2000 <= c <= 0x200B or c == 0x2028 or c == 0x2029 or c == 0x202F \
        or c == 0x205F or c == 0x3000 or c == 0xFEFF


cdef inline bint _digit(Py_UCS4 c) noexcept:
    return 0x30 <= c <= 0x39


cdef inline bint _letter(Py_UCS4 c) noexcept:
    """A letter (\\p{L}) of a long-assigned block, NFC-stable and composing with nothing before it."""
    if c < 0x80:
        return 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A
    if c < 0x180:  # Latin-1 letters and Latin Extended-A
        return 0xC0 <= c and c != 0xD7 and c != 0xF7
    if c < 0x700:  # Greek, Cyrillic, Hebrew, Arabic letters
        return (0x391 <= c <= 0x3A1 or 0x3A3 <= c <= 0x3C9 or 0x410 <= c <= 0x44F or 0x5D0 <= c <= 0x5EA
                or 0x621 <= c <= 0x63A or 0x641 <= c <= 0x64A)
    if c < 0x3000:  # Devanagari vowels and consonants, Thai consonants
        return 0x905 <= c <= 0x939 or 0xE01 <= c <= 0xE2E
    # Hiragana, Katakana, CJK Unified Ideographs (Unicode 1.1), Hangul syllables
    return 0x3041 <= c <= 0x3094 or 0x30A1 <= c <= 0x30FA or 0x4E00 <= c <= 0x9FA5 or 0xAC00 <= c <= 0xD7A3


cdef inline bint _punctuation(Py_UCS4 c) noexcept:
    """Punctuation or a symbol (neither \\s, \\p{L} nor \\p{N}), NFC-stable and composing with nothing
    before or after it."""
    if c < 0x80:  # not < = >: NFC composes each with a U+0338 after it (into ≮ ≠ ≯)
        return 0x21 <= c <= 0x2F or c == 0x3A or c == 0x3B or c == 0x3F or c == 0x40 or 0x5B <= c <= 0x60 \
            or 0x7B <= c <= 0x7E
    return (c == 0xA1 or c == 0xAB or c == 0xBB or c == 0xBF or c == 0x2018 or c == 0x2019 or c == 0x201C
            or c == 0x201D or c == 0x2026 or c == 0x3001 or c == 0x3002 or 0x300A <= c <= 0x3011 or c == 0xFF01
            or c == 0xFF08 or c == 0xFF09 or c == 0xFF0C or c == 0xFF1A or c == 0xFF1B or c == 0xFF1F)


cdef inline bint _qwen2_hard(Py_UCS4 a, Py_UCS4 b) noexcept:
    if b == 0x20 or b == 0x09 or _digit(b):
        return not _maybe_space(a)
    if _digit(a):
        return True
    if _letter(a):
        return _punctuation(b)
    if a == 0x0A or a == 0x0D:
        return _punctuation(b)
    return False


def hard_boundary(str rule, str a, str b):
    """Whether the rule `rule` ("qwen2") says the position between the characters `a` and `b` is
    a hard boundary (an added token written across it aside: the session checks those too)."""
    if rule not in _RULES or len(a) != 1 or len(b) != 1:
        raise ValueError("hard_boundary takes a known rule and two characters")
    return _qwen2_hard(ord(a), ord(b))


# -- the session -----------------------------------------------------------------------------

cdef Py_ssize_t _count(object value, str name) except -1:
    """value as a count (an exact int >= 0), else a typed error naming it."""
    if type(value) is not int:
        raise NonIntegerRollbackError(f"{name} must be an int >= 0, got {type(value).__name__} {value!r}"[:200])
    if value < 0:
        raise RollbackError(f"{name} must be an int >= 0, got {value}")
    if value > (<Py_ssize_t>1 << 62):
        raise RollbackError(f"{name} must be an int >= 0 that a session can count, got {value}")
    return <Py_ssize_t>value


cdef class Session:
    """A re-decoding session (tok.new_session(...)): the text a recogniser that re-prompts itself
    with its own output has produced so far, rolled back before each chunk to the re-prompt
    prefix exactly as qwen-asr's `streaming_transcribe` computes it, at a cost that does not
    grow with the transcript. docs/decoding.md § Re-decoding sessions.

    Example:
        >>> from oasr_tok.demo import DATA
        >>> import oasr_tok
        >>> tok = oasr_tok.load(DATA / "huggingface")
        >>> session = tok.new_session(unfixed_chunk_num=1, unfixed_token_num=2, envelope="qwen3_asr")
        >>> session.rollback()  # chunk 0: no prefix yet
        0
        >>> session.feed(tok.encode("language English<asr_text>the café opens"))  # what the model said
        >>> session.text, session.envelope["language"]
        ('the café opens', 'English')
        >>> session.rollback()  # chunk 1: the text so far less its last 2 tokens
        29
        >>> session.prefix  # the chunk's prompt ends with it; the model goes on from there
        'language English<asr_text>the café op'
        >>> session.feed(tok.encode("ens at nine"))
        >>> session.text
        'the café opens at nine'
    """

    cdef readonly object tokenizer
    cdef readonly Py_ssize_t unfixed_chunk_num
    cdef readonly Py_ssize_t unfixed_token_num
    cdef readonly object envelope_format
    cdef readonly Py_ssize_t chunk
    cdef GrowText kept             # the re-prompt prefix of the last rollback (the raw text before the chunk's ids)
    cdef list chunk_ids            # the ids fed since the last rollback
    cdef object chunk_text         # decode(chunk_ids), None until asked for
    cdef Py_ssize_t* cp_pos        # checkpoints: positions in `kept`, strictly increasing, cp_pos[0] == 0
    cdef Py_ssize_t* cp_tok        # ... and len(encode(kept[:cp_pos[i]])), cp_tok[0] == 0
    cdef Py_ssize_t n_cp, cap_cp
    cdef Py_ssize_t fffd           # where kept's first U+FFFD is, or -1
    # what the tokenizer gives (shared by every session of it)
    cdef int rule
    cdef object forbidden          # frozenset of pair codes (a << 21 | b) an added token is written across
    cdef tuple pieces              # id -> bytes, special ids' text included (the joined decode)
    cdef str errors
    cdef object encode             # text -> list of ids: the whole text's encode, as qwen-asr's tokenizer.encode
    cdef object decode_kept        # ids -> text with special ids rendered (qwen-asr's tokenizer.decode)
    cdef object envelope_cache     # (valid_below, fields, start of the words) or None
    cdef bint busy

    def __init__(self, *args, **kwargs):
        raise TypeError("a Session is made by tok.new_session(...)")

    def __cinit__(self):
        self.cp_pos = NULL
        self.cp_tok = NULL
        self.n_cp = 0
        self.cap_cp = 0

    def __dealloc__(self):
        PyMem_Free(self.cp_pos)
        PyMem_Free(self.cp_tok)

    # -- checkpoints --------------------------------------------------------------------------

    cdef int _reserve(self, Py_ssize_t count) except -1:
        cdef Py_ssize_t size
        cdef Py_ssize_t* grown_pos
        cdef Py_ssize_t* grown_tok
        if count <= self.cap_cp:
            return 0
        size = self.cap_cp * 2 if self.cap_cp >= 4 else 4
        while size < count:
            size *= 2
        grown_pos = <Py_ssize_t*>PyMem_Realloc(self.cp_pos, size * sizeof(Py_ssize_t))
        if grown_pos == NULL:
            raise MemoryError()
        self.cp_pos = grown_pos
        grown_tok = <Py_ssize_t*>PyMem_Realloc(self.cp_tok, size * sizeof(Py_ssize_t))
        if grown_tok == NULL:
            raise MemoryError()
        self.cp_tok = grown_tok
        self.cap_cp = size
        return 0

    cdef void _add_checkpoint(self, Py_ssize_t pos, Py_ssize_t tokens) noexcept:
        """Append (room reserved): the last one is replaced while it is nearer than SPACING
        characters to the one before it, so the last is always the newest hard boundary."""
        if self.n_cp >= 2 and pos - self.cp_pos[self.n_cp - 2] < _SPACING:
            self.n_cp -= 1
        self.cp_pos[self.n_cp] = pos
        self.cp_tok[self.n_cp] = tokens
        self.n_cp += 1

    cdef Py_ssize_t _segment_of_token(self, Py_ssize_t target) noexcept:
        """The last checkpoint at or before token `target`."""
        cdef Py_ssize_t lo = 0, hi = self.n_cp - 1, mid
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.cp_tok[mid] <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    cdef Py_ssize_t _segment_of_char(self, Py_ssize_t pos) noexcept:
        """The last checkpoint at or before character `pos`."""
        cdef Py_ssize_t lo = 0, hi = self.n_cp - 1, mid
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.cp_pos[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    cdef bint _hard(self, Py_UCS4 a, Py_UCS4 b) except -1:
        if self.rule != RULE_QWEN2 or not _qwen2_hard(a, b):
            return False
        return ((<Py_ssize_t>a << 21) | <Py_ssize_t>b) not in self.forbidden

    # -- what it holds ------------------------------------------------------------------------

    cdef int _check_free(self) except -1:
        if self.busy:
            raise StreamStateError("this session is being rolled back by another call (another thread); "
                                   "use it once that call has returned")
        return 0

    cdef str _chunk_text(self):
        if self.chunk_text is None:
            self.chunk_text = self.tokenizer.decode(self.chunk_ids) if self.chunk_ids else ""
        return <str>self.chunk_text

    @property
    def prefix(self):
        """The re-prompt prefix of the last rollback (what the chunk's prompt ends with), made
        when asked for: "" before the first rollback and after one that reset the session."""
        self._check_free()
        return self.kept.text()

    @property
    def raw(self):
        """The session's text as qwen-asr keeps it (`state._raw_decoded`): the last prefix and
        the text of the ids fed since (special ids dropped), envelope included. Made when asked for."""
        self._check_free()
        return self.kept.text() + self._chunk_text()

    @property
    def ids(self):
        """The ids fed since the last rollback (this chunk's generated ids)."""
        return tuple(self.chunk_ids)

    @property
    def text(self):
        """The words: the raw text with the envelope taken apart (envelope="qwen3_asr": the text
        after `<asr_text>`, stripped; nothing while the output can still be the header;
        docs/envelopes.md), the raw text itself without an envelope. Made when asked for."""
        self._check_free()
        raw = self.kept.text() + self._chunk_text()
        if self.envelope_format is None:
            return raw
        start = self._envelope(raw)[1]
        return "" if start < 0 else raw[start:].strip()

    @property
    def envelope(self):
        """What the envelope said so far (language, no_speech; `problem` when the output is not
        Qwen3-ASR's header), as stream.envelope says it; None without an envelope."""
        self._check_free()
        if self.envelope_format is None:
            return None
        return dict(self._envelope(self.kept.text() + self._chunk_text())[0])

    cdef tuple _envelope(self, str raw):
        """(the fields, where the words start): -1 while the output can still be the header, 0
        when it cannot (the whole output is the words). The envelope parser decides from the
        header (through the tag) or, before the tag, from the output's first characters; its
        answer is kept while the text it read stays (a rollback that cuts into it drops it)."""
        cdef Py_ssize_t tag, lead, start, read
        cache = self.envelope_cache
        if cache is not None:
            return cache[1], cache[2]
        tag = raw.find(_TAG)
        lead = len(raw) - len(raw.lstrip())
        read = tag + len(_TAG) if tag >= 0 else min(len(raw), lead + len(_TAG))
        parser = new_parser(self.envelope_format)
        parser.text(raw[:read], False)
        fields = parser.known()
        if parser.problem is not None:
            start = 0  # it cannot be the header: the output is the words
        elif parser.tags:
            start = read  # the header, whole: the words follow it
        else:
            return fields, -1  # still possibly the header: asked again once more text came
        self.envelope_cache = (read, fields, start)
        return fields, start

    # -- the chunk's ids ----------------------------------------------------------------------

    def feed(self, new_ids):
        """The ids the model generated for this chunk, in one call or several: the raw text is
        the last prefix and the decode of every id fed since (special ids dropped, as vLLM's
        detokenizer gives qwen-asr the text). Ids are checked first (InvalidIdError,
        NonIntegerIdError) and a refused call changes nothing."""
        self._check_free()
        checked = check_ids(new_ids, self.tokenizer.vocab_size)
        if checked:
            self.chunk_ids.extend(checked)
            self.chunk_text = None

    # -- the rollback -------------------------------------------------------------------------

    def rollback(self, k=None, *, final=False):
        """Cut the raw text back to the re-prompt prefix of the next chunk, exactly as qwen-asr
        0.0.6 computes it, and start that chunk: `session.prefix` is then the prefix and the
        ids fed next are the model's continuation of it.

        Args:
            k: how many tokens of the encode of the raw text to drop. None: qwen-asr's rule for
                chunk number `session.chunk`: nothing is kept while it is below
                unfixed_chunk_num, else unfixed_token_num tokens are dropped.
            final: finish_streaming_transcribe's rule instead: keep max(1, n - k) of the n
                tokens, with no widening.

        Returns:
            How many tokens of the raw text's encode the prefix keeps (qwen-asr's end_idx).

        The prefix is decode(encode(raw)[:n - k]), k widened by one while the prefix would hold
        a U+FFFD (a character cut between tokens, or one the text holds); only the text since
        the last hard boundary of the encode is encoded and decoded again. A refused call
        (k not an int >= 0: NonIntegerRollbackError, RollbackError; final not a bool) changes
        nothing.

        Example:
            >>> from oasr_tok.demo import DATA
            >>> tok = oasr_tok.load(DATA / "huggingface")
            >>> session = tok.new_session()
            >>> session.feed(tok.encode("the café opens at nine"))
            >>> session.rollback(3), session.prefix
            (10, 'the café opens at ')
        """
        cdef Py_ssize_t kk
        if type(final) is not bool:
            raise StreamStateError(f"final must be True or False, got {type(final).__name__}")
        self._check_free()
        if k is None:
            if self.chunk < self.unfixed_chunk_num:
                self._reset()
                self.chunk += 1
                return 0
            kk = self.unfixed_token_num
        else:
            kk = _count(k, "k")
        self.busy = True
        try:
            plan = self._plan(kk, final) if self.rule != RULE_NONE else self._plan_whole(kk, final)
        finally:
            self.busy = False
        return self._apply(plan)

    cdef void _reset(self) noexcept:
        self.kept.truncate(0)
        self.chunk_ids = []
        self.chunk_text = ""
        self.n_cp = 1
        self.fffd = -1
        self.envelope_cache = None

    cdef tuple _plan_whole(self, Py_ssize_t k, bint final):
        """qwen-asr's own computation, over the whole text: for a kind without a boundary rule."""
        cdef Py_ssize_t n, end
        ids = self.encode(self.kept.text() + self._chunk_text())
        n = len(ids)
        if final:
            end = min(n, max(1, n - k))
            prefix = self.decode_kept(ids[:end]) if end else ""
        else:
            end = max(0, n - k)
            while True:
                prefix = self.decode_kept(ids[:end]) if end > 0 else ""
                if _FFFD not in prefix:
                    break
                end -= 1
        return (0, end, prefix, ())

    cdef tuple _plan(self, Py_ssize_t k, bint final):
        """(segment, tokens kept, the text after the segment's checkpoint, new checkpoints),
        computed without changing anything."""
        cdef Py_ssize_t last = self.n_cp - 1, seg, base, target, n, m, count, j, size, at, bo, idx
        cdef Py_ssize_t fffd_at, end_of_segment
        cdef Py_ssize_t* cum
        cdef const unsigned char* data
        cdef int kind
        cdef void* chars
        cdef Py_UCS4 a, b
        cdef Py_ssize_t start = self.cp_pos[last]
        tail = self.kept.slice(start) + self._chunk_text()
        tokens = self.encode(tail)
        n = self.cp_tok[last] + len(tokens)
        target = (min(n, max(1, n - k)) if final else max(0, n - k))
        seg = self._segment_of_token(target)
        if not final and 0 <= self.fffd < self.cp_pos[seg]:
            # The prefix would hold the text's own U+FFFD: back to the segment that holds it.
            seg = self._segment_of_char(self.fffd)
            target = self.cp_tok[seg + 1]
        base = self.cp_tok[seg]
        if seg != last:
            end_of_segment = self.cp_pos[seg + 1]
            text = self.kept.slice(self.cp_pos[seg])[:end_of_segment - self.cp_pos[seg]]
            tokens = self.encode(text)
            if len(tokens) != self.cp_tok[seg + 1] - base:
                raise StreamStateError(
                    f"this session's checkpoint at character {end_of_segment} does not fall between tokens "
                    "(a forged state, or a boundary rule the tokenizer does not keep: a bug); start a new session")
        data_bytes = join_pieces(self.pieces, tokens)
        count = target - base
        cum = <Py_ssize_t*>PyMem_Malloc((len(tokens) + 1) * sizeof(Py_ssize_t))
        if cum == NULL:
            raise MemoryError()
        try:
            cum[0] = 0
            pieces = self.pieces
            for j in range(len(tokens)):
                cum[j + 1] = cum[j] + PyBytes_GET_SIZE(pieces[tokens[j]])
            size = PyBytes_GET_SIZE(data_bytes)
            data = <const unsigned char*>PyBytes_AS_STRING(data_bytes)
            m = count
            if not final:
                fffd_at = data_bytes.find(_FFFD_BYTES)
                while m > 0:
                    at = cum[m]
                    if (fffd_at < 0 or at <= fffd_at) and (at == size or (data[at] & 0xC0) != 0x80):
                        break
                    m -= 1
            new_text = data_bytes[:cum[m]].decode("utf-8", self.errors)
            # The hard boundaries of the new text, each with its token count (a hard boundary
            # is always between two tokens: checked, as a bug would show here first).
            found = []
            kind = PyUnicode_KIND(new_text)
            chars = PyUnicode_DATA(new_text)
            size = PyUnicode_GET_LENGTH(new_text)
            bo = 0
            idx = 0
            for j in range(1, size):
                a = PyUnicode_READ(kind, chars, j - 1)
                bo += 1 if a < 0x80 else (2 if a < 0x800 else (3 if a < 0x10000 else 4))
                if bo > cum[m]:
                    break  # past what the tokens kept spell (a character the final rule cut)
                while idx < m and cum[idx] < bo:
                    idx += 1
                b = PyUnicode_READ(kind, chars, j)
                if self._hard(a, b):
                    if cum[idx] != bo:
                        raise StreamStateError(
                            f"the boundary rule of this tokenizer failed between {chr(a)!r} and {chr(b)!r} "
                            "(a bug: please report it with the text); start a new session")
                    found.append((self.cp_pos[seg] + j, base + idx))
        finally:
            PyMem_Free(cum)
        return (seg, base + m, new_text, tuple(found))

    cdef Py_ssize_t _apply(self, tuple plan) except -1:
        """Make the planned rollback the session's state (nothing here can fail but memory)."""
        cdef Py_ssize_t seg = plan[0], end = plan[1], start
        cdef str new_text = plan[2]
        cdef tuple found = plan[3]
        cdef Py_ssize_t room = seg + 1, last = self.cp_pos[seg], before = self.cp_pos[seg - 1] if seg else -_SPACING
        for pos, _tokens in found:  # how many _add_checkpoint keeps (room for those only)
            if room >= 2 and pos - before < _SPACING:
                last = pos
            else:
                before, last = last, pos
                room += 1
        self._reserve(room)
        start = self.cp_pos[seg]
        self.kept.truncate(start)
        self.kept.append(new_text)
        self.n_cp = seg + 1
        if seg and start == len(self.kept):
            # A cut at the checkpoint itself: what follows it is not known any more (the next
            # chunk's first character decides whether the position is still hard).
            self.n_cp = seg
        for pos, tokens in found:
            self._add_checkpoint(pos, tokens)
        if not 0 <= self.fffd < start:
            at = new_text.find(_FFFD)
            self.fffd = -1 if at < 0 else start + at
        self.chunk_ids = []
        self.chunk_text = ""
        cache = self.envelope_cache
        if cache is not None and cache[0] > start:
            self.envelope_cache = None
        self.chunk += 1
        return end

    # -- copies -------------------------------------------------------------------------------

    def fork(self):
        """An independent copy (a beam, or a what-if): what one is fed changes nothing of the other."""
        self._check_free()
        cdef Session other = _blank(self.tokenizer, self.unfixed_chunk_num, self.unfixed_token_num,
                                    self.envelope_format, self)
        other.kept = self.kept.copy_text()
        other.chunk_ids = list(self.chunk_ids)
        other.chunk_text = self.chunk_text
        other._reserve(self.n_cp)
        for j in range(self.n_cp):
            other.cp_pos[j] = self.cp_pos[j]
            other.cp_tok[j] = self.cp_tok[j]
        other.n_cp = self.n_cp
        other.fffd = self.fffd
        other.chunk = self.chunk
        other.envelope_cache = self.envelope_cache
        return other

    def __copy__(self):
        return self.fork()

    def __deepcopy__(self, memo):
        return self.fork()

    cdef tuple _fields(self):
        """What a pickle carries, beside the tokenizer (_session_from_fields checks each)."""
        checkpoints = []
        for j in range(self.n_cp):
            checkpoints.append(self.cp_pos[j])
            checkpoints.append(self.cp_tok[j])
        return (self.unfixed_chunk_num, self.unfixed_token_num, self.envelope_format, self.chunk,
                self.kept.text(), tuple(checkpoints), tuple(self.chunk_ids))

    def __reduce__(self):
        self._check_free()
        # The one place a session names its tokenizer in a pickle: a ticket, by reference unless the
        # tokenizer's Travel says otherwise, as a Stream's (docs/scale.md § Streams that travel). The
        # text always travels: the next rollback re-encodes from it (Travel(text=False) is a Stream's).
        return (_session_from_fields, (carry(self.tokenizer),) + self._fields())

    def __eq__(self, other):
        """Equal sessions: the same tokenizer (or one rebuilt from the same files) and the same
        state, field by field."""
        if type(other) is not Session:
            return NotImplemented
        self._check_free()
        (<Session>other)._check_free()
        cdef Session that = <Session>other
        return _same_tokenizer(self.tokenizer, that.tokenizer) and self._fields() == that._fields()

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # mutable, compared by value

    def __repr__(self):
        return (f"<oasr_tok.Session of {type(self.tokenizer).__name__}: chunk {self.chunk}, "
                f"{len(self.kept)} chars kept, {len(self.chunk_ids)} ids fed since>")


cdef bint _same_tokenizer(a, b) except -1:
    if a is b:
        return True
    tag_a = getattr(a, "_stream_tag", None)
    tag_b = getattr(b, "_stream_tag", None)
    return tag_a is not None and tag_b is not None and tag_a() == tag_b()


cdef Session _blank(tok, Py_ssize_t unfixed_chunk_num, Py_ssize_t unfixed_token_num, envelope, Session like):
    """A session of `tok` that holds nothing; its tokenizer's plan taken from `like` when given."""
    cdef Session s = Session.__new__(Session)
    s.tokenizer = tok
    s.unfixed_chunk_num = unfixed_chunk_num
    s.unfixed_token_num = unfixed_token_num
    s.envelope_format = envelope
    s.kept = GrowText()
    s.chunk_ids = []
    s.chunk_text = ""
    s._reserve(4)
    s.cp_pos[0] = 0
    s.cp_tok[0] = 0
    s.n_cp = 1
    s.fffd = -1
    if like is not None:
        s.rule, s.forbidden, s.pieces, s.errors = like.rule, like.forbidden, like.pieces, like.errors
        s.encode, s.decode_kept = like.encode, like.decode_kept
        return s
    if not getattr(tok, "supports_encode", False):
        raise EncodeNotSupportedError(
            f"{type(tok).__name__} is decode-only: a session re-encodes its text, as qwen-asr does, "
            "so it needs a kind that encodes (check tok.supports_encode)")
    plan_of = getattr(tok, "_session_plan", None)
    plan = plan_of() if plan_of is not None else None
    if plan is not None:
        rule, forbidden, pieces, errors, encode = plan
        if (rule not in _RULES or type(forbidden) is not frozenset or type(pieces) is not tuple
                or len(pieces) < tok.vocab_size or type(errors) is not str or not callable(encode)):
            raise StreamStateError(f"{type(tok).__name__}._session_plan() gave a plan the session cannot use")
        s.rule, s.forbidden, s.pieces, s.errors, s.encode = _RULES[rule], forbidden, pieces, errors, encode
    else:
        s.rule = RULE_NONE
        s.encode = _encoder(tok)
    try:
        s.decode_kept = tok.with_specials().decode
    except KeepSpecialsNotSupportedError:
        s.decode_kept = tok.decode
    return s


def _encoder(tok):
    """The whole text's encode as qwen-asr's tokenizer.encode gives it (no special ids added:
    the text continues a prompt)."""
    encode = tok.encode

    def whole(text):
        return encode(text, False)

    return whole


def new_session(tok, unfixed_chunk_num=2, unfixed_token_num=5, envelope=None):
    """A Session of `tok` (tok.new_session: oasr_tok/core/streaming.py says what each argument is)."""
    cdef Py_ssize_t chunks = _count(unfixed_chunk_num, "unfixed_chunk_num")
    cdef Py_ssize_t tokens = _count(unfixed_token_num, "unfixed_token_num")
    if envelope is not None and envelope not in ENVELOPES:
        raise UnknownEnvelopeError(
            f"a session takes the envelope {', '.join(ENVELOPES)} (the re-decoding model's) or None, "
            f"got {envelope!r}")
    return _blank(tok, chunks, tokens, envelope, None)


def _session_from_fields(ticket, unfixed_chunk_num, unfixed_token_num, envelope, chunk, kept, checkpoints, chunk_ids):
    """A pickled Session, each field checked: a forged one raises StreamStateError; its tokenizer
    is the one its ticket names (TokenizerNotHeldError when sent by reference and not held here)."""
    cdef Session s
    cdef Py_ssize_t j, n, pos, tokens, prev_pos = 0, prev_tok = 0
    tok = arrive(ticket, "session")
    if not hasattr(tok, "decode") or not hasattr(tok, "vocab_size"):
        raise StreamStateError("a pickled session's tokenizer is not a tokenizer; start a new session")
    try:
        s = new_session(tok, unfixed_chunk_num, unfixed_token_num, envelope)
        s.chunk = _count(chunk, "chunk")
    except (RollbackError, UnknownEnvelopeError) as exc:
        raise StreamStateError(f"a pickled session's settings are not a session's: {exc}") from None
    if type(kept) is not str or type(checkpoints) is not tuple or type(chunk_ids) is not tuple:
        raise StreamStateError("a pickled session's text, checkpoints or ids are not a session's; start a new session")
    try:
        kept.encode("utf-8")
    except UnicodeEncodeError:
        raise StreamStateError("a pickled session's text is not valid Unicode; start a new session") from None
    n = len(checkpoints)
    if n < 2 or n % 2 or checkpoints[0] != 0 or checkpoints[1] != 0:
        raise StreamStateError("a pickled session's checkpoints are not a session's; start a new session")
    for j in range(2, n, 2):
        pos, tokens = checkpoints[j], checkpoints[j + 1]
        if (type(checkpoints[j]) is not int or type(checkpoints[j + 1]) is not int or s.rule == RULE_NONE
                or not prev_pos < pos < len(kept) or not prev_tok < tokens <= prev_tok + 4 * (pos - prev_pos)
                or not s._hard(ord(kept[pos - 1]), ord(kept[pos]))):
            raise StreamStateError("a pickled session's checkpoints are not a session's; start a new session")
        prev_pos, prev_tok = pos, tokens
    ids = check_ids(chunk_ids, tok.vocab_size)
    s._reserve(n // 2)
    for j in range(0, n, 2):
        s.cp_pos[j // 2] = checkpoints[j]
        s.cp_tok[j // 2] = checkpoints[j + 1]
    s.n_cp = n // 2
    s.kept.append(kept)
    at = kept.find(_FFFD)
    s.fffd = at
    s.chunk_ids = ids
    s.chunk_text = None
    return s
