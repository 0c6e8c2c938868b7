"""`EventGraph`: a periodic event graph with the queues its events pass through.

A `PeriodicGraph` says ``t(v, k) >= t(u, k - d) + w``; an `EventGraph` adds, per
event (node), where it queues: a *resource* (the source switch of a core, or
the chip's memory controller) that serves its requests one at a time in arrival
order, the *service* time the event holds it, and the *release* event whose
completion frees it (the event itself, or -- for a global request, whose source
switch stays occupied until the transport completes -- its memory service).
An event's time is its completion: ``t(x, k) = start + service[x]`` where the
start is the arrival ``max_e(t(u, k - d) + w)`` delayed by the queue. Without
the queues this is exactly the max-plus system of the periodic diagnostic;
`EventGraph.recurrence_graph` folds each event's service into its in-edges so
the maximum cycle ratio sees every service on the paths through it (but not
the serialization, which the aggregate memory-service bound and the queue
engine account for).

Storage is indexed arrays, ``O(V + E)``; generations are never unrolled.

`build_events` realizes one ordered list of `Step` per physical core --
compute runs, direct SEND/RECV, global loads and stores, SYNC signals and WAIT
counts -- into an `EventGraph`, with the phase prices of a `StepTiming` (the
target's `step_timing`). Both the instruction-artifact frontend
(`raptor_cp.targets.pim.artifact`) and the realization of pipeline schedules build
through it. The semantics are the target adapter's (scheduling.md, "Periodic
dependency diagnostics" and "Post-codegen instruction diagnostic"):

* each core runs its steps in order (ROB capacity one); consecutive compute is
  one weighted chunk on the in-order edge, not an event;
* SEND: a one-flit request through the sender's switch; the receiver, once its
  RECV is posted and the request delivered, sends a one-flit permission
  through *its* switch; the source read starts at permission delivery and the
  payload is enqueued on the sender's switch when it ends -- SEND completes
  there, independently of the payload's dispatch; RECV completes after the
  payload is delivered and written to local memory. SENDs from ``s`` to ``r``
  match RECVs on ``r`` from ``s`` in program order;
* LOAD: a one-flit request through the source switch, the memory controller's
  read service, then the local write; STORE: the local read, the payload
  through the source switch, the controller's write service. The switch stays
  occupied until the controller is done; reads, writes and zero-byte requests
  share the controller's one FIFO;
* SIGNAL (SYNC): a one-flit message through the source switch; the core goes on
  after one clock period (delivery may precede that). WAIT ``n`` on a register
  blocks until ``n`` tokens have been delivered and consumes them (HEAPLab's
  counting semantics); the tokens of a generation go to its WAITs in program
  order, sorted by (source core, program position) -- exact when one core
  signals the register or one WAIT takes all of them, otherwise an
  approximation recorded in `EventGraph.notes`;
* each core's completion releases its entry of the next generation (one
  distance-1 edge per active core).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from enum import IntEnum
from functools import cached_property

import numpy as np

from raptor_cp.errors import InvalidInstanceError, TimingUnavailableError
from raptor_cp.periodic import _event_chain
from raptor_cp.periodic.graph import PeriodicGraph
from raptor_cp.periodic.steps import Compute, Load, Recv, Send, Signal, Step, Store, Wait

# The step types are used here and re-exported: a builder needs only this module.
from raptor_cp.targets.base import GLOBAL_MEMORY, StepTiming

NO_RESOURCE = -1
"""`EventGraph.resource` of an event that does not queue."""
MAX_TIMING_NS = 2**53 - 1
"""The supported numeric range of the periodic model: no delay or service, and no sum
of all of them (a bound on every path, cycle and interval), may exceed it, so that
every total is exact in int64 arithmetic and as a JSON (double) number. Beyond it
the model is ``unavailable`` (`raptor_cp.errors.TimingUnavailableError`)."""


class EventKind(IntEnum):
    """What an event of an `EventGraph` built by `build_events` stands for."""

    ENTRY = 0
    """A core starts a generation."""
    SEND_REQUEST = 1
    """Delivery of a SEND's one-flit request (sender's switch)."""
    PERMISSION = 2
    """Delivery of a RECV's one-flit permission to the sender (receiver's switch)."""
    SEND_ENQUEUE = 3
    """Source read done and payload enqueued: the SEND completes."""
    PAYLOAD = 4
    """Delivery of a SEND's payload (sender's switch)."""
    RECV_DONE = 5
    """Payload written to the receiver's local memory: the RECV completes."""
    SIGNAL = 6
    """Delivery of a SYNC token (sender's switch)."""
    WAIT = 7
    """A WAIT's tokens have all arrived."""
    LOAD_REQUEST = 8
    """A load request reaches the memory controller (source switch, held to service end)."""
    LOAD_SERVICE = 9
    """The memory controller has served a load."""
    STORE_REQUEST = 10
    """A store payload reaches the memory controller (source switch, held to service end)."""
    STORE_SERVICE = 11
    """The memory controller has served a store."""
    OTHER = 12
    """An event of a hand-built graph."""


def _array(values: object, size: int, name: str, owner: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.int64).reshape(-1)
    if array.shape != (size,):
        raise InvalidInstanceError(f"{owner}: {name} must hold {size} integers")
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class EventGraph:
    """A `PeriodicGraph` whose events may queue at resources; see the module docstring.

    Parameters
    ----------
    graph:
        The dependencies; ``graph.w`` excludes the service of the target event.
        Delays must be non-negative (the queue engine runs forward in time).
        ``graph.core`` labels each event's core.
    resource:
        Per event: `NO_RESOURCE`, a core ``c`` (its source switch), or
        ``num_cores`` (the memory controller, `memory_resource`).
    service:
        Per event, ns it holds its resource (must be 0 without one).
    release:
        Per event, the event whose completion frees the resource it holds: itself,
        or the target of a distance-0 edge leaving it (a global request's service).
    num_cores:
        Cores of the target (switch resources ``0..num_cores-1``).
    kind, step:
        Per event, its `EventKind` and the index of the `Step` it realizes in its
        core's list (-1: none); for reports.
    core_work:
        Per core, ns of its own in-order work per generation (compute runs, local
        reads and writes, SYNC execution): the per-core compute bound.
    notes:
        Approximations made while building, for the report's missing effects.
    """

    graph: PeriodicGraph
    resource: np.ndarray
    service: np.ndarray
    release: np.ndarray
    num_cores: int
    kind: np.ndarray
    step: np.ndarray
    core_work: np.ndarray
    notes: tuple[str, ...] = ()
    _in_start: np.ndarray = field(init=False, repr=False)
    _in_edges: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        g = self.graph
        name, n = g.name, g.num_nodes
        for attr in ("resource", "service", "release", "kind", "step"):
            object.__setattr__(self, attr, _array(getattr(self, attr), n, attr, name))
        object.__setattr__(
            self, "core_work", _array(self.core_work, self.num_cores, "core_work", name)
        )
        problems = (
            (g.w < 0, lambda e: f"edge {e} has delay {int(g.w[e])}, not >= 0"),
            (self.service < 0, lambda x: f"event {x} has service {int(self.service[x])} < 0"),
            (
                (self.resource < NO_RESOURCE) | (self.resource > self.num_cores),
                lambda x: (
                    f"event {x} has resource {int(self.resource[x])} "
                    f"(valid: -1, 0..{self.num_cores})"
                ),
            ),
            (
                (self.resource != NO_RESOURCE) & ((g.core < 0) | (g.core >= self.num_cores)),
                lambda x: (
                    f"event {x} queues but has core {int(g.core[x])} "
                    f"(valid: 0..{self.num_cores - 1})"
                ),
            ),
            (
                (self.resource == NO_RESOURCE) & (self.service != 0),
                lambda x: f"event {x} has service {int(self.service[x])} but no resource",
            ),
        )
        for mask, text in problems:
            bad = np.flatnonzero(mask)
            if bad.size:
                raise InvalidInstanceError(f"{name}: {text(int(bad[0]))}")
        order = np.argsort(g.v, kind="stable")
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(g.v, minlength=n), out=start[1:])
        lonely = np.flatnonzero(start[1:] == start[:-1])
        if lonely.size:
            raise InvalidInstanceError(
                f"{name}: event {int(lonely[0])} has no dependency: it would repeat without bound"
            )
        object.__setattr__(self, "_in_start", start)
        object.__setattr__(self, "_in_edges", order.astype(np.int64))
        self._check_release()

    def _check_release(self) -> None:
        g = self.graph
        held = np.flatnonzero(self.release != np.arange(g.num_nodes))
        released = self.release[held]
        if np.unique(released).size != released.size:
            raise InvalidInstanceError(f"{g.name}: an event releases two resources")
        for x, y in zip(held.tolist(), released.tolist(), strict=True):
            out = g.out_edges(x)
            ok = self.resource[x] != NO_RESOURCE and bool(np.any((g.v[out] == y) & (g.d[out] == 0)))
            if not ok:
                raise InvalidInstanceError(
                    f"{g.name}: event {x} is released by event {y}, which is not a "
                    "distance-0 successor of a queued event"
                )

    @property
    def name(self) -> str:
        return self.graph.name

    @property
    def num_events(self) -> int:
        return self.graph.num_nodes

    @property
    def num_edges(self) -> int:
        return self.graph.num_edges

    @property
    def memory_resource(self) -> int:
        """The resource id of the memory controller."""
        return self.num_cores

    def in_edges(self, node: int) -> np.ndarray:
        """Edge ids entering ``node``, ascending."""
        return self._in_edges[self._in_start[node] : self._in_start[node + 1]]

    @property
    def in_edge_index(self) -> tuple[np.ndarray, np.ndarray]:
        """``(start, edges)``: edges entering node ``x`` are ``edges[start[x]:start[x+1]]``."""
        return self._in_start, self._in_edges

    @cached_property
    def recurrence_graph(self) -> PeriodicGraph:
        """The dependencies with each event's service added to its in-edges' delays."""
        g = self.graph
        return PeriodicGraph(
            g.num_nodes, g.u, g.v, g.w + self.service[g.v], g.d, g.core, g.link, name=g.name
        )

    @property
    def memory_requests(self) -> np.ndarray:
        """Ids of the events served by the memory controller."""
        return np.flatnonzero(self.resource == self.memory_resource)

    @property
    def memory_service_ns(self) -> int:
        """Total controller service per generation: the aggregate memory-service bound."""
        return int(self.service[self.memory_requests].sum())

    def cycle_breakdown(self, cycle: Sequence[int]) -> dict[str, int]:
        """Where a critical cycle's delay goes, over the whole cycle (edge ids of ``graph``).

        Each edge of the recurrence graph weighs its dependency delay plus the
        service of its target event (`recurrence_graph`), so the four
        parts add up to the cycle's delay:

        * ``same_core_ns``: delays between two events of one core: its own in-order
          work between them (compute runs, local reads and writes);
        * ``cross_core_ns``: delays from one core's event to another core's: the
          work a core does once its partner's flit or payload is in (a transfer's
          source read after the permission, its destination write after the
          payload) and token delivery;
        * ``switch_service_ns``: time the cycle's events hold a source switch
          (request and permission flits, payloads);
        * ``memory_service_ns``: time they hold the memory controller.

        A cycle that is mostly ``same_core_ns`` across many cores is a chain of
        dependent work, not a congested resource: the period is bounded by how
        the cores' programs wait on each other, not by any one core's work.
        ``O(L)`` for a cycle of ``L`` edges.
        """
        g = self.graph
        edges = np.asarray(cycle, dtype=np.int64)
        target = g.v[edges]
        delay = g.w[edges]
        same = g.core[g.u[edges]] == g.core[target]
        resource = self.resource[target]
        service = self.service[target]
        memory = resource == self.memory_resource
        switch = (resource != NO_RESOURCE) & ~memory
        return {
            "same_core_ns": int(delay[same].sum()),
            "cross_core_ns": int(delay[~same].sum()),
            "switch_service_ns": int(service[switch].sum()),
            "memory_service_ns": int(service[memory].sum()),
        }


def link_id(num_cores: int, src: int, dst: int) -> int:
    """The link label of traffic from core ``src`` to ``dst`` (or `GLOBAL_MEMORY`)."""
    return src * (num_cores + 1) + (num_cores if dst == GLOBAL_MEMORY else dst)


_STEP_CODE = {Compute: 0, Send: 1, Recv: 2, Load: 3, Store: 4, Signal: 5, Wait: 6}
"""A step's kind as `_event_chain` reads it (its ``COMPUTE`` .. ``WAIT``)."""
_COMPUTE, _SEND, _RECV, _LOAD, _STORE, _SIGNAL, _WAIT = range(7)
_NOT_A_STEP = -1


@dataclass(frozen=True)
class _StepTable:
    """Every core's steps as columns, in program order (core by core).

    ``code`` is `_STEP_CODE` (`_NOT_A_STEP` for anything else); ``peer`` the peer
    core of a SEND, RECV or SIGNAL; ``value`` a COMPUTE's ns, a transfer's bytes or
    a SIGNAL's or WAIT's register; ``count`` a WAIT's count. ``core`` and ``origin``
    (the number messages give the step) per step; core ``c``'s steps are
    ``start[c]:start[c + 1]``.
    """

    code: np.ndarray
    peer: np.ndarray
    value: np.ndarray
    count: np.ndarray
    core: np.ndarray
    origin: np.ndarray
    start: np.ndarray


def _step_table(cores: list[list[Step]], origin: list[list[int]] | None) -> _StepTable:
    """The steps as columns: one pass over the step objects, the rest numpy.

    The columns are int64 unless some field is not a 64-bit integer (a float, a
    huge time): then ``peer``, ``value`` and ``count`` hold the Python objects for
    `_check_steps` and `_step_prices` to report.
    """
    rows: list[tuple[int, object, object, object]] = []
    add = rows.append
    for steps in cores:
        for step in steps:
            kind = type(step)
            if kind is Compute:
                add((_COMPUTE, 0, step.ns, 0))
            elif kind is Send or kind is Recv:
                add((_STEP_CODE[kind], step.peer, step.nbytes, 0))
            elif kind is Load or kind is Store:
                add((_STEP_CODE[kind], 0, step.nbytes, 0))
            elif kind is Signal:
                add((_SIGNAL, step.peer, step.register, 0))
            elif kind is Wait:
                add((_WAIT, 0, step.register, step.count))
            else:
                add((_NOT_A_STEP, 0, 0, 0))
    lengths = np.fromiter((len(steps) for steps in cores), dtype=np.int64, count=len(cores))
    start = np.zeros(len(cores) + 1, dtype=np.int64)
    np.cumsum(lengths, out=start[1:])
    table = np.array(rows) if rows else np.zeros((0, 4), dtype=np.int64)
    if table.dtype.kind != "i":
        table = np.array(rows, dtype=object)
    core = np.repeat(np.arange(len(cores), dtype=np.int64), lengths)
    if origin is None:
        positions = np.arange(len(rows), dtype=np.int64) - start[core]
    else:
        positions = np.fromiter(
            (i for numbers in origin for i in numbers), dtype=np.int64, count=len(rows)
        )
    code = table[:, 0].astype(np.int64)
    return _StepTable(code, table[:, 1], table[:, 2], table[:, 3], core, positions, start)


_INT64 = 2**63


def _fits(code: int, peer: object, value: object, count: object) -> bool:
    """Whether a step's fields are integers, and 64-bit where they are not times or
    sizes (those are range errors, `_step_prices`)."""
    if not all(isinstance(x, (int, np.integer)) for x in (peer, value, count)):
        return False
    small = (peer, count, value) if code in (_SIGNAL, _WAIT) else (peer, count)
    return all(-_INT64 <= x < _INT64 for x in small)  # type: ignore[operator]


def _check_steps(cores: list[list[Step]], table: _StepTable, name: str) -> None:
    """Raise `InvalidInstanceError` for the first malformed step in program order."""
    num_cores = len(cores)
    code, core, peer, value, count = table.code, table.core, table.peer, table.value, table.count
    bad = code == _NOT_A_STEP
    if value.dtype == object:
        fits = np.fromiter(
            map(_fits, code.tolist(), peer, value, count), dtype=bool, count=code.size
        )
        bad |= ~fits
        peer, value, count = (np.where(fits, column, 0) for column in (peer, value, count))
    has_peer = (code == _SEND) | (code == _RECV) | (code == _SIGNAL)
    bad |= (value < 0) | (count < 0)
    bad |= has_peer & ((peer < 0) | (peer >= num_cores))
    bad |= has_peer & (code != _SIGNAL) & (peer == core)
    if bad.any():
        first = int(np.argmax(bad))
        c = int(core[first])
        step = cores[c][first - int(table.start[c])]
        _check_step(step, c, int(table.origin[first]), num_cores, name)


def _check_step(step: object, c: int, i: int, num_cores: int, name: str) -> None:
    """Raise `InvalidInstanceError` for what is wrong with ``step`` (core ``c``, step ``i``)."""
    kind = type(step)
    where = f"{name}: core {c} step {i}"
    if kind not in _STEP_CODE:
        raise InvalidInstanceError(f"{where}: not a Step: {step!r}")
    names = [f.name for f in fields(step)]  # type: ignore[arg-type]
    for field_name in names:
        x = getattr(step, field_name)
        if not isinstance(x, (int, np.integer)):
            raise InvalidInstanceError(f"{where}: {field_name} is {x!r}, not an integer")
        if field_name in ("peer", "register", "count") and not -_INT64 <= x < _INT64:
            raise InvalidInstanceError(f"{where}: {field_name} is {x}, beyond 64 bits")
    if kind is Send or kind is Recv or kind is Signal:
        _peer(step.peer, num_cores, c, kind is Signal, name, i)  # type: ignore[union-attr]
    for field_name in names:
        if field_name != "peer":
            _non_negative(getattr(step, field_name), field_name, name, c, i)
    raise AssertionError(f"{where} was flagged but passes every check")


def _out_of_range(name: str, ns: int) -> TimingUnavailableError:
    return TimingUnavailableError(
        f"{name}: a time of {ns} ns is outside the supported range (at most {MAX_TIMING_NS} ns)"
    )


def _price_rules(timing: StepTiming) -> dict[tuple[int, int], tuple[Callable[..., int], str]]:
    """``(step code, price column) -> (price, argument columns)``: the table in
    `_event_chain.c` (columns ``a, b, c``; arguments from ``core``, ``peer``,
    ``memory`` (`GLOBAL_MEMORY`) and ``bytes``)."""
    return {
        (_SEND, 0): (timing.control_ns, "core peer"),
        (_SEND, 1): (timing.data_ns, "core peer bytes"),
        (_SEND, 2): (timing.local_read_ns, "bytes"),
        (_RECV, 0): (timing.control_ns, "core peer"),
        (_RECV, 2): (timing.local_write_ns, "bytes"),
        (_LOAD, 0): (timing.control_ns, "core memory"),
        (_LOAD, 1): (timing.global_read_ns, "bytes"),
        (_LOAD, 2): (timing.local_write_ns, "bytes"),
        (_STORE, 0): (timing.data_ns, "core memory bytes"),
        (_STORE, 1): (timing.global_write_ns, "bytes"),
        (_STORE, 2): (timing.local_read_ns, "bytes"),
        (_SIGNAL, 0): (timing.control_ns, "core peer"),
        (_SIGNAL, 2): (timing.cycle_ns, ""),
    }


def _priced(price: Callable[..., int], arguments: list[np.ndarray], rows: int) -> np.ndarray:
    """``price(*key)`` per row (Python ints), called once per distinct key; values
    beyond `MAX_TIMING_NS` are clamped to one more (the caller reports them)."""
    if not arguments:
        return np.full(rows, min(price(), MAX_TIMING_NS + 1), dtype=np.int64)
    order = np.lexsort(arguments[::-1])
    keys = np.stack(arguments, axis=1)[order]
    first = np.ones(rows, dtype=bool)
    first[1:] = (keys[1:] != keys[:-1]).any(axis=1)
    values = [min(price(*key), MAX_TIMING_NS + 1) for key in keys[first].tolist()]
    priced = np.empty(rows, dtype=np.int64)
    priced[order] = np.array(values, dtype=np.int64)[np.cumsum(first) - 1]
    return priced


def _step_prices(table: _StepTable, timing: StepTiming, name: str) -> np.ndarray:
    """The prices ``a``, ``b``, ``c`` of every step (rows of the result; the table in
    `_event_chain.c`).

    Raises `TimingUnavailableError` naming the first time beyond `MAX_TIMING_NS`
    in program order (``a``, then ``b``, then ``c`` within a step); a time or a
    size too large for 64 bits is reported first.
    """
    if table.value.dtype == object:
        first = int(np.argmax(table.value >= _INT64))
        if table.code[first] == _COMPUTE:
            raise _out_of_range(name, int(table.value[first]))
        raise TimingUnavailableError(
            f"{name}: core {int(table.core[first])} step {int(table.origin[first])}: a size "
            f"of {int(table.value[first])} bytes is outside the supported range"
        )
    code = table.code
    columns = {
        "core": table.core,
        "peer": table.peer,
        "memory": np.full(code.size, GLOBAL_MEMORY, dtype=np.int64),
        "bytes": table.value,
    }
    prices = np.zeros((3, code.size), dtype=np.int64)
    compute = code == _COMPUTE
    prices[0, compute] = np.minimum(table.value[compute], MAX_TIMING_NS + 1)
    rules = _price_rules(timing)
    rows_of = {k: np.flatnonzero(code == k) for k in range(_SEND, _WAIT)}
    for (k, column), (price, names) in rules.items():
        rows = rows_of[k]
        if rows.size:
            arguments = [columns[a][rows] for a in names.split()]
            prices[column, rows] = _priced(price, arguments, rows.size)
    beyond = (prices > MAX_TIMING_NS).T.reshape(-1)
    if beyond.any():
        row, column = divmod(int(np.argmax(beyond)), 3)
        if compute[row]:
            raise _out_of_range(name, int(table.value[row]))
        price, names = rules[int(code[row]), column]
        raise _out_of_range(name, price(*(int(columns[a][row]) for a in names.split())))
    return prices


_EVENTS_PER_STEP = np.array([0, 3, 2, 2, 2, 1, 1], dtype=np.int64)
_EDGES_PER_STEP = np.array([0, 2, 2, 2, 2, 1, 1], dtype=np.int64)


def build_events(
    cores: list[list[Step]],
    timing: StepTiming,
    name: str = "events",
    origin: list[list[int]] | None = None,
) -> EventGraph:
    """Realize per-core ordered steps into an `EventGraph` (semantics: module docstring).

    Parameters
    ----------
    cores:
        ``cores[c]`` is core ``c``'s steps in program order, one generation; an
        empty list is an idle core (no events).
    timing:
        Prices of the communication phases (`SchedulingTarget.step_timing`).
    name:
        Names the graph in messages.
    origin:
        ``origin[c][i]`` is the number messages and `EventGraph.step` give step
        ``i`` of core ``c`` (an instruction index, say); default ``i``.

    Raises `InvalidInstanceError` for the first malformed step in program order
    (not a step, a field that is not an integer, a negative size or count, a peer
    outside the cores or a transfer to itself), then when a SEND or RECV has no
    partner or an event register's WAIT counts per generation differ from the
    tokens signalled to it (the counter would drift or a WAIT never complete).
    Raises `TimingUnavailableError` when a time exceeds `MAX_TIMING_NS`: the first
    such price in program order, else the first such sum of in-order work (an
    edge's delay), else a core's work.

    The steps are read into columns in one pass, priced once per distinct
    argument tuple, and each core's in-order chain is built by the compiled
    `_event_chain`; transfers are matched with numpy. Time ``O(N + K log K)`` for
    ``N`` steps of which ``K`` communicate; the graph has ``O(K + P)`` events for
    ``P`` active cores.
    """
    num_cores = len(cores)
    table = _step_table(cores, origin)
    _check_steps(cores, table, name)
    a, b, c = _step_prices(table, timing, name)
    code = table.code
    active = int(np.count_nonzero(table.start[1:] > table.start[:-1]))
    num_events = active + int(_EVENTS_PER_STEP[code].sum())
    num_chain_edges = active + int(_EDGES_PER_STEP[code].sum())
    nodes = np.empty((6, num_events), dtype=np.int64)
    chain_edges = np.empty((5, num_chain_edges), dtype=np.int64)
    work = np.empty(num_cores, dtype=np.int64)
    step_event = np.empty(code.size, dtype=np.int64)
    peer = table.peer.astype(np.int64)
    beyond = _event_chain.chain(
        num_cores,
        table.start,
        code,
        a,
        b,
        c,
        table.origin,
        *nodes,
        *chain_edges,
        work,
        step_event,
    )
    if beyond is not None:
        raise _out_of_range(name, beyond)
    node_core, kind, step, resource, service, release = nodes
    transfer_edges = _match_transfers(table, code, peer, step_event, c, num_cores, name)
    signal_edges, notes = _match_signals(table, code, peer, step_event, num_cores, name)
    u, v, w, d, link = np.concatenate([chain_edges, transfer_edges, signal_edges], axis=1)
    graph = PeriodicGraph(num_events, u, v, w, d, core=node_core, link=link, name=name)
    return EventGraph(graph, resource, service, release, num_cores, kind, step, work, notes)


def _non_negative(value: int, what: str, name: str, core: int, step: int) -> None:
    if value < 0:
        raise InvalidInstanceError(f"{name}: core {core} step {step}: {what} is {value}, not >= 0")


def _peer(peer: int, num_cores: int, core: int, allow_self: bool, name: str, step: int) -> None:
    where = f"{name}: core {core} step {step}"
    if not 0 <= peer < num_cores:
        raise InvalidInstanceError(f"{where}: peer core {peer} outside 0..{num_cores - 1}")
    if peer == core and not allow_self:
        raise InvalidInstanceError(f"{where}: transfer from core {core} to itself")


def _match_transfers(
    table: _StepTable,
    code: np.ndarray,
    peer: np.ndarray,
    step_event: np.ndarray,
    local: np.ndarray,
    num_cores: int,
    name: str,
) -> np.ndarray:
    """The edges pairing the k-th SEND from ``s`` to ``r`` with the k-th RECV on ``r``
    from ``s``, pairs ``(s, r)`` ascending: rows ``u, v, w, d, link``.

    A SEND's events are ``request, enqueue, payload`` and a RECV's ``permission,
    done`` (consecutive ids from ``step_event``); ``local`` holds a SEND's source
    read and a RECV's destination write.
    """
    sends, recvs = np.flatnonzero(code == _SEND), np.flatnonzero(code == _RECV)
    send_src, send_dst = table.core[sends], peer[sends]
    recv_src, recv_dst = peer[recvs], table.core[recvs]
    sends = sends[np.lexsort((send_dst, send_src))]
    recvs = recvs[np.lexsort((recv_dst, recv_src))]
    send_pair = table.core[sends] * num_cores + peer[sends]
    recv_pair = peer[recvs] * num_cores + table.core[recvs]
    pairs, send_count = np.unique(send_pair, return_counts=True)
    recv_pairs, recv_count = np.unique(recv_pair, return_counts=True)
    if not (np.array_equal(pairs, recv_pairs) and np.array_equal(send_count, recv_count)):
        every = np.union1d(pairs, recv_pairs)
        out = np.zeros(every.size, dtype=np.int64)
        into = np.zeros(every.size, dtype=np.int64)
        out[np.searchsorted(every, pairs)] = send_count
        into[np.searchsorted(every, recv_pairs)] = recv_count
        first = int(np.argmax(out != into))
        src, dst = divmod(int(every[first]), num_cores)
        raise InvalidInstanceError(
            f"{name}: core {src} sends {int(out[first])} time(s) to core {dst}, which "
            f"receives {int(into[first])} time(s) from it per generation"
        )
    sizes = table.value.astype(np.int64)
    differ = np.flatnonzero(sizes[sends] != sizes[recvs])
    if differ.size:
        s, r = int(sends[differ[0]]), int(recvs[differ[0]])
        raise InvalidInstanceError(
            f"{name}: core {int(table.core[s])} step {int(table.origin[s])} sends "
            f"{int(sizes[s])} bytes to core {int(peer[s])}, whose matching step "
            f"{int(table.origin[r])} receives {int(sizes[r])}"
        )
    request, permission = step_event[sends], step_event[recvs]
    src, dst = table.core[sends], peer[sends]
    forward, backward = src * (num_cores + 1) + dst, dst * (num_cores + 1) + src
    zero = np.zeros(sends.size, dtype=np.int64)
    columns = (
        (request, permission, zero, zero, forward),
        (permission, request + 1, local[sends], zero, backward),
        (request + 2, permission + 1, local[recvs], zero, forward),
    )
    # Three edges per match, interleaved: shape (5, 3 * matches).
    return np.stack([np.stack(edge) for edge in columns], axis=2).reshape(5, -1)


def _match_signals(
    table: _StepTable,
    code: np.ndarray,
    peer: np.ndarray,
    step_event: np.ndarray,
    num_cores: int,
    name: str,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Give each WAIT its tokens: the edges (rows ``u, v, w, d, link``) and notes on
    approximate assignments."""
    signals: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    waits: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    registers = table.value.astype(np.int64)
    for s in np.flatnonzero(code == _SIGNAL).tolist():
        key = (int(peer[s]), int(registers[s]))
        signals[key].append((int(table.core[s]), int(table.origin[s]), int(step_event[s])))
    for s in np.flatnonzero(code == _WAIT).tolist():
        key = (int(table.core[s]), int(registers[s]))
        waits[key].append((int(step_event[s]), int(table.count[s])))
    edges: list[tuple[int, int, int, int, int]] = []
    notes = []
    for key in sorted(set(signals) | set(waits)):
        core, register = key
        tokens = sorted(signals.get(key, []))
        wanted = waits.get(key, [])
        needed = sum(count for _, count in wanted)
        if needed != len(tokens):
            raise InvalidInstanceError(
                f"{name}: core {core} event register {register}: WAITs consume {needed} "
                f"token(s) per generation but SYNCs deliver {len(tokens)}"
                + ("; a WAIT never completes (deadlock)" if needed > len(tokens) else "")
            )
        sources = {source for source, _, _ in tokens}
        if len(sources) > 1 and len(wanted) > 1:
            notes.append(
                f"core {core} event register {register}: tokens from {len(sources)} cores "
                "assigned to its WAITs in (source core, program) order"
            )
        position = 0
        for event, count in wanted:
            for source, _, token in tokens[position : position + count]:
                edges.append((token, event, 0, 0, link_id(num_cores, source, core)))
            position += count
    return np.array(edges, dtype=np.int64).reshape(-1, 5).T, tuple(notes)
