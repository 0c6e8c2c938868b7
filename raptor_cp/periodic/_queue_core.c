/* The queue engine's event loop (raptor_cp.periodic.queue_engine), compiled.
 *
 * One run of the discrete-event simulation that `queue_engine.py` documents:
 * tokens per edge in FIFO order, events queued in arrival order at their
 * resource (a source switch or the memory controller), heap keys ordered by
 * (time, generation, tie, phase) with phase 0 an arrival at the resource and
 * phase 1 a completion. The Python module prepares the graph as flat int64
 * arrays, calls `run` once per tie order and turns what it returns into a
 * `QueueRun`; every rule (readiness, resource hand-over, convergence) lives
 * here once. The loop was pure Python before: this is the hot path of
 * pipeline selection (about 1.6 us per processed event there), see
 * docs/benchmarks.md, "Queue engine in C".
 *
 * Storage O(V + E + B): the heap holds at most one key per event (each event
 * has at most one pending occurrence), tokens live in one pool of linked
 * nodes (B pending tokens), resource FIFOs are linked through the events.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_loop_support.h"

/* Pending tokens: per edge a singly linked FIFO of pool nodes; freed nodes are reused. */
typedef struct {
    int64_t *time;
    int64_t *next;
    int64_t capacity;
    int64_t free_list;
    int64_t *head; /* per edge, -1 when empty */
    int64_t *tail;
} Tokens;

static int tokens_append(Tokens *t, int64_t edge, int64_t time) {
    int64_t node = t->free_list;
    if (node < 0) {
        int64_t grown = t->capacity * 2;
        int64_t *times = realloc(t->time, (size_t)grown * sizeof(int64_t));
        if (times == NULL) return -1;
        t->time = times;
        int64_t *nexts = realloc(t->next, (size_t)grown * sizeof(int64_t));
        if (nexts == NULL) return -1;
        t->next = nexts;
        for (int64_t i = t->capacity; i < grown; i++) t->next[i] = i + 1 < grown ? i + 1 : -1;
        t->free_list = t->capacity;
        t->capacity = grown;
        node = t->free_list;
    }
    t->free_list = t->next[node];
    t->time[node] = time;
    t->next[node] = -1;
    if (t->head[edge] < 0)
        t->head[edge] = node;
    else
        t->next[t->tail[edge]] = node;
    t->tail[edge] = node;
    return 0;
}

static int64_t tokens_pop(Tokens *t, int64_t edge) {
    int64_t node = t->head[edge];
    t->head[edge] = t->next[node];
    t->next[node] = t->free_list;
    t->free_list = node;
    return t->time[node];
}

enum {
    OUT_START, OUT_EDGE, OUT_TARGET, OUT_DELAY, OUT_DISTANCE, IN_START, IN_EDGE, IN_DISTANCE,
    RESOURCE, SERVICE, CORE, FREE_START, FREE_RESOURCE, FIRST, GEN, WAITS, NUM_ARRAYS
};

static const char *ARRAY_NAMES[NUM_ARRAYS] = {
    "out_start", "out_edge", "out_target", "out_delay", "out_distance", "in_start", "in_edge",
    "in_distance", "resource", "service", "core", "free_start", "free_resource", "first", "gen",
    "waits"};

/* An event's weight in a generation's fingerprint: splitmix64 of its index, odd. */
static inline uint64_t event_mix(int64_t x) {
    uint64_t z = (uint64_t)x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (z ^ (z >> 31)) | 1;
}

/* The shortest cycle of `cycle > window` generations that generation `j` closes twice:
 * each of the last 2 * cycle generations has the length and the fingerprinted shape (every
 * event's completion relative to the generation's end) of the generation `cycle` before
 * it. 0 when there is none. `print[i]` sums event_mix(x) * t(x, i) over the events and
 * `mix_total` sums event_mix(x), so `print[i] - mix_total * ends[i]` fingerprints the
 * offsets t(x, i) - ends[i]. O(j^2). */
static int64_t repeating_cycle(const int64_t *ends, const uint64_t *print, uint64_t mix_total,
                               int64_t j, int64_t window) {
    for (int64_t cycle = window + 1; 3 * cycle <= j; cycle++) {
        int64_t i = j;
        for (; i > j - 2 * cycle; i--) {
            const int64_t a = i - cycle;
            const uint64_t shape = print[i] - mix_total * (uint64_t)ends[i];
            const uint64_t earlier = print[a] - mix_total * (uint64_t)ends[a];
            if (ends[i] - ends[i - 1] != ends[a] - ends[a - 1] || shape != earlier) break;
        }
        if (i == j - 2 * cycle) return cycle;
    }
    return 0;
}

static PyObject *run(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[NUM_ARRAYS];
    long long num_resources_ll, memory_ll, max_generations_ll, budget_ll, window_ll, percent_ll;
    int reverse_ties;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOLLpLLLL", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10],
                          &objs[11], &objs[12], &objs[13], &objs[14], &objs[15], &num_resources_ll,
                          &memory_ll, &reverse_ties, &max_generations_ll, &budget_ll, &window_ll,
                          &percent_ll))
        return NULL;
    Array arrays[NUM_ARRAYS] = {0};
    int64_t *p[NUM_ARRAYS];
    PyObject *result = NULL;
    Heap heap = {NULL, 0};
    Tokens tokens = {NULL, NULL, 0, -1, NULL, NULL};
    int64_t *missing = NULL, *arrival = NULL, *holder = NULL, *fifo_head = NULL,
            *fifo_tail = NULL, *fifo_next = NULL, *ends = NULL, *done = NULL;
    uint64_t *print = NULL;
    char *busy = NULL;
    for (int i = 0; i < NUM_ARRAYS; i++) {
        p[i] = array_of(objs[i], &arrays[i], ARRAY_NAMES[i], i >= FIRST);
        if (p[i] == NULL) goto cleanup;
    }
    const int64_t n = arrays[RESOURCE].view.len / 8;
    const int64_t num_edges = arrays[OUT_EDGE].view.len / 8;
    const int64_t num_resources = num_resources_ll, memory = memory_ll;
    const int64_t max_generations = max_generations_ll, budget = budget_ll;
    const int64_t window = window_ll, half = window_ll / 2, percent = percent_ll;
    const int64_t *out_start = p[OUT_START], *out_edge = p[OUT_EDGE], *out_target = p[OUT_TARGET];
    const int64_t *out_delay = p[OUT_DELAY], *out_distance = p[OUT_DISTANCE];
    const int64_t *in_start = p[IN_START], *in_edge = p[IN_EDGE], *in_distance = p[IN_DISTANCE];
    const int64_t *resource = p[RESOURCE], *service = p[SERVICE], *core = p[CORE];
    const int64_t *free_start = p[FREE_START], *free_resource = p[FREE_RESOURCE];
    int64_t *first = p[FIRST], *gen = p[GEN], *waits = p[WAITS];
    if (arrays[WAITS].view.len / 8 != max_generations * num_resources ||
        arrays[FIRST].view.len / 8 != n || arrays[GEN].view.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "output arrays have the wrong length");
        goto cleanup;
    }
    int64_t tie_bits = 1; /* ties are 0 .. n - 1 < 2 ** tie_bits */
    while (((int64_t)1 << tie_bits) <= n) tie_bits++;
    const int64_t gen_shift = tie_bits + 1; /* the phase bit, then the tie, then the generation */

    heap.items = malloc((size_t)(n > 0 ? n : 1) * sizeof(Key));
    int64_t initial = num_edges > 16 ? num_edges : 16;
    tokens.time = malloc((size_t)initial * sizeof(int64_t));
    tokens.next = malloc((size_t)initial * sizeof(int64_t));
    tokens.head = malloc((size_t)(num_edges > 0 ? num_edges : 1) * sizeof(int64_t));
    tokens.tail = malloc((size_t)(num_edges > 0 ? num_edges : 1) * sizeof(int64_t));
    missing = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    arrival = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    fifo_next = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    busy = calloc((size_t)(n > 0 ? n : 1), 1);
    holder = malloc((size_t)num_resources * sizeof(int64_t));
    fifo_head = malloc((size_t)num_resources * sizeof(int64_t));
    fifo_tail = malloc((size_t)num_resources * sizeof(int64_t));
    ends = malloc((size_t)(max_generations > 0 ? max_generations : 1) * sizeof(int64_t));
    done = calloc((size_t)(max_generations > 0 ? max_generations : 1), sizeof(int64_t));
    print = calloc((size_t)(max_generations > 0 ? max_generations : 1), sizeof(uint64_t));
    if (!heap.items || !tokens.time || !tokens.next || !tokens.head || !tokens.tail || !missing ||
        !arrival || !fifo_next || !busy || !holder || !fifo_head || !fifo_tail || !ends || !done ||
        !print) {
        PyErr_NoMemory();
        goto cleanup;
    }
    tokens.capacity = initial;
    for (int64_t i = 0; i < initial; i++) tokens.next[i] = i + 1 < initial ? i + 1 : -1;
    tokens.free_list = 0;
    for (int64_t e = 0; e < num_edges; e++) tokens.head[e] = tokens.tail[e] = -1;
    for (int64_t r = 0; r < num_resources; r++) holder[r] = fifo_head[r] = fifo_tail[r] = -1;
    for (int64_t x = 0; x < n; x++) {
        first[x] = gen[x] = 0;
        for (int64_t i = in_start[x]; i < in_start[x + 1]; i++) missing[x] += in_distance[i] == 0;
    }
    for (int64_t i = 0; i < max_generations * num_resources; i++) waits[i] = 0;
    uint64_t mix_total = 0;
    for (int64_t x = 0; x < n; x++) mix_total += event_mix(x);

#define TIE(x) (reverse_ties ? n - 1 - (x) : (x))
#define REST(x, g, phase) (((int64_t)(g) << gen_shift) | (TIE(x) << 1) | (phase))
#define EVENT_OF(rest) (reverse_ties ? n - 1 - (((rest) >> 1) & ((1LL << tie_bits) - 1)) \
                                     : (((rest) >> 1) & ((1LL << tie_bits) - 1)))
/* The first heap entry of an event ready at `t`: its arrival, or its completion without a
 * resource (such events hold nothing and take no time). */
#define SCHEDULE(x, t)                                                                    \
    do {                                                                                  \
        Key k_ = {(t), REST((x), gen[(x)], resource[(x)] < 0)};                           \
        busy[(x)] = 1;                                                                    \
        heap_push(&heap, k_);                                                             \
    } while (0)

    for (int64_t x = 0; x < n; x++)
        if (missing[x] == 0) SCHEDULE(x, 0);

    int64_t processed = 0, num_ends = 0, converged = -1, converged_window = 0, max_wait = 0,
            capped = -1;
    while (processed < budget && heap.size > 0) {
        Key key = heap_pop(&heap);
        processed++;
        const int64_t x = EVENT_OF(key.rest);
        const int64_t now = key.time;
        if (!(key.rest & 1)) {
            /* Arrival at the resource's FIFO; start at once when it is free. */
            const int64_t r = resource[x];
            arrival[x] = now;
            if (holder[r] < 0) {
                holder[r] = x;
                Key k = {now + service[x], key.rest | 1};
                heap_push(&heap, k);
            } else {
                fifo_next[x] = -1;
                if (fifo_head[r] < 0)
                    fifo_head[r] = x;
                else
                    fifo_next[fifo_tail[r]] = x;
                fifo_tail[r] = x;
            }
            continue;
        }
        /* x completes generation k: free what it holds, hand out its tokens. */
        const int64_t k = gen[x];
        if (k == 0) first[x] = now;
        print[k] += event_mix(x) * (uint64_t)now;
        for (int64_t i = free_start[x]; i < free_start[x + 1]; i++) {
            const int64_t rr = free_resource[i];
            const int64_t y = fifo_head[rr];
            if (y < 0) {
                holder[rr] = -1;
                continue;
            }
            fifo_head[rr] = fifo_next[y];
            if (fifo_head[rr] < 0) fifo_tail[rr] = -1;
            holder[rr] = y;
            const int64_t wait = now - arrival[y];
            waits[gen[y] * num_resources + core[y]] += wait;
            if (rr == memory && wait > max_wait) max_wait = wait;
            Key k2 = {now + service[y], REST(y, gen[y], 1)};
            heap_push(&heap, k2);
        }
        for (int64_t i = out_start[x]; i < out_start[x + 1]; i++) {
            const int64_t e = out_edge[i], y = out_target[i];
            const int64_t queued_before = tokens.head[e] >= 0;
            if (tokens_append(&tokens, e, now + out_delay[i]) < 0) {
                PyErr_NoMemory();
                goto cleanup;
            }
            if (queued_before || busy[y] || out_distance[i] > gen[y]) continue;
            if (--missing[y]) continue;
            int64_t ready = now;
            for (int64_t j = in_start[y]; j < in_start[y + 1]; j++) {
                if (gen[y] >= in_distance[j]) {
                    const int64_t token = tokens_pop(&tokens, in_edge[j]);
                    if (token > ready) ready = token;
                }
            }
            SCHEDULE(y, ready);
        }
        const int64_t k1 = k + 1;
        gen[x] = k1;
        if (++done[k] == n) {
            ends[num_ends++] = now; /* generation k's latest completion: times never decrease */
            const int64_t j = num_ends - 1;
            if (j >= window && capped < 0) { /* no event stopped: full competition */
                const int64_t early = ends[j - half] - ends[j - window];
                const int64_t late = ends[j] - ends[j - half];
                const int64_t diff = late > early ? late - early : early - late;
                if (100 * diff <= percent * (early > late ? early : late)) {
                    converged = j;
                    converged_window = half;
                    break;
                }
                const int64_t cycle = repeating_cycle(ends, print, mix_total, j, half);
                if (cycle) {
                    converged = j;
                    converged_window = cycle;
                    break;
                }
            }
        }
        if (k1 >= max_generations) {
            if (capped < 0) capped = x;
            continue; /* x stays busy: it never runs again */
        }
        int64_t count = 0;
        for (int64_t j = in_start[x]; j < in_start[x + 1]; j++)
            count += k1 >= in_distance[j] && tokens.head[in_edge[j]] < 0;
        missing[x] = count;
        if (count) {
            busy[x] = 0;
            continue;
        }
        int64_t ready = now;
        for (int64_t j = in_start[x]; j < in_start[x + 1]; j++) {
            if (k1 >= in_distance[j]) {
                const int64_t token = tokens_pop(&tokens, in_edge[j]);
                if (token > ready) ready = token;
            }
        }
        SCHEDULE(x, ready);
    }
#undef SCHEDULE
#undef EVENT_OF
#undef REST
#undef TIE
    {
        PyObject *end_list = PyList_New(num_ends);
        if (end_list == NULL) goto cleanup;
        for (int64_t j = 0; j < num_ends; j++)
            PyList_SET_ITEM(end_list, j, PyLong_FromLongLong(ends[j]));
        result = Py_BuildValue("(LLNLLLi)", (long long)converged, (long long)converged_window,
                               end_list, (long long)processed, (long long)max_wait,
                               (long long)capped, heap.size > 0);
    }

cleanup:
    for (int i = 0; i < NUM_ARRAYS; i++)
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
    free(heap.items);
    free(tokens.time);
    free(tokens.next);
    free(tokens.head);
    free(tokens.tail);
    free(missing);
    free(arrival);
    free(fifo_next);
    free(busy);
    free(holder);
    free(fifo_head);
    free(fifo_tail);
    free(ends);
    free(done);
    free(print);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(out_start, out_edge, out_target, out_delay, out_distance, in_start, in_edge, "
     "in_distance, resource, service, core, free_start, free_resource, first, gen, waits, "
     "num_resources, memory, reverse_ties, max_generations, budget, window, percent) -> "
     "(converged generation or -1, generations per window, generation ends, processed, max "
     "memory wait, capped event or -1, heap not empty)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_queue_core",
                                    "The queue engine's event loop (see queue_engine.py).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__queue_core(void) { return PyModule_Create(&module); }
