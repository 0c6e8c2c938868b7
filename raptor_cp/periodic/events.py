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

import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property

import numpy as np

from raptor_cp.errors import InvalidInstanceError, TimingUnavailableError
from raptor_cp.periodic.graph import NO_LABEL, PeriodicGraph
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


class _Builder:
    """Growing node and edge lists of one `build_events` call."""

    def __init__(self, num_cores: int, name: str) -> None:
        self.num_cores = num_cores
        self.name = name
        self.core: list[int] = []
        self.kind: list[int] = []
        self.step: list[int] = []
        self.resource: list[int] = []
        self.service: list[int] = []
        self.release: list[int] = []
        self.edges: list[tuple[int, int, int, int, int]] = []

    def node(
        self, kind: EventKind, core: int, step: int, resource: int = NO_RESOURCE, service: int = 0
    ) -> int:
        if service > MAX_TIMING_NS:
            self.in_range(service)
        x = len(self.core)
        self.core.append(core)
        self.kind.append(kind)
        self.step.append(step)
        self.resource.append(resource)
        self.service.append(service)
        self.release.append(x)
        return x

    def edge(self, u: int, v: int, w: int, d: int = 0, link: int = NO_LABEL) -> None:
        if w > MAX_TIMING_NS:
            self.in_range(w)
        self.edges.append((u, v, w, d, link))

    def in_range(self, ns: int) -> None:
        """Raise `TimingUnavailableError` for a time beyond `MAX_TIMING_NS`."""
        if ns > MAX_TIMING_NS:
            raise TimingUnavailableError(
                f"{self.name}: a time of {ns} ns is outside the supported range "
                f"(at most {MAX_TIMING_NS} ns)"
            )

    def link(self, src: int, dst: int) -> int:
        return link_id(self.num_cores, src, dst)


@dataclass
class _Transfer:
    """One SEND (or RECV) waiting for its match: its events and step position."""

    core: int
    step: int
    nbytes: int
    first: int
    second: int
    third: int = -1


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

    Raises `TimingUnavailableError` when a time exceeds `MAX_TIMING_NS`, and
    `InvalidInstanceError` when a step names a core outside the list, a
    SEND or RECV has no partner, a size or count is negative, or an event
    register's WAIT counts per generation differ from the tokens signalled to it
    (the counter would drift or a WAIT never complete).

    Time ``O(N + (F + S) log(F + S))`` for ``N`` steps, ``F`` transfers and ``S``
    signals; the graph has ``O(F + S + L + P)`` events for ``L`` global requests
    and ``P`` active cores.
    """
    num_cores = len(cores)
    b = _Builder(num_cores, name)
    # Prices depend on their arguments only: memoised per call (steps repeat few sizes).
    control_ns, data_ns = functools.cache(timing.control_ns), functools.cache(timing.data_ns)
    read_ns, write_ns = (
        functools.cache(timing.local_read_ns),
        functools.cache(timing.local_write_ns),
    )
    node, edge = b.node, b.edge
    sends: dict[tuple[int, int], list[_Transfer]] = defaultdict(list)
    recvs: dict[tuple[int, int], list[_Transfer]] = defaultdict(list)
    signals: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    waits: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    work = [0] * num_cores
    for c, steps in enumerate(cores):
        if not steps:
            continue
        entry = node(EventKind.ENTRY, c, -1)
        last, pending = entry, 0
        for position, step in enumerate(steps):
            i = position if origin is None else origin[c][position]
            kind = type(step)
            if kind is Compute:
                _non_negative(step.ns, "ns", name, c, i)
                pending += step.ns
                work[c] += step.ns
                continue
            if kind is Send or kind is Recv or kind is Signal:
                _peer(step.peer, num_cores, c, kind is Signal, name, i)
            if kind is Send:
                _non_negative(step.nbytes, "nbytes", name, c, i)
                request = node(EventKind.SEND_REQUEST, c, i, c, control_ns(c, step.peer))
                edge(last, request, pending)
                enqueue = node(EventKind.SEND_ENQUEUE, c, i)
                ns = data_ns(c, step.peer, step.nbytes)
                payload = node(EventKind.PAYLOAD, c, i, c, ns)
                edge(enqueue, payload, 0)
                sends[c, step.peer].append(_Transfer(c, i, step.nbytes, request, enqueue, payload))
                work[c] += read_ns(step.nbytes)
                last, pending = enqueue, 0
            elif kind is Recv:
                _non_negative(step.nbytes, "nbytes", name, c, i)
                permission = node(EventKind.PERMISSION, c, i, c, control_ns(c, step.peer))
                edge(last, permission, pending)
                done = node(EventKind.RECV_DONE, c, i)
                edge(permission, done, 0)
                recvs[step.peer, c].append(_Transfer(c, i, step.nbytes, permission, done))
                work[c] += write_ns(step.nbytes)
                last, pending = done, 0
            elif kind is Load or kind is Store:
                _non_negative(step.nbytes, "nbytes", name, c, i)
                load = kind is Load
                if load:
                    ns, local = control_ns(c, GLOBAL_MEMORY), 0
                    service = timing.global_read_ns(step.nbytes)
                    after = write_ns(step.nbytes)
                else:
                    ns = data_ns(c, GLOBAL_MEMORY, step.nbytes)
                    local = read_ns(step.nbytes)
                    service, after = timing.global_write_ns(step.nbytes), 0
                kinds = (
                    (EventKind.LOAD_REQUEST, EventKind.LOAD_SERVICE)
                    if load
                    else (EventKind.STORE_REQUEST, EventKind.STORE_SERVICE)
                )
                request = node(kinds[0], c, i, c, ns)
                edge(last, request, pending + local)
                memory = node(kinds[1], c, i, num_cores, service)
                edge(request, memory, 0, link=b.link(c, GLOBAL_MEMORY))
                b.release[request] = memory
                work[c] += local + after
                last, pending = memory, after
            elif kind is Signal:
                _non_negative(step.register, "register", name, c, i)
                token = node(EventKind.SIGNAL, c, i, c, control_ns(c, step.peer))
                edge(last, token, pending)
                signals[step.peer, step.register].append((c, i, token))
                cycle = timing.cycle_ns()
                pending += cycle
                work[c] += cycle
            elif kind is Wait:
                _non_negative(step.register, "register", name, c, i)
                _non_negative(step.count, "count", name, c, i)
                event = node(EventKind.WAIT, c, i)
                edge(last, event, pending)
                waits[c, step.register].append((event, step.count))
                last, pending = event, 0
            else:
                raise InvalidInstanceError(f"{name}: core {c} step {i}: not a Step: {step!r}")
        edge(last, entry, pending, 1)
    for ns in work:
        b.in_range(ns)
    _match_transfers(b, sends, recvs, read_ns, write_ns)
    notes = _match_signals(b, signals, waits)
    u, v, w, d, link = np.array(b.edges, dtype=np.int64).reshape(-1, 5).T
    graph = PeriodicGraph(len(b.core), u, v, w, d, core=b.core, link=link, name=name)
    return EventGraph(
        graph, b.resource, b.service, b.release, num_cores, b.kind, b.step, work, tuple(notes)
    )


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
    b: _Builder,
    sends: dict[tuple[int, int], list[_Transfer]],
    recvs: dict[tuple[int, int], list[_Transfer]],
    read_ns: Callable[[int], int],
    write_ns: Callable[[int], int],
) -> None:
    """Pair the k-th SEND from ``s`` to ``r`` with the k-th RECV on ``r`` from ``s``."""
    for pair in sorted(set(sends) | set(recvs)):
        src, dst = pair
        out, into = sends.get(pair, []), recvs.get(pair, [])
        if len(out) != len(into):
            raise InvalidInstanceError(
                f"{b.name}: core {src} sends {len(out)} time(s) to core {dst}, which "
                f"receives {len(into)} time(s) from it per generation"
            )
        for send, recv in zip(out, into, strict=True):
            if send.nbytes != recv.nbytes:
                raise InvalidInstanceError(
                    f"{b.name}: core {src} step {send.step} sends {send.nbytes} bytes to "
                    f"core {dst}, whose matching step {recv.step} receives {recv.nbytes}"
                )
            b.edge(send.first, recv.first, 0, link=b.link(src, dst))
            b.edge(recv.first, send.second, read_ns(send.nbytes), link=b.link(dst, src))
            b.edge(send.third, recv.second, write_ns(send.nbytes), link=b.link(src, dst))


def _match_signals(
    b: _Builder,
    signals: dict[tuple[int, int], list[tuple[int, int, int]]],
    waits: dict[tuple[int, int], list[tuple[int, int]]],
) -> list[str]:
    """Give each WAIT its tokens; return notes on approximate assignments."""
    notes = []
    for key in sorted(set(signals) | set(waits)):
        core, register = key
        tokens = sorted(signals.get(key, []))
        wanted = waits.get(key, [])
        needed = sum(count for _, count in wanted)
        if needed != len(tokens):
            raise InvalidInstanceError(
                f"{b.name}: core {core} event register {register}: WAITs consume {needed} "
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
                b.edge(token, event, 0, link=b.link(source, core))
            position += count
    return notes
