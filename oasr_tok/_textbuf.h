/* The growing transcript of a stream, kept in state["text"].
 *
 * A stream's text is `settled + tail`: settled text never changes again, the tail is what a
 * later token may still rewrite. Each step replaces the old tail with new settled text and a
 * new tail. Doing that with ordinary string slicing copies the whole transcript per token,
 * so a stream would cost O(n) per token; here the string is resized in place whenever the
 * state dict holds the only reference to it (CPython's own rule for `s += t`).
 *
 * CPython requires a str to use the narrowest storage its characters need. Truncating in
 * place keeps the storage kind, so it is only done when the kept part needs that same kind;
 * the state records the kind ("level") the settled text needs. */
#ifndef OASR_TEXTBUF_H
#define OASR_TEXTBUF_H
#include <Python.h>

static PyObject *oasr_key_text = NULL, *oasr_key_tail = NULL, *oasr_key_level = NULL;

static int oasr_textbuf_keys(void)
{
    if (oasr_key_text) return 0;
    oasr_key_text = PyUnicode_InternFromString("text");
    oasr_key_tail = PyUnicode_InternFromString("_tail");
    oasr_key_level = PyUnicode_InternFromString("_level");
    return (oasr_key_text && oasr_key_tail && oasr_key_level) ? 0 : -1;
}

/* 0: ASCII, 1: Latin-1, 2: UCS-2, 4: UCS-4. */
static inline int oasr_str_level(PyObject *s)
{
    if (PyUnicode_IS_ASCII(s)) return 0;
    return (int)PyUnicode_KIND(s);
}

/* oasr_tok.errors.StreamStateError, looked up on first use (this header is compiled into
 * several extension modules, each with its own copy of the pointer). */
static PyObject *oasr_state_error_type = NULL;

static PyObject *oasr_state_error(void)
{
    PyObject *module;
    if (oasr_state_error_type == NULL) {
        module = PyImport_ImportModule("oasr_tok.errors");
        if (module != NULL) {
            oasr_state_error_type = PyObject_GetAttrString(module, "StreamStateError");
            Py_DECREF(module);
        }
        if (oasr_state_error_type == NULL) {
            PyErr_Clear();
            return PyExc_ValueError;
        }
    }
    return oasr_state_error_type;
}

/* state[key] as a count (0 when missing); -1 with StreamStateError set when it is not one. */
static Py_ssize_t oasr_state_int(PyObject *state, PyObject *key)
{
    Py_ssize_t value = -1;
    PyObject *v = PyDict_GetItemWithError(state, key);
    if (v == NULL) return PyErr_Occurred() ? -1 : 0;
    if (PyLong_CheckExact(v)) {
        value = PyLong_AsSsize_t(v);
        if (value == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    if (value < 0) {
        PyErr_Format(oasr_state_error(), "stream state[%R] must be a non-negative int, got %R; "
                     "start a new stream from {}", key, v);
        return -1;
    }
    return value;
}

/* state["text"] = state["text"][:-old_tail] + settled + tail; record the new tail length and
 * settled level. Returns 0, or -1 with an exception set (state untouched then, except on
 * MemoryError half-way). */
static int oasr_commit(PyObject *state, PyObject *settled, PyObject *tail)
{
    PyObject *text, *num;
    Py_ssize_t old_tail, level, n, settled_len, tail_len;
    int settled_level;

    if (oasr_textbuf_keys() < 0) return -1;
    if (!PyDict_CheckExact(state) && !PyDict_Check(state)) {
        PyErr_SetString(PyExc_TypeError, "stream state must be a dict");
        return -1;
    }
    if (!PyUnicode_Check(settled) || !PyUnicode_Check(tail)) {
        PyErr_SetString(PyExc_TypeError, "settled text and tail must be str");
        return -1;
    }
    old_tail = oasr_state_int(state, oasr_key_tail);
    if (old_tail < 0) return -1;
    level = oasr_state_int(state, oasr_key_level);
    if (level < 0) return -1;
    if (level == 3 || level > 4) {
        PyErr_Format(oasr_state_error(), "stream state['_level'] = %zd is not a str storage level "
                     "(0, 1, 2 or 4); start a new stream from {}", level);
        return -1;
    }
    settled_len = PyUnicode_GET_LENGTH(settled);
    tail_len = PyUnicode_GET_LENGTH(tail);

    text = PyDict_GetItemWithError(state, oasr_key_text);
    if (text == NULL) {
        if (PyErr_Occurred()) return -1;
        text = PyUnicode_New(0, 0);
        if (text == NULL) return -1;
    } else {
        if (!PyUnicode_CheckExact(text)) {
            PyErr_Format(oasr_state_error(), "stream state['text'] must be a str, got %R; "
                         "start a new stream from {}", text);
            return -1;
        }
        n = PyUnicode_GET_LENGTH(text);
        if (old_tail > n) {
            PyErr_SetString(oasr_state_error(), "stream state is corrupt: its tail is longer than its "
                            "text; start a new stream from {}");
            return -1;
        }
        if (old_tail == 0 && settled_len == 0 && tail_len == 0) return 0;
        Py_INCREF(text);
        /* Drop the dict's reference so ours may be the only one. */
        if (PyDict_SetItem(state, oasr_key_text, Py_None) < 0) { Py_DECREF(text); return -1; }
    }
    n = PyUnicode_GET_LENGTH(text);
    /* Fast path: one resize to the final length, then copy into place. Cutting the old tail
     * off first and growing again frees a remainder that the allocator may hand out at once
     * (glibc's tcache), after which the growth cannot extend in place and realloc copies the
     * whole transcript: O(n) per token on streams whose held tails are tens of bytes (byte-
     * fallback runs of emoji). Only for a string nobody else holds, hashed or interned
     * (CPython's own rule for writing into a str), when the result keeps its storage kind,
     * and when the length changes: the resize is what drops the string's cached UTF-8 (and
     * wchar) copies, which an in-place write at the same length would leave stale. */
    if (old_tail > 0 && n - old_tail + settled_len + tail_len != n
            && Py_REFCNT(text) == 1 && ((PyASCIIObject *)text)->hash == -1
            && !PyUnicode_CHECK_INTERNED(text) && oasr_str_level(text) == level
            && (settled_len == 0 || (int)PyUnicode_KIND(settled) <= (int)PyUnicode_KIND(text))
            && (tail_len == 0 || (int)PyUnicode_KIND(tail) <= (int)PyUnicode_KIND(text))
            && (level != 0 || ((settled_len == 0 || PyUnicode_IS_ASCII(settled)) && (tail_len == 0 || PyUnicode_IS_ASCII(tail))))) {
        Py_ssize_t keep = n - old_tail;
        if (PyUnicode_Resize(&text, keep + settled_len + tail_len) < 0) goto fail;
        if (settled_len && PyUnicode_CopyCharacters(text, keep, settled, 0, settled_len) < 0) goto fail;
        if (tail_len && PyUnicode_CopyCharacters(text, keep + settled_len, tail, 0, tail_len) < 0) goto fail;
        if (settled_len) {
            settled_level = oasr_str_level(settled);
            if (settled_level > level) level = settled_level;
        }
        goto store;
    }
    if (old_tail > 0) {
        if (oasr_str_level(text) == level) {
            if (PyUnicode_Resize(&text, n - old_tail) < 0) goto fail;
        } else {
            PyObject *cut = PyUnicode_Substring(text, 0, n - old_tail);
            if (cut == NULL) goto fail;
            Py_DECREF(text);
            text = cut;
        }
    }
    if (settled_len) {
        PyUnicode_Append(&text, settled);
        if (text == NULL) return -1;
        settled_level = oasr_str_level(settled);
        if (settled_level > level) level = settled_level;
    }
    if (tail_len) {
        PyUnicode_Append(&text, tail);
        if (text == NULL) return -1;
    }
store:
    if (PyDict_SetItem(state, oasr_key_text, text) < 0) goto fail;
    Py_DECREF(text);
    num = PyLong_FromSsize_t(tail_len);
    if (num == NULL || PyDict_SetItem(state, oasr_key_tail, num) < 0) { Py_XDECREF(num); return -1; }
    Py_DECREF(num);
    num = PyLong_FromSsize_t(level);
    if (num == NULL || PyDict_SetItem(state, oasr_key_level, num) < 0) { Py_XDECREF(num); return -1; }
    Py_DECREF(num);
    return 0;
fail:
    PyDict_SetItem(state, oasr_key_text, text);
    Py_DECREF(text);
    return -1;
}

#endif
