/* The rendezvous simulation's event loop (raptor_cp.periodic.rendezvous_order), compiled.
 *
 * One run of the list scheduler of rendezvous that `rendezvous_order.py`
 * documents: a core that becomes free takes the first transfer of its pending
 * list (ordered by the consumer's estimated start, then edge) whose other side
 * is free and may receive, failing that its next unit if the unit's task has
 * all its inputs, failing both it idles. The Python module prepares flat
 * int64 arrays (units per core, transfers, the outgoing transfers of every
 * task), calls `run` once and reads each core's entries from the arrays it
 * fills. In Python this loop was the largest part of realizing a pipeline
 * candidate (docs/benchmarks.md, "Sixth pass").
 *
 * Storage O(U + X + P): every core has at most one event in the heap, and its
 * pending list holds at most the transfers that touch it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_loop_support.h"

enum {
    UNIT_START, UNIT_TASK, UNIT_NS, UNIT_LAST, MISSING, OUT_START, OUT_TRANSFER, SRC_CORE,
    DST_CORE, DST_TASK, NBYTES, SEND_NS, RECV_NS, KEY, EDGE, ENTRY_START, ENTRY_KIND, ENTRY_TIME,
    ENTRY_REF, ENTRY_COUNT, NUM_ARRAYS
};

static const char *ARRAY_NAMES[NUM_ARRAYS] = {
    "unit_start", "unit_task", "unit_ns", "unit_last", "missing", "out_start", "out_transfer",
    "src_core", "dst_core", "dst_task", "nbytes", "send_ns", "recv_ns", "key", "edge",
    "entry_start",
    "entry_kind", "entry_time", "entry_ref", "entry_count"};

enum { TASK = 0, SEND = 1, RECV = 2 }; /* Action in rendezvous_order.py */

typedef struct {
    /* inputs */
    const int64_t *unit_start, *unit_task, *unit_ns, *unit_last, *out_start, *out_transfer;
    const int64_t *src_core, *dst_core, *dst_task, *nbytes, *send_ns, *recv_ns, *key, *edge;
    const int64_t *entry_start;
    double budget;
    /* state */
    int64_t *missing, *entry_kind, *entry_time, *entry_ref, *entry_count;
    int64_t *next_unit, *held, *received, *pending, *pending_size;
    int64_t *finished; /* per core: the task whose last unit its pending event ends, or -1 */
    char *busy;
    Heap events; /* a core's one pending event: rest = sequence * cores + core */
    int64_t cores, sequence, transfers_left;
} Sim;

/* Transfer a before b in a pending list: by the consumer's estimated start, then edge. */
static inline int transfer_less(const Sim *s, int64_t a, int64_t b) {
    return s->key[a] < s->key[b] || (s->key[a] == s->key[b] && s->edge[a] < s->edge[b]);
}

static Py_ssize_t pending_position(const Sim *s, int64_t core, int64_t transfer) {
    const int64_t *list = s->pending + s->entry_start[core];
    Py_ssize_t low = 0, high = s->pending_size[core];
    while (low < high) {
        Py_ssize_t mid = (low + high) / 2;
        if (transfer_less(s, list[mid], transfer))
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

static void pending_insert(Sim *s, int64_t core, int64_t transfer) {
    int64_t *list = s->pending + s->entry_start[core];
    Py_ssize_t at = pending_position(s, core, transfer);
    memmove(list + at + 1, list + at, (size_t)(s->pending_size[core] - at) * sizeof(int64_t));
    list[at] = transfer;
    s->pending_size[core]++;
}

static void pending_remove_at(Sim *s, int64_t core, Py_ssize_t at) {
    int64_t *list = s->pending + s->entry_start[core];
    memmove(list + at, list + at + 1, (size_t)(s->pending_size[core] - at - 1) * sizeof(int64_t));
    s->pending_size[core]--;
}

/* Core `core` is busy until `time` (a core has at most one pending event); events at one
 * time are taken in the order they were pushed. */
static void push(Sim *s, int64_t time, int64_t core, int64_t finished) {
    Key k = {time, ++s->sequence * s->cores + core};
    s->finished[core] = finished;
    heap_push(&s->events, k);
}

static void record(Sim *s, int64_t core, int64_t kind, int64_t time, int64_t ref) {
    int64_t at = s->entry_start[core] + s->entry_count[core]++;
    s->entry_kind[at] = kind;
    s->entry_time[at] = time;
    s->entry_ref[at] = ref;
}

/* Whether core b may take transfer t's payload now (the memory budget). */
static int may_receive(const Sim *s, int64_t t, int64_t b) {
    if ((double)(s->held[b] + s->nbytes[t]) <= s->budget) return 1;
    int64_t i = s->unit_start[b] + s->next_unit[b];
    return i < s->unit_start[b + 1] && s->unit_task[i] == s->dst_task[t];
}

/* Start what free core c can do at `now`. */
static void act(Sim *s, int64_t c, int64_t now) {
    const int64_t *list = s->pending + s->entry_start[c];
    for (Py_ssize_t position = 0; position < s->pending_size[c]; position++) {
        int64_t t = list[position];
        int64_t a = s->src_core[t], b = s->dst_core[t];
        int64_t partner = a == c ? b : a;
        if (s->busy[partner] || !may_receive(s, t, b)) continue;
        record(s, a, SEND, now, t);
        record(s, b, RECV, now, t);
        s->busy[a] = s->busy[b] = 1;
        s->missing[s->dst_task[t]]--;
        s->received[s->dst_task[t]] += s->nbytes[t];
        s->held[b] += s->nbytes[t];
        s->transfers_left--;
        push(s, now + s->send_ns[t], a, -1);
        push(s, now + s->recv_ns[t], b, -1);
        pending_remove_at(s, c, position);
        pending_remove_at(s, partner, pending_position(s, partner, t));
        return;
    }
    int64_t i = s->unit_start[c] + s->next_unit[c];
    if (i == s->unit_start[c + 1] || s->missing[s->unit_task[i]]) return;
    s->next_unit[c]++;
    s->busy[c] = 1;
    record(s, c, TASK, now, i);
    push(s, now + s->unit_ns[i], c, s->unit_last[i] ? s->unit_task[i] : -1);
}

static PyObject *run(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[NUM_ARRAYS];
    double budget;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOOd", &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9],
                          &objs[10], &objs[11], &objs[12], &objs[13], &objs[14], &objs[15],
                          &objs[16], &objs[17], &objs[18], &objs[19], &budget))
        return NULL;
    Array arrays[NUM_ARRAYS] = {0};
    int64_t *p[NUM_ARRAYS];
    PyObject *result = NULL;
    Sim s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < NUM_ARRAYS; i++) {
        /* the task counts and the entry arrays are written */
        int writable = i == MISSING || i >= ENTRY_KIND;
        p[i] = array_of(objs[i], &arrays[i], ARRAY_NAMES[i], writable);
        if (p[i] == NULL) goto cleanup;
    }
    const int64_t cores = arrays[UNIT_START].view.len / 8 - 1;
    const int64_t tasks = arrays[MISSING].view.len / 8;
    const int64_t transfers = arrays[SRC_CORE].view.len / 8;
    if (cores < 0 || arrays[ENTRY_START].view.len / 8 != cores + 1 ||
        arrays[ENTRY_COUNT].view.len / 8 != cores || arrays[OUT_START].view.len / 8 != tasks + 1) {
        PyErr_SetString(PyExc_ValueError, "array lengths disagree");
        goto cleanup;
    }
    s.unit_start = p[UNIT_START];
    s.unit_task = p[UNIT_TASK];
    s.unit_ns = p[UNIT_NS];
    s.unit_last = p[UNIT_LAST];
    s.out_start = p[OUT_START];
    s.out_transfer = p[OUT_TRANSFER];
    s.src_core = p[SRC_CORE];
    s.dst_core = p[DST_CORE];
    s.dst_task = p[DST_TASK];
    s.nbytes = p[NBYTES];
    s.send_ns = p[SEND_NS];
    s.recv_ns = p[RECV_NS];
    s.key = p[KEY];
    s.edge = p[EDGE];
    s.entry_start = p[ENTRY_START];
    s.missing = p[MISSING];
    s.entry_kind = p[ENTRY_KIND];
    s.entry_time = p[ENTRY_TIME];
    s.entry_ref = p[ENTRY_REF];
    s.entry_count = p[ENTRY_COUNT];
    s.budget = budget;
    s.transfers_left = transfers;
    s.cores = cores;
    size_t slots = (size_t)(cores > 0 ? cores : 1);
    s.next_unit = calloc(slots, sizeof(int64_t));
    s.held = calloc(slots, sizeof(int64_t));
    s.pending_size = calloc(slots, sizeof(int64_t));
    s.busy = calloc(slots, 1);
    s.finished = calloc(slots, sizeof(int64_t));
    s.received = calloc((size_t)(tasks > 0 ? tasks : 1), sizeof(int64_t));
    /* a core's pending list shares the layout of its entries: never longer than them */
    s.pending = malloc((size_t)(s.entry_start[cores] > 0 ? s.entry_start[cores] : 1) *
                       sizeof(int64_t));
    s.events.items = malloc(slots * sizeof(Key));
    if (!s.next_unit || !s.held || !s.pending_size || !s.busy || !s.finished || !s.received ||
        !s.pending || !s.events.items) {
        PyErr_NoMemory();
        goto cleanup;
    }
    for (int64_t c = 0; c < cores; c++) {
        s.entry_count[c] = 0;
        if (s.unit_start[c + 1] > s.unit_start[c]) push(&s, 0, c, -1);
    }
    while (s.events.size > 0) {
        Key e = heap_pop(&s.events);
        int64_t c = e.rest % cores, finished = s.finished[c];
        s.busy[c] = 0;
        if (finished >= 0) {
            s.held[c] -= s.received[finished];
            for (int64_t i = s.out_start[finished]; i < s.out_start[finished + 1]; i++) {
                int64_t t = s.out_transfer[i];
                pending_insert(&s, c, t);
                pending_insert(&s, s.dst_core[t], t);
            }
        }
        act(&s, c, e.time);
    }
    {
        int64_t left = -1;
        for (int64_t c = 0; c < cores && left < 0; c++)
            if (s.unit_start[c] + s.next_unit[c] < s.unit_start[c + 1]) left = c;
        result = Py_BuildValue("(LL)", (long long)left, (long long)s.transfers_left);
    }

cleanup:
    for (int i = 0; i < NUM_ARRAYS; i++)
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
    free(s.next_unit);
    free(s.held);
    free(s.pending_size);
    free(s.busy);
    free(s.finished);
    free(s.received);
    free(s.pending);
    free(s.events.items);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(unit_start, unit_task, unit_ns, unit_last, missing, out_start, out_transfer, "
     "src_core, dst_core, dst_task, nbytes, send_ns, recv_ns, key, edge, entry_start, "
     "entry_kind, "
     "entry_time, entry_ref, entry_count, budget) -> (first core with units left or -1, "
     "transfers left)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rendezvous_core",
                                    "The rendezvous simulation's event loop "
                                    "(see rendezvous_order.py).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__rendezvous_core(void) { return PyModule_Create(&module); }
