"""Random small latency problems for the property tests of the portfolio and polish."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from raptor_cp.graph import ComputeGraph
from raptor_cp.problems import LatencyProblem
from raptor_cp.targets.generic import GenericTarget


@dataclass(frozen=True)
class SlotTarget(GenericTarget):
    """Generic cores that each hold ``slots`` resident-weight slots."""

    slots: int = 1

    def capacity(self, core: int) -> int:
        return self.slots


@st.composite
def latency_problems(draw: st.DrawFn, max_tasks: int = 10, weights: bool = True) -> LatencyProblem:
    """A DAG of 1..max_tasks tasks on 1..4 cores, with transfers and (maybe) resident weights."""
    n = draw(st.integers(1, max_tasks))
    cost = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=2 * n)) if pairs else []
    chosen.sort(key=lambda e: (e[1], e[0]))
    nbytes = draw(st.lists(st.integers(0, 8), min_size=len(chosen), max_size=len(chosen)))
    cores = draw(st.integers(1, 4))
    ns_per_byte = draw(st.integers(0, 2))
    task_weights: tuple[tuple[int, ...], ...] = ()
    weight_size = np.array([], dtype=np.int64)
    target: GenericTarget = GenericTarget(cores, ns_per_byte)
    if weights and draw(st.booleans()):
        count = draw(st.integers(1, 4))
        weight_size = np.array(draw(st.lists(st.integers(1, 2), min_size=count, max_size=count)))
        task_weights = tuple(
            () if w < 0 else (w,)
            for w in draw(st.lists(st.integers(-1, count - 1), min_size=n, max_size=n))
        )
        slots = draw(st.integers(2, 4))
        target = SlotTarget(cores, ns_per_byte, slots)
        assume(int(weight_size.sum()) <= cores * slots)
    graph = ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.array(cost),
        edge_src=np.array([a for a, _ in chosen], dtype=np.int64),
        edge_dst=np.array([b for _, b in chosen], dtype=np.int64),
        edge_bytes=np.array(nbytes, dtype=np.int64),
        task_weights=task_weights,
        weight_size=weight_size,
        name="random",
    )
    return LatencyProblem(graph, target)
