/* The greedy probe of raptor_cp.heuristics.range_packing, compiled.
 *
 * `RangePacker._probe` documents the rule: from a range's start, each run ends
 * at the furthest position within capacity reach whose load sum stays within
 * the bound; the probe succeeds when the range is covered within the run
 * limit. This loop runs it query by query (the numpy version ran all queries
 * in lockstep, one vectorised step per run: up to 169 steps over every open
 * query, most of a pipeline selection's stage pricing; docs/benchmarks.md,
 * "Seventh pass").
 *
 * O(M K log R) for M queries of at most K runs of at most R tasks.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../periodic/_loop_support.h"

enum { STARTS, STOPS, BOUND, LIMIT, PREFIX, REACH, OK, LARGEST, NEXT_BOUND, NUM_ARRAYS };

static const char *ARRAY_NAMES[NUM_ARRAYS] = {"starts", "stops",   "bound",  "limit",
                                              "prefix", "reach",   "ok",     "largest",
                                              "next_bound"};

/* The largest j with prefix[j] <= value, given prefix[from] <= value (a run's own start
 * under a non-negative bound; prefix is non-decreasing). Gallops from `from`, so a run
 * of length r costs O(log r) nearby reads instead of a search of the whole sequence. */
static inline int64_t last_within(const int64_t *prefix, int64_t size, int64_t from,
                                  int64_t value) {
    int64_t low = from, step = 1; /* prefix[low] <= value */
    while (low + step < size && prefix[low + step] <= value) {
        low += step;
        step *= 2;
    }
    int64_t high = low + step < size ? low + step : size; /* prefix[high] > value or end */
    while (high - low > 1) {
        int64_t middle = low + (high - low) / 2;
        if (prefix[middle] <= value)
            low = middle;
        else
            high = middle;
    }
    return low;
}

static PyObject *probe(PyObject *self, PyObject *args) {
    PyObject *objects[NUM_ARRAYS];
    Array arrays[NUM_ARRAYS];
    int64_t *p[NUM_ARRAYS];
    PyObject *result = NULL;
    for (int i = 0; i < NUM_ARRAYS; i++) arrays[i].held = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6], &objects[7], &objects[8]))
        return NULL;
    for (int i = 0; i < NUM_ARRAYS; i++) {
        p[i] = array_of(objects[i], &arrays[i], ARRAY_NAMES[i], i >= OK);
        if (p[i] == NULL) goto cleanup;
    }
    Py_ssize_t m = arrays[STARTS].view.len / 8;
    int64_t size = arrays[PREFIX].view.len / 8, last = size - 1;
    for (int i = STOPS; i < NUM_ARRAYS; i++) {
        Py_ssize_t expected = i == PREFIX ? size : i == REACH ? size - 1 : m;
        if (arrays[i].view.len / 8 != expected) {
            PyErr_Format(PyExc_ValueError, "probe: %s has the wrong length", ARRAY_NAMES[i]);
            goto cleanup;
        }
    }
    const int64_t *prefix = p[PREFIX], *reach = p[REACH];
    for (Py_ssize_t q = 0; q < m; q++) {
        int64_t pos = p[STARTS][q], stop = p[STOPS][q], cap = p[BOUND][q], limit = p[LIMIT][q];
        int64_t big = 0, grow = INT64_MAX, runs = 0, ok = pos >= stop;
        if (pos < 0 || stop > size - 1 || cap < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "probe: a range lies outside the sequence or a bound is negative");
            goto cleanup;
        }
        while (!ok) {
            int64_t base = prefix[pos];
            int64_t by_bound = last_within(prefix, size, pos, base + cap);
            int64_t within = reach[pos] < stop ? reach[pos] : stop;
            int64_t end = by_bound < within ? by_bound : within;
            if (by_bound < within) {
                int64_t after = end + 1 < last ? end + 1 : last;
                if (prefix[after] - base < grow) grow = prefix[after] - base;
            }
            if (prefix[end] - base > big) big = prefix[end] - base;
            runs++;
            int64_t stuck = end <= pos, done = end >= stop && !stuck;
            if (done || stuck || runs >= limit) {
                ok = done && runs <= limit;
                break;
            }
            pos = end;
        }
        p[OK][q] = ok;
        p[LARGEST][q] = big;
        p[NEXT_BOUND][q] = grow;
    }
    Py_INCREF(Py_None);
    result = Py_None;

cleanup:
    for (int i = 0; i < NUM_ARRAYS; i++)
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
    return result;
}

static PyMethodDef methods[] = {
    {"probe", probe, METH_VARARGS,
     "probe(starts, stops, bound, limit, prefix, reach, ok, largest, next_bound): the greedy "
     "probe of every query (RangePacker._probe), written into the last three arrays"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_range_probe",
                                    "The greedy probe of range_packing.py, compiled.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__range_probe(void) { return PyModule_Create(&module); }
