/* What oasr_read_text (in textbuf.h) read of a stream state: a type only, so that a module
 * calling _textbuf's functions can keep one on its stack. The functions themselves are compiled
 * once, into oasr_tok._engine.textbuf, and reached through its cdef functions (_engine/textbuf.pxd). */
#ifndef OASR_TEXTSTATE_H
#define OASR_TEXTSTATE_H
#include <Python.h>

/* The validated text part of a state. */
typedef struct {
    PyObject *text;        /* borrowed; NULL when the state has none yet */
    Py_ssize_t n, old_tail, keep;
    int level;             /* of text */
    Py_ssize_t wide;       /* index in text[:keep] of a character needing `level`, or -1 */
    Py_ssize_t recorded;   /* state["_wide"] as found (-1: absent) */
} oasr_textstate;

#endif
