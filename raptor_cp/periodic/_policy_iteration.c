/* Howard's policy iteration (raptor_cp/periodic/howard.py), compiled.
 *
 * Evaluation: a policy gives every node of `nodes` one successor; the policy
 * graph is then a set of cycles with trees hanging into them. For every node
 * this finds its cycle, the cycle's smallest node (its root) and reduced ratio
 * p/q (summed weights over summed distances, divided by their gcd), and the
 * scaled potential X: X(root) = 0 and X(x) = q w(x) - p d(x) + X(succ(x)) along
 * the policy edge. One walk per node, O(V) (numpy pointer doubling was O(V log
 * V) in vectorized steps). Nodes outside `nodes` get p = 0, q = 1, X = 0 and
 * component 0.
 *
 * Iteration: evaluate; rank the cycles by ratio (ties: root order); the
 * cascading ratio step, else the potential step, exactly as howard.py's module
 * docstring states them; until neither switches a node. O(V + E + C log C) per
 * iteration for C cycles. In numpy the improvement steps' grouping sorts and
 * the evaluation were most of a witness (docs/benchmarks.md, "Eighth pass").
 *
 * The caller guarantees (howard.py's 2^61 check) that no potential overflows
 * int64; ratios are compared exactly in 128 bits.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_loop_support.h"

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

/* The policy evaluation (module docstring) of the policy succ/weight/distance (per node,
 * read for `nodes` only, which must be ascending and closed under succ). `scratch` holds
 * 3 * size int64. Returns the number of cycles; their roots, ascending, are roots[0..). */
static Py_ssize_t evaluate_policy(Py_ssize_t size, Py_ssize_t n, const int64_t *nodes,
                                  const int64_t *succ, const int64_t *weight,
                                  const int64_t *distance, int64_t *lam_p, int64_t *lam_q,
                                  int64_t *value, int64_t *component, int64_t *roots,
                                  int64_t *scratch) {
    /* state[x]: 0 unseen, 1 on the current walk, 2 done; root_of[x]; the walk itself. */
    int64_t *state = scratch, *root_of = scratch + size, *walk = scratch + 2 * size;
    for (Py_ssize_t x = 0; x < size; x++) {
        state[x] = 2;
        lam_p[x] = value[x] = component[x] = 0;
        lam_q[x] = 1;
        root_of[x] = x;
    }
    for (Py_ssize_t i = 0; i < n; i++) state[nodes[i]] = 0;
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
    return cycles;
}

/* A policy cycle for ranking: its ratio p/q (q > 0) and its index (root order). */
typedef struct {
    int64_t p, q, index;
} Cycle;

/* By ratio, compared exactly in 128 bits, then by index. */
static int by_ratio_then_index(const void *a, const void *b) {
    const Cycle *x = a, *y = b;
    __int128 left = (__int128)x->p * y->q, right = (__int128)y->p * x->q;
    if (left != right) return (left > right) - (left < right);
    return (x->index > y->index) - (x->index < y->index);
}

/* Whether slot e beats slot f (f < 0: none yet) for one node: larger `first`, then
 * larger `second`, then the smaller edge id. */
static inline int beats(int64_t first_e, int64_t second_e, int64_t id_e, int64_t f,
                        int64_t first_f, int64_t second_f, int64_t id_f) {
    if (f < 0) return 1;
    if (first_e != first_f) return first_e > first_f;
    if (second_e != second_f) return second_e > second_f;
    return id_e < id_f;
}

enum { U, V, W, D, IDS, INTO_START, INTO, INODES, POLICY, ILAM_P, ILAM_Q, IVALUE, ICOMPONENT,
       IROOTS, NUM_ITERATE };

static const char *const ITERATE_NAMES[NUM_ITERATE] = {
    "u", "v", "w", "d", "ids", "into_start", "into", "nodes", "policy", "lam_p", "lam_q",
    "value", "component", "roots"};

/* iterate(u, v, w, d, ids, into_start, into, nodes, policy, lam_p, lam_q, value, component,
 *         roots) -> (evaluations, cycles)
 *
 * howard.py's policy iteration from `policy` (an edge slot per node of `nodes`, -1
 * elsewhere) until neither step switches a node: evaluate, then the cascading ratio
 * step, else the potential step. Edges are slots sorted by (u, id); into/into_start list
 * each node's entering slots. Leaves the final policy in `policy` and its evaluation in
 * the outputs. */
static PyObject *iterate(PyObject *self, PyObject *args) {
    Array arrays[NUM_ITERATE];
    int64_t *p[NUM_ITERATE];
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    Cycle *ranked = NULL;
    for (int i = 0; i < NUM_ITERATE; i++) arrays[i].held = 0;
    if (PyTuple_GET_SIZE(args) != NUM_ITERATE) {
        PyErr_SetString(PyExc_TypeError, "iterate takes 14 arrays");
        return NULL;
    }
    for (int i = 0; i < NUM_ITERATE; i++) {
        p[i] = array_of(PyTuple_GET_ITEM(args, i), &arrays[i], ITERATE_NAMES[i], i >= POLICY);
        if (p[i] == NULL) goto cleanup;
    }
    Py_ssize_t e_count = arrays[U].view.len / 8, n = arrays[INODES].view.len / 8;
    Py_ssize_t size = arrays[POLICY].view.len / 8;
    for (int i = V; i < NUM_ITERATE; i++) {
        Py_ssize_t expected = i <= INTO && i != INTO_START ? e_count
                              : i == INTO_START            ? size + 1
                              : i == INODES || i == IROOTS ? n
                                                           : size;
        if (arrays[i].view.len / 8 != expected) {
            PyErr_Format(PyExc_ValueError, "iterate: %s has the wrong length", ITERATE_NAMES[i]);
            goto cleanup;
        }
    }
    const int64_t *u = p[U], *v = p[V], *w = p[W], *d = p[D], *ids = p[IDS];
    const int64_t *into_start = p[INTO_START], *into = p[INTO], *nodes = p[INODES];
    int64_t *policy = p[POLICY], *lam_p = p[ILAM_P], *lam_q = p[ILAM_Q], *value = p[IVALUE];
    int64_t *component = p[ICOMPONENT], *roots = p[IROOTS];
    for (Py_ssize_t e = 0; e < e_count; e++)
        if (u[e] < 0 || u[e] >= size || v[e] < 0 || v[e] >= size || into[e] < 0 ||
            into[e] >= e_count) {
            PyErr_SetString(PyExc_ValueError, "iterate: an edge names a node out of range");
            goto cleanup;
        }
    for (Py_ssize_t i = 0; i < n; i++)
        if (nodes[i] < 0 || nodes[i] >= size || (i > 0 && nodes[i - 1] >= nodes[i]) ||
            policy[nodes[i]] < 0 || policy[nodes[i]] >= e_count ||
            u[policy[nodes[i]]] != nodes[i]) {
            PyErr_SetString(PyExc_ValueError, "iterate: a node's policy is not one of its edges");
            goto cleanup;
        }
    /* evaluation scratch (3 size); succ, weight, distance, rank, new_rank, best,
     * raised_rank, touched (size each); slots, next_slots (e_count each) */
    size_t slots_needed = (size_t)(11 * size + 2 * e_count + 1);
    scratch = malloc(slots_needed * sizeof(int64_t));
    ranked = malloc((size_t)(n > 0 ? n : 1) * sizeof(Cycle));
    if (!scratch || !ranked) {
        PyErr_NoMemory();
        goto cleanup;
    }
    int64_t *walk_scratch = scratch, *succ = scratch + 3 * size, *weight = succ + size;
    int64_t *distance = weight + size, *rank = distance + size, *new_rank = rank + size;
    int64_t *best = new_rank + size, *raised_rank = best + size, *touched = raised_rank + size;
    int64_t *slots = touched + size, *next_slots = slots + e_count;
    for (Py_ssize_t x = 0; x < size; x++) {
        succ[x] = x;
        weight[x] = distance[x] = 0;
        best[x] = -1;
    }
    long long evaluations = 0;
    Py_ssize_t cycles = 0;
    for (;;) {
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t x = nodes[i], e = policy[x];
            succ[x] = v[e];
            weight[x] = w[e];
            distance[x] = d[e];
        }
        evaluations++;
        cycles = evaluate_policy(size, n, nodes, succ, weight, distance, lam_p, lam_q, value,
                                 component, roots, walk_scratch);
        /* Each cycle's rank among the cycles sorted by ratio (ties: root order). */
        for (Py_ssize_t i = 0; i < cycles; i++)
            ranked[i] = (Cycle){lam_p[roots[i]], lam_q[roots[i]], i};
        qsort(ranked, (size_t)cycles, sizeof(Cycle), by_ratio_then_index);
        for (Py_ssize_t i = 0; i < cycles; i++) new_rank[ranked[i].index] = i;
        for (Py_ssize_t x = 0; x < size; x++) rank[x] = new_rank[component[x]];
        /* Ratio step, cascading: a round reads the ranks as they were at its start. */
        int switched = 0;
        Py_ssize_t slot_count = e_count;
        for (Py_ssize_t e = 0; e < e_count; e++) slots[e] = e;
        int64_t *cascade_rank = new_rank; /* reuse: a copy the cascade may raise */
        for (Py_ssize_t x = 0; x < size; x++) cascade_rank[x] = rank[x];
        while (slot_count > 0) {
            Py_ssize_t raised = 0;
            for (Py_ssize_t k = 0; k < slot_count; k++) {
                int64_t e = slots[k], a = u[e], b = v[e];
                if (cascade_rank[b] <= cascade_rank[a]) continue;
                int64_t val = lam_q[b] * w[e] - lam_p[b] * d[e] + value[b];
                int64_t f = best[a];
                int64_t f_val = f < 0 ? 0 : lam_q[v[f]] * w[f] - lam_p[v[f]] * d[f] + value[v[f]];
                if (f < 0) touched[raised++] = a;
                if (beats(cascade_rank[b], val, ids[e], f, f < 0 ? 0 : cascade_rank[v[f]], f_val,
                          f < 0 ? 0 : ids[f]))
                    best[a] = e;
            }
            if (raised == 0) break;
            /* New ranks from the round's start, then switch. */
            for (Py_ssize_t k = 0; k < raised; k++)
                raised_rank[k] = cascade_rank[v[best[touched[k]]]];
            Py_ssize_t next_count = 0;
            for (Py_ssize_t k = 0; k < raised; k++) {
                int64_t a = touched[k];
                policy[a] = best[a];
                cascade_rank[a] = raised_rank[k];
                best[a] = -1;
                for (int64_t j = into_start[a]; j < into_start[a + 1]; j++)
                    next_slots[next_count++] = into[j];
            }
            int64_t *swap = slots;
            slots = next_slots;
            next_slots = swap;
            slot_count = next_count;
            switched = 1;
        }
        if (switched) continue;
        /* Potential step, on the evaluation's ranks. */
        Py_ssize_t gained = 0;
        for (Py_ssize_t e = 0; e < e_count; e++) {
            int64_t a = u[e], b = v[e];
            if (rank[a] != rank[b]) continue;
            int64_t val = lam_q[a] * w[e] - lam_p[a] * d[e] + value[b];
            if (val <= value[a]) continue;
            int64_t f = best[a];
            int64_t f_val = f < 0 ? 0 : lam_q[a] * w[f] - lam_p[a] * d[f] + value[v[f]];
            if (f < 0) touched[gained++] = a;
            if (beats(0, val, ids[e], f, 0, f_val, f < 0 ? 0 : ids[f])) best[a] = e;
        }
        if (gained == 0) break;
        for (Py_ssize_t k = 0; k < gained; k++) {
            policy[touched[k]] = best[touched[k]];
            best[touched[k]] = -1;
        }
    }
    result = Py_BuildValue("Ln", evaluations, cycles);

cleanup:
    for (int i = 0; i < NUM_ITERATE; i++)
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
    free(scratch);
    free(ranked);
    return result;
}

static PyMethodDef methods[] = {
    {"iterate", iterate, METH_VARARGS,
     "iterate(u, v, w, d, ids, into_start, into, nodes, policy, lam_p, lam_q, value, component, "
     "roots) -> (evaluations, cycles): Howard's policy iteration to its fixed point"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_policy_iteration",
                                    "Howard's policy iteration, compiled (see howard.py).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__policy_iteration(void) { return PyModule_Create(&module); }
