/* Kahn's algorithm taking the ready node of least priority, compiled.
 *
 * `raptor_cp.pipeline.realize.program_ranks` orders every compute unit and
 * same-stage transfer of a pipeline candidate (about 140,000 nodes on ResNet-50)
 * this way; in Python the loop was a third of a candidate's realization
 * (docs/benchmarks.md, "Seventh pass"). The caller ranks its lexicographic keys
 * into distinct integer priorities and hands over the successor lists as CSR
 * arrays (raptor_cp/periodic/arrays.py).
 *
 * O((N + E) log N) time, O(N) storage besides the inputs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_loop_support.h"

/* run(priority, successor_start, successor, rank) -> nodes ranked
 *
 * Fills rank[v] with v's position in the order (-1 for nodes on or behind a
 * cycle) and returns how many nodes were ranked (N when the graph is acyclic). */
static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *objects[4];
    static const char *names[4] = {"priority", "successor_start", "successor", "rank"};
    Array arrays[4] = {{{0}, 0}, {{0}, 0}, {{0}, 0}, {{0}, 0}};
    int64_t *data[4];
    PyObject *result = NULL;
    int64_t *missing = NULL;
    Heap ready = {NULL, 0};
    if (!PyArg_ParseTuple(args, "OOOO", &objects[0], &objects[1], &objects[2], &objects[3]))
        return NULL;
    for (int i = 0; i < 4; i++) {
        data[i] = array_of(objects[i], &arrays[i], names[i], i == 3);
        if (data[i] == NULL) goto cleanup;
    }
    const int64_t *priority = data[0], *start = data[1], *successor = data[2];
    int64_t *rank = data[3];
    Py_ssize_t n = arrays[0].view.len / 8;
    if (arrays[1].view.len / 8 != n + 1 || arrays[3].view.len / 8 != n ||
        arrays[2].view.len / 8 != start[n]) {
        PyErr_SetString(PyExc_ValueError, "ranked_order: array lengths disagree");
        goto cleanup;
    }
    size_t slots = (size_t)(n > 0 ? n : 1);
    missing = calloc(slots, sizeof(int64_t));
    ready.items = malloc(slots * sizeof(Key));
    if (!missing || !ready.items) {
        PyErr_NoMemory();
        goto cleanup;
    }
    for (Py_ssize_t i = 0; i < start[n]; i++) missing[successor[i]]++;
    for (Py_ssize_t v = 0; v < n; v++) {
        rank[v] = -1;
        if (missing[v] == 0) heap_push(&ready, (Key){priority[v], v});
    }
    int64_t position = 0;
    while (ready.size > 0) {
        int64_t v = heap_pop(&ready).rest;
        rank[v] = position++;
        for (int64_t i = start[v]; i < start[v + 1]; i++) {
            int64_t w = successor[i];
            if (--missing[w] == 0) heap_push(&ready, (Key){priority[w], w});
        }
    }
    result = PyLong_FromLongLong((long long)position);

cleanup:
    for (int i = 0; i < 4; i++)
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
    free(missing);
    free(ready.items);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(priority, successor_start, successor, rank) -> nodes ranked: Kahn's algorithm "
     "taking the ready node of least priority; rank[v] is v's position, -1 if unreached"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ranked_order",
                                    "Kahn's algorithm by least priority (see program_ranks).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__ranked_order(void) { return PyModule_Create(&module); }
