"""`build_events` (its compiled per-core chain, numpy matching) against its rules restated.

The reference below builds the event graph one step at a time, exactly as the module
docstring of `raptor_cp.periodic.events` describes it; random programs with every step
kind, idle cores, renumbered steps and prices that depend on the core pair must give
the same events and edges, in the same order (ties in the cycle-ratio and queue loops
follow ids).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.errors import InvalidInstanceError, TimingUnavailableError
from raptor_cp.periodic import _event_chain
from raptor_cp.periodic.events import (
    MAX_TIMING_NS,
    Compute,
    EventGraph,
    EventKind,
    Load,
    Recv,
    Send,
    Signal,
    Store,
    Wait,
    build_events,
    link_id,
)
from raptor_cp.periodic.graph import NO_LABEL
from raptor_cp.targets.base import GLOBAL_MEMORY


@dataclass(frozen=True)
class PairTiming:
    """Prices that differ per core pair and per size, so a wrong lookup shows."""

    def cycle_ns(self) -> int:
        return 3

    def control_ns(self, src: int, dst: int) -> int:
        return 2 + (7 * src + dst) % 5

    def data_ns(self, src: int, dst: int, nbytes: int) -> int:
        return nbytes * (1 + (src + 2 * dst) % 3)

    def local_read_ns(self, nbytes: int) -> int:
        return nbytes

    def local_write_ns(self, nbytes: int) -> int:
        return 2 * nbytes + 1

    def global_read_ns(self, nbytes: int) -> int:
        return 10 * nbytes

    def global_write_ns(self, nbytes: int) -> int:
        return 20 * nbytes + 1


def reference_events(cores: list[list], timing: PairTiming, origin=None) -> dict[str, list]:
    """The event graph by the module docstring's rules, one step at a time."""
    n = len(cores)
    nodes: list[tuple[int, int, int, int, int]] = []  # core, kind, step, resource, service
    release: dict[int, int] = {}
    edges: list[tuple[int, int, int, int, int]] = []
    sends, recvs = defaultdict(list), defaultdict(list)
    signals, waits = defaultdict(list), defaultdict(list)
    work = [0] * n

    def node(kind, core, step, resource=-1, service=0):
        nodes.append((core, int(kind), step, resource, service))
        return len(nodes) - 1

    for c, steps in enumerate(cores):
        if not steps:
            continue
        entry = node(EventKind.ENTRY, c, -1)
        last, pending = entry, 0
        for position, step in enumerate(steps):
            i = position if origin is None else origin[c][position]
            if isinstance(step, Compute):
                pending += step.ns
                work[c] += step.ns
            elif isinstance(step, Send):
                request = node(EventKind.SEND_REQUEST, c, i, c, timing.control_ns(c, step.peer))
                edges.append((last, request, pending, 0, NO_LABEL))
                enqueue = node(EventKind.SEND_ENQUEUE, c, i)
                ns = timing.data_ns(c, step.peer, step.nbytes)
                payload = node(EventKind.PAYLOAD, c, i, c, ns)
                edges.append((enqueue, payload, 0, 0, NO_LABEL))
                sends[c, step.peer].append((request, step.nbytes))
                work[c] += timing.local_read_ns(step.nbytes)
                last, pending = enqueue, 0
            elif isinstance(step, Recv):
                permission = node(EventKind.PERMISSION, c, i, c, timing.control_ns(c, step.peer))
                edges.append((last, permission, pending, 0, NO_LABEL))
                done = node(EventKind.RECV_DONE, c, i)
                edges.append((permission, done, 0, 0, NO_LABEL))
                recvs[step.peer, c].append((permission, step.nbytes))
                work[c] += timing.local_write_ns(step.nbytes)
                last, pending = done, 0
            elif isinstance(step, Load):
                request = node(EventKind.LOAD_REQUEST, c, i, c, timing.control_ns(c, GLOBAL_MEMORY))
                edges.append((last, request, pending, 0, NO_LABEL))
                service = node(EventKind.LOAD_SERVICE, c, i, n, timing.global_read_ns(step.nbytes))
                edges.append((request, service, 0, 0, link_id(n, c, GLOBAL_MEMORY)))
                release[request] = service
                after = timing.local_write_ns(step.nbytes)
                work[c] += after
                last, pending = service, after
            elif isinstance(step, Store):
                flits = timing.data_ns(c, GLOBAL_MEMORY, step.nbytes)
                request = node(EventKind.STORE_REQUEST, c, i, c, flits)
                read = timing.local_read_ns(step.nbytes)
                edges.append((last, request, pending + read, 0, NO_LABEL))
                service = node(
                    EventKind.STORE_SERVICE, c, i, n, timing.global_write_ns(step.nbytes)
                )
                edges.append((request, service, 0, 0, link_id(n, c, GLOBAL_MEMORY)))
                release[request] = service
                work[c] += read
                last, pending = service, 0
            elif isinstance(step, Signal):
                token = node(EventKind.SIGNAL, c, i, c, timing.control_ns(c, step.peer))
                edges.append((last, token, pending, 0, NO_LABEL))
                signals[step.peer, step.register].append((c, i, token))
                pending += timing.cycle_ns()
                work[c] += timing.cycle_ns()
            else:
                event = node(EventKind.WAIT, c, i)
                edges.append((last, event, pending, 0, NO_LABEL))
                waits[c, step.register].append((event, step.count))
                last, pending = event, 0
        edges.append((last, entry, pending, 1, NO_LABEL))
    for src, dst in sorted(sends):
        for (request, nbytes), (permission, _) in zip(
            sends[src, dst], recvs[src, dst], strict=True
        ):
            edges.append((request, permission, 0, 0, link_id(n, src, dst)))
            read = timing.local_read_ns(nbytes)
            edges.append((permission, request + 1, read, 0, link_id(n, dst, src)))
            write = timing.local_write_ns(nbytes)
            edges.append((request + 2, permission + 1, write, 0, link_id(n, src, dst)))
    for core, register in sorted(set(signals) | set(waits)):
        tokens = iter(sorted(signals[core, register]))
        for event, count in waits[core, register]:
            for _ in range(count):
                source, _, token = next(tokens)
                edges.append((token, event, 0, 0, link_id(n, source, core)))
    return {"nodes": nodes, "release": release, "edges": edges, "work": work}


def as_reference(events: EventGraph) -> dict[str, list]:
    g = events.graph
    nodes = list(
        zip(
            g.core.tolist(),
            events.kind.tolist(),
            events.step.tolist(),
            events.resource.tolist(),
            events.service.tolist(),
            strict=True,
        )
    )
    release = {x: y for x, y in enumerate(events.release.tolist()) if x != y}
    edges = list(zip(*(a.tolist() for a in (g.u, g.v, g.w, g.d, g.link)), strict=True))
    return {"nodes": nodes, "release": release, "edges": edges, "work": events.core_work.tolist()}


def random_program(rng: np.random.Generator) -> list[list]:
    """Steps drawn in one global order (so a generation can always complete): every
    kind, between two and six cores, some idle; every WAIT gets exactly its tokens."""
    cores = int(rng.integers(2, 7))
    steps: list[list] = [[] for _ in range(cores)]
    for _ in range(int(rng.integers(0, 40))):
        a, b = rng.choice(cores, size=2, replace=False).tolist()
        kind = int(rng.integers(0, 6))
        nbytes = int(rng.integers(0, 9))
        if kind == 0:
            steps[a].append(Compute(int(rng.integers(0, 50))))
        elif kind == 1:
            steps[a].append(Load(nbytes) if rng.random() < 0.5 else Store(nbytes))
        elif kind == 2:
            steps[a].append(Send(b, nbytes))
            steps[b].append(Recv(a, nbytes))
        elif kind == 3:
            target = a if rng.random() < 0.2 else b  # a core may signal itself
            register = int(rng.integers(0, 3))
            steps[a].append(Signal(target, register))
            steps[target].append(Wait(register, 1))
        elif kind == 4:
            # Several tokens to one WAIT, from one or two cores.
            register, count = int(rng.integers(0, 3)), int(rng.integers(1, 4))
            for k in range(count):
                source = a if k % 2 == 0 else b
                target = (a + 1) % cores if (a + 1) % cores not in (a, b) else b
                steps[source].append(Signal(target, register))
            steps[target].append(Wait(register, count))
        else:
            steps[a].append(Compute(int(rng.integers(0, 5))))
            steps[a].append(Compute(int(rng.integers(0, 5))))
    return steps


@pytest.mark.parametrize("seed", range(300))
def test_random_programs_match_the_rules_restated(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cores = random_program(rng)
    origin = None
    if seed % 3 == 0:
        origin = [[10 * i + 7 for i in range(len(steps))] for steps in cores]
    built = build_events(cores, PairTiming(), origin=origin)
    assert as_reference(built) == reference_events(cores, PairTiming(), origin)


def test_the_random_programs_cover_every_step_and_event_kind() -> None:
    kinds: set[int] = set()
    steps: set[type] = set()
    idle = 0
    for seed in range(300):
        cores = random_program(np.random.default_rng(seed))
        steps |= {type(s) for core in cores for s in core}
        idle += sum(not core for core in cores)
        kinds |= set(build_events(cores, PairTiming()).kind.tolist())
    assert steps == {Compute, Send, Recv, Load, Store, Signal, Wait}
    assert kinds == set(range(EventKind.OTHER))
    assert idle > 0


@pytest.mark.parametrize(
    ("cores", "message"),
    [
        ([[Compute(1), "send"]], r"core 0 step 1: not a Step: 'send'"),
        ([[Compute(1.5)]], r"core 0 step 0: ns is 1\.5, not an integer"),
        ([[Compute(1)], [Send(0, -4)]], r"core 1 step 0: nbytes is -4, not >= 0"),
        ([[Recv(5, 1)], []], r"core 0 step 0: peer core 5 outside 0\.\.1"),
        ([[Send(0, 1)]], r"core 0 step 0: transfer from core 0 to itself"),
        ([[Wait(0, -1)]], r"core 0 step 0: count is -1, not >= 0"),
        (
            [[Signal(0, 2**70)]],
            r"core 0 step 0: register is 1180591620717411303424, beyond 64 bits",
        ),
        # The first malformed step in program order is reported, whatever its kind.
        ([[Load(-1), Send(0, 1)], [Compute(-1)]], r"core 0 step 0: nbytes is -1, not >= 0"),
        ([[Send(1, 4), Send(1, 4)], [Recv(0, 4)]], r"core 0 sends 2 time\(s\) to core 1, which"),
        ([[Send(1, 4)], [Recv(0, 5)]], r"core 0 step 0 sends 4 bytes to core 1, whose matching"),
    ],
)
def test_malformed_programs_are_refused_with_the_first_fault(cores: list, message: str) -> None:
    with pytest.raises(InvalidInstanceError, match=message):
        build_events(cores, PairTiming())


@pytest.mark.parametrize(
    ("cores", "ns"),
    [
        ([[Compute(MAX_TIMING_NS + 1)]], MAX_TIMING_NS + 1),  # one price
        ([[Compute(2**70)]], 2**70),  # beyond 64 bits
        ([[Compute(2**52), Compute(2**52), Wait(0, 0)]], 2**53),  # an edge's sum
        # No edge's sum, but the core's work:
        ([[Compute(2**52), Load(0), Compute(2**52), Load(0), Compute(2**52)]], 3 * 2**52 + 2),
        ([[Compute(MAX_TIMING_NS)] * 2**11 + [Load(0)]], 2**11 * MAX_TIMING_NS),  # > 64 bits
        # Edges are checked as they are made, cores' work after every core's chain:
        (
            [
                [Compute(2**52), Load(0), Compute(2**52), Load(0), Compute(2**52)],
                [Compute(2**52), Compute(2**52), Wait(0, 0)],
            ],
            2**53,
        ),
    ],
)
def test_times_beyond_the_supported_range_are_unavailable(cores: list, ns: int) -> None:
    message = f"a time of {ns} ns is outside the supported range"
    with pytest.raises(TimingUnavailableError, match=message):
        build_events(cores, PairTiming())


def test_a_size_beyond_64_bits_is_unavailable() -> None:
    message = rf"core 0 step 1: a size of {2**70} bytes is outside the supported range"
    with pytest.raises(TimingUnavailableError, match=message):
        build_events([[Compute(1), Store(2**70)]], PairTiming())


def test_the_compiled_chain_refuses_inconsistent_arrays() -> None:
    def arrays(steps: int, events: int, edges: int, kind: int = 0) -> list:
        one = np.zeros(steps, dtype=np.int64)
        return [
            1,
            np.array([0, steps], dtype=np.int64),
            np.full(steps, kind, dtype=np.int64),
            one,
            one.copy(),
            one.copy(),
            one.copy(),
            *(np.zeros(events, dtype=np.int64) for _ in range(6)),
            *(np.zeros(edges, dtype=np.int64) for _ in range(5)),
            np.zeros(1, dtype=np.int64),
            np.zeros(steps, dtype=np.int64),
        ]

    assert _event_chain.chain(*arrays(2, 1, 1)) is None  # two compute steps: entry, loop edge
    with pytest.raises(ValueError, match="wrong length"):
        _event_chain.chain(*arrays(2, 2, 1))
    with pytest.raises(ValueError, match="kind 9"):
        _event_chain.chain(*arrays(2, 1, 1, kind=9))
    bad = arrays(2, 1, 1)
    bad[2] = bad[2].astype(np.int32)
    with pytest.raises(TypeError, match="kind must be a contiguous int64 array"):
        _event_chain.chain(*bad)
