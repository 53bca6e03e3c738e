/* Reading a token id out of a Python int without a function call, for the compiled loops. */
#ifndef OASR_IDS_H
#define OASR_IDS_H
#include <Python.h>
#if PY_VERSION_HEX < 0x030B0000
#include <longintrepr.h>
#endif

/* 1 and the value in *out if `op` is an exact int that fits one internal digit; 0 otherwise
 * (the caller then takes the general, checked path). */
static inline int oasr_small_id(PyObject *op, Py_ssize_t *out)
{
    if (!PyLong_CheckExact(op)) return 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)op)) {
        *out = PyUnstable_Long_CompactValue((PyLongObject *)op);
        return 1;
    }
    return 0;
#else
    switch (Py_SIZE(op)) {
    case 0: *out = 0; return 1;
    case 1: *out = (Py_ssize_t)((PyLongObject *)op)->ob_digit[0]; return 1;
    default: return 0;
    }
#endif
}

static inline PyObject **oasr_list_items(PyObject *list) { return ((PyListObject *)list)->ob_item; }
#endif
