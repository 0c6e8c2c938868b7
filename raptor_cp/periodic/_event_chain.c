/* Each core's in-order event chain, compiled: the per-step loop of `build_events`.
 *
 * `raptor_cp.periodic.events` documents the semantics; this module walks the
 * steps of every core in program order and writes the events and the in-order
 * edges they need into preallocated arrays. Matching SENDs to RECVs and SYNC
 * tokens to WAITs stays in Python (numpy for the transfers). In Python, with one
 * method call per event and per edge, this loop was about 0.3 s of every
 * ResNet-50 pipeline candidate's evaluation (docs/benchmarks.md, "Ninth pass").
 *
 * A step is (kind, a, b, c, origin); its prices were looked up by the
 * caller (`events._step_prices`):
 *
 *   kind      a                     b                    c
 *   COMPUTE   its ns                -                    -
 *   SEND      request flit          payload              source read (core work)
 *   RECV      permission flit       -                    destination write (core work)
 *   LOAD      request flit          controller read      destination write (after)
 *   STORE     request with payload  controller write     source read (before)
 *   SIGNAL    token flit            -                    one clock period
 *   WAIT      -                     -                    -
 *
 * Every price is at most MAX (2^53 - 1, checked by the caller). Sums of them
 * (an edge's in-order work, a core's work) are kept in 128 bits, so a sum beyond
 * MAX is found where the edge is made, in program order, and returned as a
 * Python int instead of overflowing.
 *
 * Time O(N) for N steps; no storage besides the outputs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_loop_support.h"

#define MAX_NS ((int64_t)9007199254740991) /* 2^53 - 1: events.MAX_TIMING_NS */
#define NO_RESOURCE (-1)
#define NO_LABEL (-1)

/* Step kinds (events._STEP_CODE) and event kinds (events.EventKind). */
enum { COMPUTE, SEND, RECV, LOAD, STORE, SIGNAL, WAIT };
enum {
    ENTRY,
    SEND_REQUEST,
    PERMISSION,
    SEND_ENQUEUE,
    PAYLOAD,
    RECV_DONE,
    SIGNAL_EVENT,
    WAIT_EVENT,
    LOAD_REQUEST,
    LOAD_SERVICE,
    STORE_REQUEST,
    STORE_SERVICE,
};

typedef __int128 Wide;

/* Inputs in argument order, then outputs. */
enum {
    CORE_START, KIND, A, B, C, ORIGIN,
    N_CORE, N_KIND, N_STEP, N_RESOURCE, N_SERVICE, N_RELEASE,
    E_U, E_V, E_W, E_D, E_LINK,
    WORK, STEP_EVENT,
    ARRAYS
};
static const char *NAMES[ARRAYS] = {
    "core_start", "kind", "a", "b", "c", "origin",
    "node_core", "node_kind", "node_step", "node_resource", "node_service", "node_release",
    "edge_u", "edge_v", "edge_w", "edge_d", "edge_link",
    "work", "step_event",
};

typedef struct {
    int64_t *node_core, *node_kind, *node_step, *node_resource, *node_service, *node_release;
    int64_t *u, *v, *w, *d, *link;
    int64_t nodes, edges, node_capacity, edge_capacity;
    Wide out_of_range; /* the first sum beyond MAX_NS, or 0 */
} Chain;

static int64_t add_node(Chain *ch, int64_t kind, int64_t core, int64_t step, int64_t resource,
                        int64_t service) {
    int64_t x = ch->nodes++;
    ch->node_core[x] = core;
    ch->node_kind[x] = kind;
    ch->node_step[x] = step;
    ch->node_resource[x] = resource;
    ch->node_service[x] = service;
    ch->node_release[x] = x;
    return x;
}

/* Returns 0, or -1 once a delay beyond MAX_NS is met (recorded in `out_of_range`). */
static int add_edge(Chain *ch, int64_t u, int64_t v, Wide w, int64_t d, int64_t link) {
    if (w > MAX_NS) {
        ch->out_of_range = w;
        return -1;
    }
    int64_t e = ch->edges++;
    ch->u[e] = u;
    ch->v[e] = v;
    ch->w[e] = (int64_t)w;
    ch->d[e] = d;
    ch->link[e] = link;
    return 0;
}

static PyObject *wide_to_python(Wide value) {
    unsigned __int128 bits = (unsigned __int128)value;
    PyObject *high = PyLong_FromUnsignedLongLong((unsigned long long)(bits >> 64));
    PyObject *low = PyLong_FromUnsignedLongLong((unsigned long long)bits);
    PyObject *shift = PyLong_FromLong(64);
    PyObject *shifted = (high && shift) ? PyNumber_Lshift(high, shift) : NULL;
    PyObject *result = (shifted && low) ? PyNumber_Or(shifted, low) : NULL;
    Py_XDECREF(high);
    Py_XDECREF(low);
    Py_XDECREF(shift);
    Py_XDECREF(shifted);
    return result;
}

/* One core's steps [first, end): events, in-order edges, its work. */
static int walk_core(Chain *ch, int64_t core, int64_t first, int64_t end, int64_t num_cores,
                     const int64_t *kind, const int64_t *a,
                     const int64_t *b, const int64_t *c, const int64_t *origin,
                     int64_t *step_event, Wide *work) {
    int64_t memory_link = core * (num_cores + 1) + num_cores;
    int64_t entry = add_node(ch, ENTRY, core, -1, NO_RESOURCE, 0);
    int64_t last = entry;
    Wide pending = 0;
    for (int64_t s = first; s < end; s++) {
        int64_t i = origin[s], x;
        step_event[s] = -1;
        switch (kind[s]) {
        case COMPUTE:
            pending += a[s];
            *work += a[s];
            continue;
        case SEND:
            x = add_node(ch, SEND_REQUEST, core, i, core, a[s]);
            if (add_edge(ch, last, x, pending, 0, NO_LABEL) < 0) return -1;
            add_node(ch, SEND_ENQUEUE, core, i, NO_RESOURCE, 0);
            add_node(ch, PAYLOAD, core, i, core, b[s]);
            add_edge(ch, x + 1, x + 2, 0, 0, NO_LABEL);
            *work += c[s];
            last = x + 1;
            pending = 0;
            break;
        case RECV:
            x = add_node(ch, PERMISSION, core, i, core, a[s]);
            if (add_edge(ch, last, x, pending, 0, NO_LABEL) < 0) return -1;
            add_node(ch, RECV_DONE, core, i, NO_RESOURCE, 0);
            add_edge(ch, x, x + 1, 0, 0, NO_LABEL);
            *work += c[s];
            last = x + 1;
            pending = 0;
            break;
        case LOAD:
        case STORE: {
            int load = kind[s] == LOAD;
            Wide before = load ? 0 : c[s], after = load ? c[s] : 0;
            x = add_node(ch, load ? LOAD_REQUEST : STORE_REQUEST, core, i, core, a[s]);
            if (add_edge(ch, last, x, pending + before, 0, NO_LABEL) < 0) return -1;
            add_node(ch, load ? LOAD_SERVICE : STORE_SERVICE, core, i, num_cores, b[s]);
            add_edge(ch, x, x + 1, 0, 0, memory_link);
            ch->node_release[x] = x + 1;
            *work += before + after;
            last = x + 1;
            pending = after;
            break;
        }
        case SIGNAL:
            x = add_node(ch, SIGNAL_EVENT, core, i, core, a[s]);
            if (add_edge(ch, last, x, pending, 0, NO_LABEL) < 0) return -1;
            pending += c[s];
            *work += c[s];
            break;
        default: /* WAIT */
            x = add_node(ch, WAIT_EVENT, core, i, NO_RESOURCE, 0);
            if (add_edge(ch, last, x, pending, 0, NO_LABEL) < 0) return -1;
            last = x;
            pending = 0;
            break;
        }
        step_event[s] = x;
    }
    return add_edge(ch, last, entry, pending, 1, NO_LABEL);
}

/* chain(num_cores, core_start, kind, a, b, c, origin, node_core, node_kind,
 *       node_step, node_resource, node_service, node_release, edge_u, edge_v, edge_w,
 *       edge_d, edge_link, work, step_event) -> None | int
 *
 * Fills the outputs (sized by the caller: one entry per event, in-order edge,
 * core and step) and returns None, or returns the first delay or core work
 * beyond 2^53 - 1 ns (the outputs are then partial). */
static PyObject *chain(PyObject *self, PyObject *args) {
    Py_ssize_t num_cores;
    PyObject *objects[ARRAYS];
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOOOOOOOOOOO", &num_cores, &objects[0], &objects[1],
                          &objects[2], &objects[3], &objects[4], &objects[5], &objects[6],
                          &objects[7], &objects[8], &objects[9], &objects[10], &objects[11],
                          &objects[12], &objects[13], &objects[14], &objects[15],
                          &objects[16], &objects[17], &objects[18]))
        return NULL;
    Array arrays[ARRAYS] = {0};
    int64_t *data[ARRAYS];
    Py_ssize_t length[ARRAYS];
    PyObject *result = NULL;
    Wide *work = NULL;
    for (int i = 0; i < ARRAYS; i++) {
        data[i] = array_of(objects[i], &arrays[i], NAMES[i], i >= N_CORE);
        if (data[i] == NULL) goto done;
        length[i] = arrays[i].view.len / 8;
    }
    Py_ssize_t steps = length[KIND];
    if (length[CORE_START] != num_cores + 1 || length[WORK] != num_cores ||
        length[STEP_EVENT] != steps) {
        PyErr_SetString(PyExc_ValueError, "core_start, work or step_event has the wrong length");
        goto done;
    }
    for (int i = A; i <= ORIGIN; i++)
        if (length[i] != steps) {
            PyErr_Format(PyExc_ValueError, "%s must hold one entry per step", NAMES[i]);
            goto done;
        }
    for (int i = N_KIND; i <= N_RELEASE; i++)
        if (length[i] != length[N_CORE]) {
            PyErr_Format(PyExc_ValueError, "%s must hold one entry per event", NAMES[i]);
            goto done;
        }
    for (int i = E_V; i <= E_LINK; i++)
        if (length[i] != length[E_U]) {
            PyErr_Format(PyExc_ValueError, "%s must hold one entry per edge", NAMES[i]);
            goto done;
        }
    const int64_t *start = data[CORE_START];
    if (start[0] != 0 || start[num_cores] != steps) {
        PyErr_SetString(PyExc_ValueError, "core_start must run from 0 to the number of steps");
        goto done;
    }
    /* The outputs' sizes follow from the kinds: check them before writing. */
    static const int64_t EVENTS[] = {0, 3, 2, 2, 2, 1, 1}, EDGES[] = {0, 2, 2, 2, 2, 1, 1};
    int64_t need_nodes = 0, need_edges = 0;
    for (Py_ssize_t p = 0; p < num_cores; p++) {
        if (start[p + 1] < start[p]) {
            PyErr_SetString(PyExc_ValueError, "core_start must not decrease");
            goto done;
        }
        if (start[p + 1] > start[p]) need_nodes++, need_edges++;
    }
    for (Py_ssize_t s = 0; s < steps; s++) {
        int64_t k = data[KIND][s];
        if (k < COMPUTE || k > WAIT) {
            PyErr_Format(PyExc_ValueError, "step %zd has kind %lld", s, (long long)k);
            goto done;
        }
        need_nodes += EVENTS[k];
        need_edges += EDGES[k];
    }
    if (need_nodes != length[N_CORE] || need_edges != length[E_U]) {
        PyErr_SetString(PyExc_ValueError, "the event or edge outputs have the wrong length");
        goto done;
    }
    work = PyMem_Calloc(num_cores ? num_cores : 1, sizeof(Wide));
    if (work == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Chain ch = {data[N_CORE], data[N_KIND], data[N_STEP], data[N_RESOURCE], data[N_SERVICE],
                data[N_RELEASE], data[E_U], data[E_V], data[E_W], data[E_D], data[E_LINK],
                0, 0, need_nodes, need_edges, 0};
    for (Py_ssize_t p = 0; p < num_cores; p++) {
        if (start[p + 1] == start[p]) continue;
        if (walk_core(&ch, p, start[p], start[p + 1], num_cores, data[KIND], data[A],
                      data[B], data[C], data[ORIGIN], data[STEP_EVENT], &work[p]) < 0) {
            result = wide_to_python(ch.out_of_range);
            goto done;
        }
    }
    for (Py_ssize_t p = 0; p < num_cores; p++) {
        if (work[p] > MAX_NS) {
            result = wide_to_python(work[p]);
            goto done;
        }
        data[WORK][p] = (int64_t)work[p];
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(work);
    for (int i = 0; i < ARRAYS; i++)
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
    return result;
}

static PyMethodDef METHODS[] = {
    {"chain", chain, METH_VARARGS, "Each core's events and in-order edges (see the module)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "_event_chain",
    "Each core's in-order event chain of build_events, compiled.", -1, METHODS,
};

PyMODINIT_FUNC PyInit__event_chain(void) { return PyModule_Create(&MODULE); }
