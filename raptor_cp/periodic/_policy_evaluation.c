/* The policy evaluation of Howard's algorithm (raptor_cp/periodic/howard.py), compiled.
 *
 * A policy gives every node of `nodes` one successor; the policy graph is then
 * a set of cycles with trees hanging into them. For every node this finds its
 * cycle, the cycle's smallest node (its root) and reduced ratio p/q (summed
 * weights over summed distances, divided by their gcd), and the scaled
 * potential X: X(root) = 0 and X(x) = q w(x) - p d(x) + X(succ(x)) along the
 * policy edge. In numpy this was pointer doubling, O(V log V) in vectorized
 * steps and most of a Howard run on a pipeline candidate's event graph
 * (docs/benchmarks.md, "Eighth pass"); here it is one walk per node, O(V).
 *
 * Nodes outside `nodes` get p = 0, q = 1, X = 0 and component 0. The caller
 * guarantees (howard.py's 2^61 check) that no potential overflows int64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_loop_support.h"

enum { NODES, SUCC, WEIGHT, DISTANCE, LAM_P, LAM_Q, VALUE, COMPONENT, ROOTS, NUM_ARRAYS };

static const char *const ARRAY_NAMES[NUM_ARRAYS] = {
    "nodes", "succ", "weight", "distance", "lam_p", "lam_q", "value", "component", "roots"};

static int ascending(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t gcd(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    while (b != 0) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* evaluate(nodes, succ, weight, distance, lam_p, lam_q, value, component, roots) -> cycles
 *
 * succ, weight and distance are per node (the policy edge's head, weight and
 * distance; read for nodes of `nodes` only). Writes the four per-node outputs
 * and the cycles' roots, ascending, into roots[0..cycles). */
static PyObject *evaluate(PyObject *self, PyObject *args) {
    PyObject *objects[NUM_ARRAYS];
    Array arrays[NUM_ARRAYS];
    int64_t *p[NUM_ARRAYS];
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    for (int i = 0; i < NUM_ARRAYS; i++) arrays[i].held = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6], &objects[7], &objects[8]))
        return NULL;
    for (int i = 0; i < NUM_ARRAYS; i++) {
        p[i] = array_of(objects[i], &arrays[i], ARRAY_NAMES[i], i >= LAM_P);
        if (p[i] == NULL) goto cleanup;
    }
    Py_ssize_t n = arrays[NODES].view.len / 8, size = arrays[SUCC].view.len / 8;
    for (int i = WEIGHT; i < NUM_ARRAYS; i++) {
        Py_ssize_t expected = i == ROOTS ? n : size;
        if (arrays[i].view.len / 8 != expected) {
            PyErr_Format(PyExc_ValueError, "evaluate: %s has the wrong length", ARRAY_NAMES[i]);
            goto cleanup;
        }
    }
    const int64_t *nodes = p[NODES], *succ = p[SUCC], *weight = p[WEIGHT],
                  *distance = p[DISTANCE];
    int64_t *lam_p = p[LAM_P], *lam_q = p[LAM_Q], *value = p[VALUE], *component = p[COMPONENT];
    int64_t *roots = p[ROOTS];
    /* state[x]: 0 unseen, 1 on the current walk, 2 done; root_of[x]; the walk itself. */
    scratch = malloc((size_t)(3 * (size > 0 ? size : 1)) * sizeof(int64_t));
    if (!scratch) {
        PyErr_NoMemory();
        goto cleanup;
    }
    int64_t *state = scratch, *root_of = scratch + size, *walk = scratch + 2 * size;
    for (Py_ssize_t x = 0; x < size; x++) {
        state[x] = 2;
        lam_p[x] = value[x] = component[x] = 0;
        lam_q[x] = 1;
        root_of[x] = x;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t x = nodes[i];
        if (x < 0 || x >= size || (i > 0 && nodes[i - 1] >= x)) {
            PyErr_SetString(PyExc_ValueError, "evaluate: nodes must be ascending node ids");
            goto cleanup;
        }
        state[x] = 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (succ[nodes[i]] < 0 || succ[nodes[i]] >= size || state[succ[nodes[i]]] == 2) {
            PyErr_SetString(PyExc_ValueError, "evaluate: a policy edge leaves the nodes");
            goto cleanup;
        }
    Py_ssize_t cycles = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t length = 0;
        int64_t x = nodes[i];
        while (state[x] == 0) {
            state[x] = 1;
            walk[length++] = x;
            x = succ[x];
        }
        Py_ssize_t tail = length; /* walk[tail..length) is a new cycle, if any */
        if (state[x] == 1) {
            tail = length - 1;
            while (walk[tail] != x) tail--;
            int64_t root = x, total_w = 0, total_d = 0;
            for (Py_ssize_t j = tail; j < length; j++) {
                if (walk[j] < root) root = walk[j];
                total_w += weight[walk[j]];
                total_d += distance[walk[j]];
            }
            int64_t common = gcd(total_w, total_d);
            int64_t q = common ? total_d / common : 1, pp = common ? total_w / common : 0;
            roots[cycles++] = root;
            for (Py_ssize_t j = tail; j < length; j++) {
                root_of[walk[j]] = root;
                lam_p[walk[j]] = pp;
                lam_q[walk[j]] = q;
            }
            /* Around the cycle backwards from the root (walk[j + 1] follows walk[j], and
             * walk[tail] follows walk[length - 1]): X(root) = 0. */
            Py_ssize_t at = tail, cycle_length = length - tail;
            while (walk[at] != root) at++;
            value[root] = 0;
            state[root] = 2;
            for (Py_ssize_t k = 1; k < cycle_length; k++) {
                Py_ssize_t j = at - k < tail ? at - k + cycle_length : at - k;
                int64_t y = walk[j];
                value[y] = q * weight[y] - pp * distance[y] + value[succ[y]];
                state[y] = 2;
            }
        }
        /* The walk's tree part, nearest the cycle first. */
        for (Py_ssize_t j = tail - 1; j >= 0; j--) {
            int64_t y = walk[j], next = succ[y];
            root_of[y] = root_of[next];
            lam_p[y] = lam_p[next];
            lam_q[y] = lam_q[next];
            value[y] = lam_q[y] * weight[y] - lam_p[y] * distance[y] + value[next];
            state[y] = 2;
        }
    }
    /* Roots ascending; a node's component is its root's position among them. */
    qsort(roots, (size_t)cycles, sizeof(int64_t), ascending);
    for (Py_ssize_t i = 0; i < cycles; i++) state[roots[i]] = i; /* reuse: root -> position */
    for (Py_ssize_t i = 0; i < n; i++) component[nodes[i]] = state[root_of[nodes[i]]];
    result = PyLong_FromSsize_t(cycles);

cleanup:
    for (int i = 0; i < NUM_ARRAYS; i++)
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
    free(scratch);
    return result;
}

static PyMethodDef methods[] = {
    {"evaluate", evaluate, METH_VARARGS,
     "evaluate(nodes, succ, weight, distance, lam_p, lam_q, value, component, roots) -> cycles: "
     "Howard's policy evaluation (ratio, potential and cycle of every node)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_policy_evaluation",
                                    "Howard's policy evaluation, compiled (see howard.py).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__policy_evaluation(void) { return PyModule_Create(&module); }
