/* The growing transcript of a stream, kept in state["text"], and the checks on what a stream
 * state holds.
 *
 * A stream's text is `settled + tail`: settled text never changes again, the tail is what a
 * later token may still rewrite. Each step replaces the old tail with new settled text and a
 * new tail. Doing that with ordinary string slicing copies the whole transcript per token,
 * so a stream would cost O(n) per token; here the string is resized in place when that is
 * safe, which is CPython's own `s += t` trick, isolated in oasr_write_in_place below.
 *
 * The in-place write relies on four conditions, all checked before it happens (otherwise the
 * copying path runs, whose result CPython builds itself):
 *   1. nobody else can see the str: the state dict held the only reference, and we dropped
 *      it (refcount 1), it is exactly a str, not interned and not hashed;
 *   2. the result needs the storage kind the str already has: CPython requires every str to
 *      use the narrowest kind its characters need (an ASCII str in UCS-2 storage compares
 *      unequal to the same ASCII text). The new parts must fit the kind, and some character
 *      of the result must need it: one of the new parts, or the character of the kept text
 *      that state["_wide"] points at (checked, never trusted);
 *   3. no cached copy of the str in another encoding is left stale: the length changes (the
 *      resize drops its cached UTF-8), or the str has none (a step that swaps a held "\ufffd"
 *      for the character it completes keeps the length: copying then would cost O(n));
 *   4. the build has a GIL: on free-threaded builds (Py_GIL_DISABLED) a refcount of 1 does
 *      not prove that no other thread is about to read the str, so they always copy.
 *
 * Every value read from the state is validated first, so a forged or foreign state raises
 * StreamStateError and is left exactly as it was; it can never make a wrong-kind string.
 *
 * A state also records which tokenizer made it (state["_tok"], a fingerprint of the
 * tokenizer's rendering tables: see oasr_tag): a state another tokenizer or kind made is
 * refused instead of continued. */
#ifndef OASR_TEXTBUF_H
#define OASR_TEXTBUF_H
#include <Python.h>
#include <assert.h>
#include <stdint.h>
#include "textstate.h"

/* Set once by oasr_textbuf_init, when oasr_tok._engine.textbuf is imported. */
static PyObject *oasr_key_text = NULL, *oasr_key_tail = NULL, *oasr_key_wide = NULL, *oasr_key_tok = NULL;

/* The storage a character needs: 0 ASCII, 1 Latin-1, 2 UCS-2, 4 UCS-4. */
static inline int oasr_char_level(Py_UCS4 ch)
{
    if (ch < 0x80) return 0;
    if (ch < 0x100) return 1;
    if (ch < 0x10000) return 2;
    return 4;
}

/* The storage level of a (canonical) str. */
static inline int oasr_str_level(PyObject *s)
{
    if (PyUnicode_IS_ASCII(s)) return 0;
    return (int)PyUnicode_KIND(s);
}

/* Index of the first character of s[start:end] that needs `level`, or -1. */
static Py_ssize_t oasr_find_level(PyObject *s, Py_ssize_t start, Py_ssize_t end, int level, int backwards)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t i;
    if (backwards) {
        for (i = end - 1; i >= start; i--)
            if (oasr_char_level(PyUnicode_READ(kind, data, i)) == level) return i;
    } else {
        for (i = start; i < end; i++)
            if (oasr_char_level(PyUnicode_READ(kind, data, i)) == level) return i;
    }
    return -1;
}

/* oasr_tok.errors.StreamStateError, looked up when oasr_tok._engine.textbuf is imported (the one
 * module this header is compiled into: oasr_textbuf_init), so no thread races to set it. */
static PyObject *oasr_state_error_type = NULL;

static PyObject *oasr_state_error(void)
{
    return oasr_state_error_type ? oasr_state_error_type : PyExc_ValueError;
}

/* The keys and the error type, once, at the module's import (0, or -1 with an exception). */
static int oasr_textbuf_init(void)
{
    PyObject *module;
    oasr_key_text = PyUnicode_InternFromString("text");
    oasr_key_tail = PyUnicode_InternFromString("_tail");
    oasr_key_wide = PyUnicode_InternFromString("_wide");
    oasr_key_tok = PyUnicode_InternFromString("_tok");
    if (!(oasr_key_text && oasr_key_tail && oasr_key_wide && oasr_key_tok)) return -1;
    module = PyImport_ImportModule("oasr_tok.errors");
    if (module == NULL) return -1;
    oasr_state_error_type = PyObject_GetAttrString(module, "StreamStateError");
    Py_DECREF(module);
    return oasr_state_error_type ? 0 : -1;
}

static int oasr_corrupt(const char *why)
{
    PyErr_Format(oasr_state_error(), "stream state is not usable: %s; start a new stream from {}", why);
    return -1;
}

/* state[key] as a count: `missing` when absent; -2 with StreamStateError set when it is not
 * an exact non-negative int (bool and int subclasses included: no state holds them). */
static Py_ssize_t oasr_state_count(PyObject *state, PyObject *key, Py_ssize_t missing)
{
    Py_ssize_t value = -1;
    PyObject *v = PyDict_GetItemWithError(state, key);
    if (v == NULL) return PyErr_Occurred() ? -2 : missing;
    if (PyLong_CheckExact(v)) {
        value = PyLong_AsSsize_t(v);
        if (value == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    if (value < 0) {
        PyErr_Format(oasr_state_error(), "stream state[%R] must be a non-negative int; start a new stream from {}", key);
        return -2;
    }
    return value;
}

/* -- which tokenizer made a state ------------------------------------------------------------ */

/* A 64-bit FNV-1a fingerprint of plain data: str (its code points), bytes, int, bool, None,
 * and lists or tuples of those. The same tables give the same fingerprint in every process,
 * so a state travels with a tokenizer rebuilt from the same files. */
static int oasr_hash_into(uint64_t *h, PyObject *o, int depth)
{
    const uint64_t prime = 1099511628211ULL;
    Py_ssize_t i, n;
#define OASR_MIX(byte) (*h = (*h ^ (uint64_t)(unsigned char)(byte)) * prime)
    if (depth > 8) {
        PyErr_SetString(PyExc_ValueError, "oasr_tag: data nested too deeply");
        return -1;
    }
    if (PyUnicode_Check(o)) {
        int kind = PyUnicode_KIND(o);
        const void *data = PyUnicode_DATA(o);
        n = PyUnicode_GET_LENGTH(o);
        OASR_MIX('s');
        for (i = 0; i < n; i++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, i);
            OASR_MIX(ch); OASR_MIX(ch >> 8); OASR_MIX(ch >> 16);
        }
        OASR_MIX(0xFF);  /* the end of the str: ("ab", "c") and ("a", "bc") differ */
    } else if (PyBytes_Check(o)) {
        const char *p = PyBytes_AS_STRING(o);
        n = PyBytes_GET_SIZE(o);
        OASR_MIX('b');
        for (i = 0; i < n; i++) OASR_MIX(p[i]);
        OASR_MIX(n); OASR_MIX(n >> 8); OASR_MIX(n >> 16); OASR_MIX(n >> 24);
    } else if (o == Py_None) {
        OASR_MIX('n');
    } else if (PyBool_Check(o)) {
        OASR_MIX(o == Py_True ? 'T' : 'F');
    } else if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (overflow) {
            PyErr_SetString(PyExc_ValueError, "oasr_tag: integer too large");
            return -1;
        }
        OASR_MIX('i');
        for (i = 0; i < 8; i++) OASR_MIX((unsigned long long)v >> (8 * i));
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
        PyObject *seq = PySequence_Fast(o, "oasr_tag");
        if (seq == NULL) return -1;
        n = PySequence_Fast_GET_SIZE(seq);
        OASR_MIX('[');
        for (i = 0; i < n; i++) {
            /* A list item is read (and held) one at a time: nothing here runs Python code. */
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            Py_INCREF(item);
            if (oasr_hash_into(h, item, depth + 1) < 0) { Py_DECREF(item); Py_DECREF(seq); return -1; }
            Py_DECREF(item);
            if (PySequence_Fast_GET_SIZE(seq) != n) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_RuntimeError, "oasr_tag: the data changed while it was read");
                return -1;
            }
        }
        OASR_MIX(']');
        Py_DECREF(seq);
    } else {
        PyErr_Format(PyExc_TypeError, "oasr_tag: cannot fingerprint %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
#undef OASR_MIX
    return 0;
}

/* The tag for a tokenizer whose rendering is fully described by `data` (a Python int). */
static PyObject *oasr_tag(PyObject *data)
{
    uint64_t h = 14695981039346656037ULL;
    if (oasr_hash_into(&h, data, 0) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(h);
}

/* 0 when `state` is a fresh state (no "text" and no "_tok") or one the tokenizer tagged
 * `tag` made; -1 with StreamStateError set otherwise. */
static int oasr_check_owner(PyObject *state, PyObject *tag)
{
    PyObject *seen;
    int same;
    if (!PyDict_Check(state)) {
        PyErr_Format(oasr_state_error(), "a stream state is a dict ({} to start), got %.100s", Py_TYPE(state)->tp_name);
        return -1;
    }
    seen = PyDict_GetItemWithError(state, oasr_key_tok);
    if (seen == NULL) {
        if (PyErr_Occurred()) return -1;
        if (PyDict_GetItemWithError(state, oasr_key_text) != NULL || PyErr_Occurred()
                || PyDict_GetItemWithError(state, oasr_key_tail) != NULL || PyErr_Occurred()) {
            if (PyErr_Occurred()) return -1;
            PyErr_SetString(oasr_state_error(), "this stream state was not made by an oasr_tok tokenizer (it has a "
                            "\"text\" but no \"_tok\"); start a new stream from {}");
            return -1;
        }
        return 0;
    }
    if (seen == tag) return 0;  /* the usual case: the very object this tokenizer stored */
    if (!PyLong_CheckExact(seen) || !PyLong_CheckExact(tag)) {
        same = 0;
    } else {
        same = PyObject_RichCompareBool(seen, tag, Py_EQ);
        if (same < 0) return -1;
    }
    if (!same) {
        PyErr_SetString(oasr_state_error(), "this stream state was made by another tokenizer (or kind); "
                        "a stream continues only with the tokenizer that started it; start a new stream from {}");
        return -1;
    }
    return 0;
}

/* -- the text -------------------------------------------------------------------------------- */

/* Read and check state["text"], ["_tail"], ["_wide"]; -1 with StreamStateError if any is not
 * what a stream state holds. Touches nothing. */
static int oasr_read_text(PyObject *state, oasr_textstate *ts)
{
    Py_ssize_t wide;
    ts->old_tail = oasr_state_count(state, oasr_key_tail, 0);
    if (ts->old_tail < 0) return -1;
    wide = oasr_state_count(state, oasr_key_wide, -1);
    if (wide == -2) return -1;
    ts->text = PyDict_GetItemWithError(state, oasr_key_text);
    ts->wide = -1;
    ts->recorded = wide;
    if (ts->text == NULL) {
        if (PyErr_Occurred()) return -1;
        if (ts->old_tail != 0 || wide != -1) return oasr_corrupt("it records a tail but holds no \"text\"");
        ts->n = ts->keep = 0;
        ts->level = 0;
        return 0;
    }
    if (!PyUnicode_CheckExact(ts->text)) return oasr_corrupt("its \"text\" is not a str");
    ts->n = PyUnicode_GET_LENGTH(ts->text);
    if (ts->old_tail > ts->n) return oasr_corrupt("its tail is longer than its text");
    ts->keep = ts->n - ts->old_tail;
    ts->level = oasr_str_level(ts->text);
    if (wide != -1) {
        if (wide >= ts->keep || oasr_char_level(PyUnicode_READ_CHAR(ts->text, wide)) != ts->level)
            return oasr_corrupt("its \"_wide\" does not point at a character of its settled text that needs "
                                "the text's storage");
        ts->wide = wide;
    }
    return 0;
}

/* 0 if the state's text ends with `tail` recorded as its tail (what the caller's own state
 * says the held tail renders), with what was read in *ts (for oasr_commit_read);
 * StreamStateError otherwise. */
static int oasr_check_tail_read(PyObject *state, PyObject *tail, oasr_textstate *ts)
{
    Py_ssize_t t;
    if (oasr_read_text(state, ts) < 0) return -1;
    t = PyUnicode_GET_LENGTH(tail);
    if (ts->old_tail != t) return oasr_corrupt("its recorded tail length is not what its decoder state holds back");
    if (t && PyUnicode_Tailmatch(ts->text, tail, ts->keep, ts->n, 1) != 1) {
        if (PyErr_Occurred()) return -1;
        return oasr_corrupt("its text does not end with what its decoder state holds back");
    }
    return 0;
}

static int oasr_check_tail(PyObject *state, PyObject *tail)
{
    oasr_textstate ts;
    return oasr_check_tail_read(state, tail, &ts);
}

#ifndef Py_GIL_DISABLED
/* Whether `s` carries a cached copy of its text in another encoding (its UTF-8, which C code
 * reads through PyUnicode_AsUTF8, or before 3.12 its wchar_t form): an edit in place would
 * leave it describing the old text. A resize drops both; an ASCII str's UTF-8 is its data. */
static inline int oasr_has_cached_copies(PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    /* Where wchar_t is as wide as the str's own storage (UCS-4 on Linux and macOS), CPython
     * points wstr at the data itself: no copy, and the edit updates both. Counting that as a
     * cached copy sent every same-length step of a text holding a character above U+FFFF down
     * the copying path, O(n) per token. */
    const wchar_t *wstr = ((PyASCIIObject *)s)->wstr;
    if (wstr != NULL && (const void *)wstr != PyUnicode_DATA(s)) return 1;
#endif
    return !PyUnicode_IS_ASCII(s) && ((PyCompactUnicodeObject *)s)->utf8 != NULL;
}
#endif

/* The in-place write of conditions 1-4 (see the top of this file): text[keep:] becomes
 * settled + tail, text keeping its storage kind. Returns 1 if done, 0 if the copying path
 * must run instead (nothing changed), -1 on error (MemoryError; text is still valid). */
static int oasr_write_in_place(PyObject **text, Py_ssize_t keep, PyObject *settled, PyObject *tail, int result_needs_kind)
{
#ifdef Py_GIL_DISABLED
    (void)text; (void)keep; (void)settled; (void)tail; (void)result_needs_kind;
    return 0;
#else
    PyObject *s = *text;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), sl = PyUnicode_GET_LENGTH(settled), tl = PyUnicode_GET_LENGTH(tail);
    Py_ssize_t total = keep + sl + tl;
    int level = oasr_str_level(s);
    if (Py_REFCNT(s) != 1 || !PyUnicode_CheckExact(s) || PyUnicode_CHECK_INTERNED(s)
            || ((PyASCIIObject *)s)->hash != -1)
        return 0;                                                   /* 1 */
    if ((sl && oasr_str_level(settled) > level) || (tl && oasr_str_level(tail) > level) || !result_needs_kind)
        return 0;                                                   /* 2 */
    if (total == n && oasr_has_cached_copies(s)) return 0;          /* 3 */
    if (total != n && PyUnicode_Resize(text, total) < 0) return -1;
    if (sl && PyUnicode_CopyCharacters(*text, keep, settled, 0, sl) < 0) return -1;
    if (tl && PyUnicode_CopyCharacters(*text, keep + sl, tail, 0, tl) < 0) return -1;
    assert(oasr_str_level(*text) == level);
    assert(level == 0 || oasr_find_level(*text, 0, total, level, 0) >= 0);
    return 1;
#endif
}

/* state["text"] = state["text"][:-old_tail] + settled + tail; record the new tail length, the
 * new "_wide" and, when `tag` is not NULL, the tokenizer's tag. Returns 0, or -1 with an
 * exception set and the state as it was. (On a MemoryError half-way, "text" may be left None:
 * the next call then refuses the state rather than lose the transcript silently.) */
static int oasr_write_commit(PyObject *state, oasr_textstate ts, PyObject *settled, PyObject *tail, PyObject *tag);

static int oasr_commit_tagged(PyObject *state, PyObject *settled, PyObject *tail, PyObject *tag)
{
    oasr_textstate ts;
    if (!PyDict_Check(state)) {
        PyErr_SetString(oasr_state_error(), "a stream state is a dict ({} to start)");
        return -1;
    }
    if (!PyUnicode_Check(settled) || !PyUnicode_Check(tail)) {
        PyErr_SetString(PyExc_TypeError, "settled text and tail must be str");
        return -1;
    }
    if (tag != NULL && oasr_check_owner(state, tag) < 0) return -1;
    if (oasr_read_text(state, &ts) < 0) return -1;
    return oasr_write_commit(state, ts, settled, tail, tag);
}

/* oasr_commit_tagged for a state the caller checked in this same call (oasr_check_owner with
 * `tag`, then oasr_check_tail_read into *ts): the per-token path reads the state once. If the
 * state's text is no longer the str that was read (Python code that ran in between, such as
 * an error handler letting another thread in, changed the dict), everything is read and
 * checked again. */
static int oasr_commit_read(PyObject *state, const oasr_textstate *ts, PyObject *settled, PyObject *tail, PyObject *tag)
{
    PyObject *now;
    if (!PyDict_CheckExact(state) || !PyUnicode_CheckExact(settled) || !PyUnicode_CheckExact(tail))
        return oasr_commit_tagged(state, settled, tail, tag);
    now = PyDict_GetItemWithError(state, oasr_key_text);
    if (now == NULL && PyErr_Occurred()) return -1;
    if (now != ts->text || (now != NULL && PyUnicode_GET_LENGTH(now) != ts->n))
        return oasr_commit_tagged(state, settled, tail, tag);
    return oasr_write_commit(state, *ts, settled, tail, ts->text == NULL ? tag : NULL);
}

/* The commit itself, from what was read of the state: `tag`, when not NULL, is recorded in
 * state["_tok"] (a state that already had text holds it: oasr_check_owner saw to that). */
static int oasr_write_commit(PyObject *state, oasr_textstate ts, PyObject *settled, PyObject *tail, PyObject *tag)
{
    PyObject *text, *num;
    Py_ssize_t sl, tl, wide;
    int settled_level, tail_level, new_level, done = 0;

    sl = PyUnicode_GET_LENGTH(settled);
    tl = PyUnicode_GET_LENGTH(tail);
    settled_level = sl ? oasr_str_level(settled) : 0;
    tail_level = tl ? oasr_str_level(tail) : 0;
    if (ts.text != NULL && ts.old_tail == 0 && sl == 0 && tl == 0) {
        if (tag != NULL && PyDict_GetItemWithError(state, oasr_key_tok) != tag) {
            if (PyErr_Occurred() || PyDict_SetItem(state, oasr_key_tok, tag) < 0) return -1;
        }
        return 0;
    }
    /* A character of the kept text that needs the text's storage, when "_wide" did not name
     * one (a state from before "_wide", or one whose storage came from its tail). */
    if (ts.text != NULL && ts.wide < 0 && ts.level > 0)
        ts.wide = oasr_find_level(ts.text, 0, ts.keep, ts.level, 1);

    if (ts.text == NULL) {
        text = PyUnicode_New(0, 0);
        if (text == NULL) return -1;
    } else {
        text = ts.text;
        Py_INCREF(text);
#ifndef Py_GIL_DISABLED
        /* Drop the dict's reference so ours may be the only one (condition 1; CPython's own
         * append below grows a str in place under the same rule). */
        if (PyDict_SetItem(state, oasr_key_text, Py_None) < 0) { Py_DECREF(text); return -1; }
#endif
    }
    if (ts.old_tail > 0) {
        int needs = ts.level == 0 || ts.wide >= 0 || settled_level == ts.level || tail_level == ts.level;
        done = oasr_write_in_place(&text, ts.keep, settled, tail, needs);
        if (done < 0) goto fail;
        if (!done) {
            /* The copying path: CPython builds the kept part with the storage it needs. */
            PyObject *cut = PyUnicode_Substring(text, 0, ts.keep);
            if (cut == NULL) goto fail;
            Py_DECREF(text);
            text = cut;
        }
    }
    if (!done) {
        if (sl) {
            PyUnicode_Append(&text, settled);
            if (text == NULL) return -1;
        }
        if (tl) {
            PyUnicode_Append(&text, tail);
            if (text == NULL) return -1;
        }
    }
    new_level = oasr_str_level(text);
    /* The new "_wide": a character of the new settled text that needs the new storage. */
    wide = -1;
    if (new_level > 0) {
        if (new_level == ts.level && ts.wide >= 0)
            wide = ts.wide;
        else if (settled_level == new_level)
            wide = oasr_find_level(text, ts.keep, ts.keep + sl, new_level, 0);
    }
    if (PyDict_SetItem(state, oasr_key_text, text) < 0) goto fail;
    Py_DECREF(text);
    if (tl != ts.old_tail || ts.text == NULL) {  /* (a fresh state records its tail, 0 included) */
        num = PyLong_FromSsize_t(tl);
        if (num == NULL || PyDict_SetItem(state, oasr_key_tail, num) < 0) { Py_XDECREF(num); return -1; }
        Py_DECREF(num);
    }
    if (wide != ts.recorded) {  /* (unchanged, the usual case: nothing to write) */
        if (wide >= 0) {
            num = PyLong_FromSsize_t(wide);
            if (num == NULL || PyDict_SetItem(state, oasr_key_wide, num) < 0) { Py_XDECREF(num); return -1; }
            Py_DECREF(num);
        } else if (PyDict_DelItem(state, oasr_key_wide) < 0) {
            return -1;
        }
    }
    if (tag != NULL && PyDict_GetItemWithError(state, oasr_key_tok) != tag) {
        if (PyErr_Occurred() || PyDict_SetItem(state, oasr_key_tok, tag) < 0) return -1;
    }
    return 0;
fail:
    if (ts.text != NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyDict_SetItem(state, oasr_key_text, text);
        PyErr_Restore(type, value, tb);
    }
    Py_DECREF(text);
    return -1;
}

static int oasr_commit(PyObject *state, PyObject *settled, PyObject *tail)
{
    return oasr_commit_tagged(state, settled, tail, NULL);
}

/* state[key] += delta for a text that only grows (decode_hypothesis's state["committed"]), with
 * the in-place rule of oasr_commit_tagged: the dict's reference is dropped first, so when the
 * state held the only one, CPython's own append resizes the str in place (amortised O(delta))
 * instead of copying the whole text. A missing key starts from "". Returns 0, or -1 with an
 * exception set (state[key] as it was, but for a MemoryError: see below); StreamStateError when
 * state[key] is not a str. */
static int oasr_append(PyObject *state, PyObject *key, PyObject *delta)
{
    PyObject *text;
    if (!PyDict_Check(state) || !PyUnicode_CheckExact(delta)) {
        PyErr_SetString(PyExc_TypeError, "oasr_append: a dict and a str");
        return -1;
    }
    text = PyDict_GetItemWithError(state, key);
    if (text == NULL) {
        if (PyErr_Occurred()) return -1;
        return PyDict_SetItem(state, key, delta);
    }
    if (!PyUnicode_CheckExact(text)) {
        PyErr_Format(oasr_state_error(), "state[%R] must be a str; start a new stream from {}", key);
        return -1;
    }
    if (PyUnicode_GET_LENGTH(delta) == 0) return 0;
    Py_INCREF(text);
#ifndef Py_GIL_DISABLED
    /* Condition 1 of the top of this file: ours may then be the only reference. */
    if (PyDict_SetItem(state, key, Py_None) < 0) { Py_DECREF(text); return -1; }
#endif
    /* On a MemoryError CPython has dropped the str: state[key] stays None, and the next call
     * refuses the state rather than lose the text silently (as oasr_commit_tagged does). */
    PyUnicode_Append(&text, delta);
    if (text == NULL) return -1;
    if (PyDict_SetItem(state, key, text) < 0) { Py_DECREF(text); return -1; }
    Py_DECREF(text);
    return 0;
}

#endif
