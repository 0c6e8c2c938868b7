/* What the compiled loops share: their input convention (flat, C-contiguous int64
 * arrays, made by raptor_cp/periodic/arrays.py and read through the buffer protocol)
 * and their binary heap of (time, rest) keys. */
#ifndef RAPTOR_LOOP_SUPPORT_H
#define RAPTOR_LOOP_SUPPORT_H

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

/* A heap key: earlier time first, then smaller `rest` (each loop packs its tie order
 * there). */
typedef struct {
    int64_t time;
    int64_t rest;
} Key;

static inline int key_less(Key a, Key b) {
    return a.time < b.time || (a.time == b.time && a.rest < b.rest);
}

typedef struct {
    Key *items;
    Py_ssize_t size;
} Heap;

static void heap_push(Heap *h, Key k) {
    Py_ssize_t i = h->size++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!key_less(k, h->items[parent])) break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = k;
}

static Key heap_pop(Heap *h) {
    Key top = h->items[0];
    Key last = h->items[--h->size];
    Py_ssize_t i = 0, n = h->size;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && key_less(h->items[child + 1], h->items[child])) child++;
        if (!key_less(h->items[child], last)) break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (n > 0) h->items[i] = last;
    return top;
}

#endif
