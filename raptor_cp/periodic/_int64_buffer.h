/* The compiled event loops' one input convention: flat, C-contiguous int64 arrays
 * (raptor_cp/periodic/arrays.py makes them), read through the buffer protocol. */
#ifndef RAPTOR_INT64_BUFFER_H
#define RAPTOR_INT64_BUFFER_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    Py_buffer view;
    int held;
} Array;

/* The int64 data of `obj` (held in `a` until PyBuffer_Release), or NULL with a TypeError
 * naming `name`. */
static int64_t *array_of(PyObject *obj, Array *a, const char *name, int writable) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0) return NULL;
    a->held = 1;
    if (a->view.itemsize != 8 || a->view.format == NULL ||
        (a->view.format[0] != 'q' && a->view.format[0] != 'l') || a->view.format[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous int64 array", name);
        return NULL;
    }
    return (int64_t *)a->view.buf;
}

#endif
