/* The stage placer's three loops, compiled: greedy, replicated and timing.
 *
 * `raptor_cp.pipeline.layout.StagePlacer` documents the rules; this module runs
 * them over flat arrays. In Python (numpy per task) they were three quarters of
 * building a pipeline candidate: about 0.25 s per stage placed on ResNet-50
 * (docs/benchmarks.md, "Eighth pass").
 *
 * A stage of T tasks is given by position (0..T-1, topological order): its
 * cost, the CSR lists of its same-stage predecessor edges (source position,
 * per edge) and, where a loop needs them, the CSR lists of its distinct local
 * weight ids. Cores are region positions 0..k-1. An edge's transfer from core
 * a to core b costs 0 when a == b, else
 *
 *     fixed[a k + b] + units[e] * per_unit[a k + b] + constant[e]
 *
 * (`raptor_cp.targets.base.TransferTerms`); empty fixed and per_unit tables
 * mean a price that does not depend on the pair.
 *
 * Time per loop: O((T + E) k + W k) for greedy and replicated (every task
 * prices every core; W local weights), O((T + E) log T) for timing. Storage
 * O(T + k + W k) besides the inputs (greedy's residency bits).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../periodic/_loop_support.h"

#define NEVER INT64_MAX

typedef struct {
    const int64_t *fixed, *per_unit, *units, *constant;
    int64_t k;
} Prices;

static inline int64_t price(const Prices *p, int64_t a, int64_t b, int64_t e) {
    if (a == b) return 0;
    if (p->fixed == NULL) return p->constant[e];
    int64_t pair = a * p->k + b;
    return p->fixed[pair] + p->units[e] * p->per_unit[pair] + p->constant[e];
}

/* Up to 12 arrays of one call, released together. */
typedef struct {
    Array arrays[12];
    int64_t *data[12];
    Py_ssize_t length[12];
    int count;
} Inputs;

static void release_inputs(Inputs *in) {
    for (int i = 0; i < in->count; i++)
        if (in->arrays[i].held) PyBuffer_Release(&in->arrays[i].view);
}

/* The arrays every loop reads, in argument order after `k`. */
enum { COST, PRED_START, PRED_SOURCE, UNITS, CONSTANT, FIXED, PER_UNIT, COMMON };

static const char *const COMMON_NAMES[COMMON] = {"cost",  "pred_start", "pred_source", "units",
                                                 "constant", "fixed",   "per_unit"};

/* Checks CSR offsets: `t + 1` of them, from 0 to `total`, never decreasing. */
static int check_lists(const int64_t *start, Py_ssize_t start_length, Py_ssize_t t,
                       Py_ssize_t total, const char *what) {
    int ok = start_length == t + 1 && start[0] == 0 && start[t] == total;
    for (Py_ssize_t v = 0; ok && v < t; v++) ok = start[v + 1] >= start[v];
    if (!ok) PyErr_Format(PyExc_ValueError, "stage placement: the %s lists disagree", what);
    return ok ? 0 : -1;
}

/* Checks the common arrays' lengths and fills `prices`; -1 with ValueError otherwise.
 * Every edge's source is a task of the stage; with `ordered`, an earlier one (the
 * placement loops place producers first). */
static int check_common(const Inputs *in, int64_t k, int ordered, Prices *prices) {
    Py_ssize_t t = in->length[COST], e = in->length[PRED_SOURCE];
    const int64_t *start = in->data[PRED_START], *source = in->data[PRED_SOURCE];
    int pairs = in->length[FIXED] > 0;
    if (k < 1 || in->length[UNITS] != e || in->length[CONSTANT] != e ||
        in->length[PER_UNIT] != in->length[FIXED] || (pairs && in->length[FIXED] != k * k)) {
        PyErr_SetString(PyExc_ValueError, "stage placement: array lengths disagree");
        return -1;
    }
    if (check_lists(start, in->length[PRED_START], t, e, "predecessor") < 0) return -1;
    for (Py_ssize_t v = 0; v < t; v++) {
        for (int64_t i = start[v]; i < start[v + 1]; i++)
            if (source[i] < 0 || source[i] >= (ordered ? v : t) || source[i] == v) {
                PyErr_SetString(PyExc_ValueError, ordered
                                    ? "stage placement: an edge's source is not an earlier task"
                                    : "stage placement: an edge's source is not a stage task");
                return -1;
            }
    }
    *prices = (Prices){pairs ? in->data[FIXED] : NULL, pairs ? in->data[PER_UNIT] : NULL,
                       in->data[UNITS], in->data[CONSTANT], k};
    return 0;
}

/* Reads a loop's arguments: `k`, the common arrays (read-only), then `extra` more named
 * `names` (writable where `writable` says), and checks the common ones (`ordered`: see
 * check_common). -1 with an exception set otherwise; `in` is to be released either way. */
static int parse_inputs(PyObject *args, int extra, const char *const *names, const int *writable,
                        int ordered, int64_t *k, Inputs *in, Prices *prices) {
    in->count = 0;
    if (PyTuple_GET_SIZE(args) != 1 + COMMON + extra) {
        PyErr_Format(PyExc_TypeError, "expected %d arguments", 1 + COMMON + extra);
        return -1;
    }
    *k = PyLong_AsLongLong(PyTuple_GET_ITEM(args, 0));
    if (*k == -1 && PyErr_Occurred()) return -1;
    for (int i = 0; i < COMMON + extra; i++) {
        Array *a = &in->arrays[i];
        a->held = 0;
        in->count = i + 1;
        int own = i >= COMMON;
        in->data[i] = array_of(PyTuple_GET_ITEM(args, i + 1), a,
                               own ? names[i - COMMON] : COMMON_NAMES[i],
                               own && writable[i - COMMON]);
        if (in->data[i] == NULL) return -1;
        in->length[i] = a->view.len / 8;
    }
    return check_common(in, *k, ordered, prices);
}

/* Checks weight CSR lists over `t` tasks and `w` local weights. */
static int check_weights(const int64_t *start, Py_ssize_t start_length, const int64_t *weight,
                         Py_ssize_t weight_length, Py_ssize_t t, Py_ssize_t w) {
    if (check_lists(start, start_length, t, weight_length, "weight") < 0) return -1;
    for (Py_ssize_t i = 0; i < weight_length; i++)
        if (weight[i] < 0 || weight[i] >= w) {
            PyErr_SetString(PyExc_ValueError, "stage placement: a weight id is out of range");
            return -1;
        }
    return 0;
}

/* Puts task v on core `chosen`, whose demand grows by `own_ns` (its compute and incoming
 * transfers); each producer core's demand grows by its transfer to `chosen` (a transfer
 * is charged to both endpoints). */
static void assign(const Prices *prices, const int64_t *start, const int64_t *source,
                   int64_t *core, int64_t v, int64_t chosen, int64_t own_ns, int64_t *demand) {
    core[v] = chosen;
    demand[chosen] += own_ns;
    for (int64_t i = start[v]; i < start[v + 1]; i++) {
        int64_t q = core[source[i]];
        demand[q] += price(prices, q, chosen, i);
    }
}

/* greedy(k, cost, pred_start, pred_source, units, constant, fixed, per_unit,
 *        weight_start, weight, weight_size, capacity, core) -> placed
 *
 * StagePlacer.greedy: each task, in order, on the core where its weights fit and
 * its demand after placing it is least, then fewest new weight slots, then the
 * lowest position. Writes core[v]; returns False when a task fits nowhere. */
static PyObject *greedy(PyObject *self, PyObject *args) {
    enum { WEIGHT_START = COMMON, WEIGHT, WEIGHT_SIZE, CAPACITY, CORE, COUNT };
    static const char *const names[COUNT - COMMON] = {"weight_start", "weight", "weight_size",
                                                      "capacity", "core"};
    static const int writable[COUNT - COMMON] = {0, 0, 0, 0, 1};
    int64_t k;
    Inputs in;
    Prices prices;
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    unsigned char *resident = NULL;
    if (parse_inputs(args, COUNT - COMMON, names, writable, 1, &k, &in, &prices) < 0)
        goto cleanup;
    Py_ssize_t t = in.length[COST], w = in.length[WEIGHT_SIZE];
    if (in.length[CAPACITY] != k || in.length[CORE] != t) {
        PyErr_SetString(PyExc_ValueError, "greedy: capacity or core has the wrong length");
        goto cleanup;
    }
    const int64_t *wstart = in.data[WEIGHT_START], *weight = in.data[WEIGHT];
    if (check_weights(wstart, in.length[WEIGHT_START], weight, in.length[WEIGHT], t, w) < 0)
        goto cleanup;
    const int64_t *cost = in.data[COST], *start = in.data[PRED_START];
    const int64_t *source = in.data[PRED_SOURCE], *size = in.data[WEIGHT_SIZE];
    const int64_t *capacity = in.data[CAPACITY];
    int64_t *core = in.data[CORE];
    scratch = calloc((size_t)(4 * k), sizeof(int64_t));
    resident = calloc((size_t)k * (size_t)(w > 0 ? w : 1), 1);
    if (!scratch || !resident) {
        PyErr_NoMemory();
        goto cleanup;
    }
    int64_t *used = scratch, *demand = scratch + k, *fresh = scratch + 2 * k,
            *incident = scratch + 3 * k;
    int placed = 1;
    for (Py_ssize_t v = 0; v < t && placed; v++) {
        int64_t total = 0;
        for (int64_t j = wstart[v]; j < wstart[v + 1]; j++) total += size[weight[j]];
        int64_t best = -1;
        for (int64_t c = 0; c < k; c++) {
            int64_t slots = total;
            const unsigned char *held = resident + (size_t)c * (size_t)w;
            for (int64_t j = wstart[v]; j < wstart[v + 1]; j++)
                if (held[weight[j]]) slots -= size[weight[j]];
            fresh[c] = slots;
            if (used[c] + slots > capacity[c]) continue;
            int64_t in_ns = 0;
            for (int64_t i = start[v]; i < start[v + 1]; i++)
                in_ns += price(&prices, core[source[i]], c, i);
            incident[c] = in_ns;
            int64_t key = demand[c] + cost[v] + in_ns;
            int64_t best_key = best < 0 ? NEVER : demand[best] + cost[v] + incident[best];
            if (best < 0 || key < best_key || (key == best_key && slots < fresh[best])) best = c;
        }
        if (best < 0) {
            placed = 0;
            break;
        }
        unsigned char *held = resident + (size_t)best * (size_t)w;
        for (int64_t j = wstart[v]; j < wstart[v + 1]; j++) held[weight[j]] = 1;
        used[best] += fresh[best];
        assign(&prices, start, source, core, v, best, cost[v] + incident[best], demand);
    }
    result = PyBool_FromLong(placed);

cleanup:
    release_inputs(&in);
    free(scratch);
    free(resident);
    return result;
}

/* replicated(k, cost, pred_start, pred_source, units, constant, fixed, per_unit,
 *            weight_start, weight, reserved, core) -> placed
 *
 * StagePlacer.replicated after its copy plan: each task, in order, on a core
 * holding all its weights (reserved[w k + c] != 0; any core for a task without
 * weights) where it finishes earliest, then the least demand with its incident
 * transfers, then the lowest position. Returns False when no core holds a task's
 * weights. */
static PyObject *replicated(PyObject *self, PyObject *args) {
    enum { WEIGHT_START = COMMON, WEIGHT, RESERVED, CORE, COUNT };
    static const char *const names[COUNT - COMMON] = {"weight_start", "weight", "reserved",
                                                      "core"};
    static const int writable[COUNT - COMMON] = {0, 0, 0, 1};
    int64_t k;
    Inputs in;
    Prices prices;
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    if (parse_inputs(args, COUNT - COMMON, names, writable, 1, &k, &in, &prices) < 0)
        goto cleanup;
    Py_ssize_t t = in.length[COST];
    if (in.length[RESERVED] % k != 0 || in.length[CORE] != t) {
        PyErr_SetString(PyExc_ValueError, "replicated: reserved or core has the wrong length");
        goto cleanup;
    }
    Py_ssize_t w = in.length[RESERVED] / k;
    const int64_t *wstart = in.data[WEIGHT_START], *weight = in.data[WEIGHT];
    if (check_weights(wstart, in.length[WEIGHT_START], weight, in.length[WEIGHT], t, w) < 0)
        goto cleanup;
    const int64_t *cost = in.data[COST], *start = in.data[PRED_START];
    const int64_t *source = in.data[PRED_SOURCE], *reserved = in.data[RESERVED];
    int64_t *core = in.data[CORE];
    scratch = calloc((size_t)(3 * k + t + 1), sizeof(int64_t));
    if (!scratch) {
        PyErr_NoMemory();
        goto cleanup;
    }
    int64_t *free_at = scratch, *demand = scratch + k, *incident = scratch + 2 * k;
    int64_t *finish = scratch + 3 * k;
    int placed = 1;
    for (Py_ssize_t v = 0; v < t && placed; v++) {
        int64_t best = -1, best_end = NEVER;
        for (int64_t c = 0; c < k; c++) {
            int allowed = 1;
            for (int64_t j = wstart[v]; j < wstart[v + 1] && allowed; j++)
                allowed = reserved[weight[j] * k + c] != 0;
            if (!allowed) continue;
            int64_t ready = 0, in_ns = 0;
            for (int64_t i = start[v]; i < start[v + 1]; i++) {
                int64_t ns = price(&prices, core[source[i]], c, i);
                if (finish[source[i]] + ns > ready) ready = finish[source[i]] + ns;
                in_ns += ns;
            }
            incident[c] = in_ns;
            int64_t end = (ready > free_at[c] ? ready : free_at[c]) + cost[v];
            if (best < 0 || end < best_end ||
                (end == best_end && demand[c] + in_ns < demand[best] + incident[best])) {
                best = c;
                best_end = end;
            }
        }
        if (best < 0) {
            placed = 0;
            break;
        }
        finish[v] = free_at[best] = best_end;
        assign(&prices, start, source, core, v, best, cost[v] + incident[best], demand);
    }
    result = PyBool_FromLong(placed);

cleanup:
    release_inputs(&in);
    free(scratch);
    return result;
}

/* timing(k, cost, pred_start, pred_source, units, constant, fixed, per_unit,
 *        core, demand, compute, start_ns, sequence) -> (scheduled, span, window)
 *
 * StagePlacer.timing: the earliest-ready list schedule with the placement fixed.
 * A task is available once its same-stage predecessors are scheduled, available
 * tasks are taken by (data-ready time, position) and start when their core is
 * free. Writes each core's compute and demand (compute plus transfers charged to
 * both endpoints), each task's start and the order tasks were taken in. */
static PyObject *timing(PyObject *self, PyObject *args) {
    enum { CORE = COMMON, DEMAND, COMPUTE, START_NS, SEQUENCE, COUNT };
    static const char *const names[COUNT - COMMON] = {"core", "demand", "compute", "start_ns",
                                                      "sequence"};
    static const int writable[COUNT - COMMON] = {0, 1, 1, 1, 1};
    int64_t k;
    Inputs in;
    Prices prices;
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    Heap heap = {NULL, 0};
    if (parse_inputs(args, COUNT - COMMON, names, writable, 0, &k, &in, &prices) < 0)
        goto cleanup;
    Py_ssize_t t = in.length[COST], e = in.length[PRED_SOURCE];
    if (in.length[CORE] != t || in.length[DEMAND] != k || in.length[COMPUTE] != k ||
        in.length[START_NS] != t || in.length[SEQUENCE] != t) {
        PyErr_SetString(PyExc_ValueError, "timing: an output has the wrong length");
        goto cleanup;
    }
    const int64_t *cost = in.data[COST], *start = in.data[PRED_START];
    const int64_t *source = in.data[PRED_SOURCE], *core = in.data[CORE];
    int64_t *demand = in.data[DEMAND], *compute = in.data[COMPUTE];
    int64_t *start_ns = in.data[START_NS], *sequence = in.data[SEQUENCE];
    for (Py_ssize_t v = 0; v < t; v++)
        if (core[v] < 0 || core[v] >= k) {
            PyErr_SetString(PyExc_ValueError, "timing: a core is outside the region");
            goto cleanup;
        }
    /* succ_start[t + 1], succ[e], consumer[e], waiting[t], ready[t], free_at[k], opened[k] */
    size_t slots = (size_t)(3 * t + 1 + 2 * e + 2 * k);
    scratch = calloc(slots, sizeof(int64_t));
    heap.items = malloc((size_t)(t > 0 ? t : 1) * sizeof(Key));
    if (!scratch || !heap.items) {
        PyErr_NoMemory();
        goto cleanup;
    }
    int64_t *succ_start = scratch, *succ = scratch + t + 1, *consumer = succ + e;
    int64_t *waiting = consumer + e, *ready = waiting + t, *free_at = ready + t;
    int64_t *opened = free_at + k;
    for (int64_t c = 0; c < k; c++) {
        demand[c] = compute[c] = 0;
        opened[c] = -1;
    }
    for (Py_ssize_t v = 0; v < t; v++) compute[core[v]] += cost[v];
    for (int64_t c = 0; c < k; c++) demand[c] = compute[c];
    /* Successor lists in edge order, as the predecessor lists' transpose. */
    for (Py_ssize_t v = 0; v < t; v++)
        for (int64_t i = start[v]; i < start[v + 1]; i++) {
            int64_t a = core[source[i]], b = core[v], ns = price(&prices, a, b, i);
            demand[a] += ns;
            demand[b] += ns;
            succ_start[source[i] + 1]++;
            consumer[i] = v;
            waiting[v]++;
        }
    for (Py_ssize_t v = 0; v < t; v++) succ_start[v + 1] += succ_start[v];
    for (Py_ssize_t v = 0; v < t; v++)
        for (int64_t i = start[v]; i < start[v + 1]; i++) succ[succ_start[source[i]]++] = i;
    for (Py_ssize_t v = t; v > 0; v--) succ_start[v] = succ_start[v - 1];
    succ_start[0] = 0;
    int64_t scheduled = 0, span = 0;
    for (Py_ssize_t v = 0; v < t; v++)
        if (waiting[v] == 0) heap_push(&heap, (Key){0, v});
    while (heap.size > 0) {
        Key top = heap_pop(&heap);
        int64_t v = top.rest, p = core[v];
        int64_t begin = top.time > free_at[p] ? top.time : free_at[p];
        if (opened[p] < 0) opened[p] = begin;
        int64_t finish = free_at[p] = begin + cost[v];
        start_ns[v] = begin;
        sequence[scheduled++] = v;
        if (finish > span) span = finish;
        for (int64_t j = succ_start[v]; j < succ_start[v + 1]; j++) {
            int64_t i = succ[j], d = consumer[i];
            int64_t arrival = finish + price(&prices, p, core[d], i);
            if (arrival > ready[d]) ready[d] = arrival;
            if (--waiting[d] == 0) heap_push(&heap, (Key){ready[d], d});
        }
    }
    int64_t window = 0;
    for (int64_t c = 0; c < k; c++)
        if (opened[c] >= 0 && free_at[c] - opened[c] > window) window = free_at[c] - opened[c];
    result = Py_BuildValue("LLL", (long long)scheduled, (long long)span, (long long)window);

cleanup:
    release_inputs(&in);
    free(scratch);
    free(heap.items);
    return result;
}

static PyMethodDef methods[] = {
    {"greedy", greedy, METH_VARARGS,
     "greedy(k, cost, pred_start, pred_source, units, constant, fixed, per_unit, weight_start, "
     "weight, weight_size, capacity, core) -> placed: StagePlacer.greedy over region positions"},
    {"replicated", replicated, METH_VARARGS,
     "replicated(k, cost, pred_start, pred_source, units, constant, fixed, per_unit, "
     "weight_start, weight, reserved, core) -> placed: StagePlacer.replicated's loop"},
    {"timing", timing, METH_VARARGS,
     "timing(k, cost, pred_start, pred_source, units, constant, fixed, per_unit, core, demand, "
     "compute, start_ns, sequence) -> (scheduled, span, window): StagePlacer.timing"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_stage_placement",
                                    "The stage placer's loops, compiled (see layout.py).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__stage_placement(void) { return PyModule_Create(&module); }
