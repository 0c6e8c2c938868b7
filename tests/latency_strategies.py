"""Random small latency problems for the property tests of the portfolio, replication and polish."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from raptor_cp.graph import DIRECT_RECEIVE, PLAIN, ComputeGraph
from raptor_cp.heuristics.bin_packing import first_fit_decreasing
from raptor_cp.problems import LatencyProblem
from raptor_cp.targets.base import UNLIMITED_CAPACITY
from raptor_cp.targets.generic import GenericTarget


@dataclass(frozen=True)
class SlotTarget(GenericTarget):
    """Generic cores holding ``slots`` resident-weight slots each; with ``direct_half`` a
    direct receive (into assembly storage) costs half a plain transfer, as PIM omits an
    endpoint charge for it, so that solvers which ignore the edge kind misprice it."""

    slots: int = UNLIMITED_CAPACITY
    direct_half: bool = False

    def capacity(self, core: int) -> int:
        return self.slots

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        full = super().transfer_ns(src, dst, nbytes)
        return full // 2 if direct and self.direct_half else full

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        full = super().mean_transfer_ns(nbytes)
        return full // 2 if direct and self.direct_half else full


@st.composite
def latency_problems(draw: st.DrawFn, max_tasks: int = 10, weights: bool = True) -> LatencyProblem:
    """A DAG of 1..max_tasks tasks on 1..4 cores, with transfers, maybe direct receives priced
    at half, and (maybe) resident weights on cores of 2..4 slots that can hold every weight."""
    n = draw(st.integers(1, max_tasks))
    cost = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=2 * n)) if pairs else []
    chosen.sort(key=lambda e: (e[1], e[0]))
    nbytes = draw(st.lists(st.integers(0, 8), min_size=len(chosen), max_size=len(chosen)))
    direct = draw(st.booleans())
    kinds = [
        DIRECT_RECEIVE if direct and draw(st.booleans()) else PLAIN for _ in range(len(chosen))
    ]
    cores = draw(st.integers(1, 4))
    ns_per_byte = draw(st.integers(0, 2))
    task_weights: tuple[tuple[int, ...], ...] = ()
    weight_size = np.array([], dtype=np.int64)
    slots = UNLIMITED_CAPACITY
    if weights and draw(st.booleans()):
        count = draw(st.integers(1, 4))
        weight_size = np.array(draw(st.lists(st.integers(1, 2), min_size=count, max_size=count)))
        task_weights = tuple(
            () if w < 0 else (w,)
            for w in draw(st.lists(st.integers(-1, count - 1), min_size=n, max_size=n))
        )
        slots = draw(st.integers(2, 4))
        # Feasible instances only: first-fit decreasing must pack every weight once.
        assume(max(first_fit_decreasing(weight_size.tolist(), slots), default=0) < cores)
    target = (
        SlotTarget(cores, ns_per_byte, slots, direct)
        if direct or slots < UNLIMITED_CAPACITY
        else GenericTarget(cores, ns_per_byte)
    )
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.array(cost),
        edge_src=np.array([a for a, _ in chosen], dtype=np.int64),
        edge_dst=np.array([b for _, b in chosen], dtype=np.int64),
        edge_bytes=np.array(nbytes, dtype=np.int64),
        task_weights=task_weights,
        weight_size=weight_size,
        edge_kind=np.array(kinds, dtype=np.int64),
        name="random",
    )
    return LatencyProblem(graph, target)
