"""`ComputeGraph`: the task DAG every scheduler, model and evaluator works on.

Tasks have integer ids ``0..T-1``; dependencies are parallel numpy arrays; costs
are integer nanoseconds already priced by a target; resident weights are integer
ids with a size in weight slots. Successor/predecessor CSR views are built once
and cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.toposort import CycleFound, topological_order


def _int_array(values: object) -> np.ndarray:
    array = np.asarray(values, dtype=np.int64)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class ComputeGraph:
    """A DAG of tasks with costs, transfer bytes and resident weights.

    Parameters
    ----------
    names:
        Task names, index = task id.
    cost:
        Execution time of each task in ns on any core (homogeneous targets).
    edge_src, edge_dst, edge_bytes:
        Dependencies ``edge_src[e] -> edge_dst[e]`` carrying ``edge_bytes[e]`` bytes.
    task_weights:
        Per task, the ids of the resident weights it needs on its core.
    weight_size:
        Slots (crossbars on PIM) each weight occupies.
    operation, lane, operation_names:
        Which workload operation and lane a task belongs to (for groups and reports).
    core_cost:
        Optional ``(T, P)`` matrix of per-core costs for heterogeneous research
        instances; when given it overrides ``cost``.
    """

    names: tuple[str, ...]
    cost: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_bytes: np.ndarray
    task_weights: tuple[tuple[int, ...], ...] = ()
    weight_size: np.ndarray = field(default_factory=lambda: _int_array([]))
    weight_names: tuple[str, ...] = ()
    operation: np.ndarray | None = None
    lane: np.ndarray | None = None
    operation_names: tuple[str, ...] = ()
    core_cost: np.ndarray | None = None
    name: str = "graph"

    def __post_init__(self) -> None:
        for attr in ("cost", "edge_src", "edge_dst", "edge_bytes", "weight_size"):
            object.__setattr__(self, attr, _int_array(getattr(self, attr)))
        if not self.task_weights:
            object.__setattr__(self, "task_weights", tuple(() for _ in self.names))
        n = len(self.names)
        if self.operation is None:
            object.__setattr__(self, "operation", _int_array(np.arange(n)))
            object.__setattr__(self, "operation_names", self.names)
        else:
            object.__setattr__(self, "operation", _int_array(self.operation))
        object.__setattr__(
            self, "lane", _int_array(np.zeros(n) if self.lane is None else self.lane)
        )
        if self.core_cost is not None:
            object.__setattr__(self, "core_cost", _int_array(self.core_cost))

    # -- sizes ---------------------------------------------------------------

    @property
    def num_tasks(self) -> int:
        return len(self.names)

    @property
    def num_edges(self) -> int:
        return int(self.edge_src.shape[0])

    @property
    def num_weights(self) -> int:
        return int(self.weight_size.shape[0])

    # -- costs ---------------------------------------------------------------

    def cost_on(self, task: int, core: int) -> int:
        """Execution time of ``task`` on ``core``."""
        if self.core_cost is not None:
            return int(self.core_cost[task, core])
        return int(self.cost[task])

    def min_cost(self) -> np.ndarray:
        """Per-task cost on its fastest core (for lower bounds)."""
        if self.core_cost is not None:
            return self.core_cost.min(axis=1)
        return self.cost

    def distinct_weight_slots(self) -> int:
        """Slots of one copy of every weight that some task uses."""
        used = np.zeros(self.num_weights, dtype=bool)
        for weights in self.task_weights:
            used[list(weights)] = True
        return int(self.weight_size[used].sum())

    # -- adjacency -------------------------------------------------------------

    @cached_property
    def _succ_csr(self) -> tuple[np.ndarray, np.ndarray]:
        return _csr(self.edge_src, self.num_tasks)

    @cached_property
    def _pred_csr(self) -> tuple[np.ndarray, np.ndarray]:
        return _csr(self.edge_dst, self.num_tasks)

    def successor_edges(self, task: int) -> np.ndarray:
        """Edge ids leaving ``task``, in ascending edge order."""
        indptr, order = self._succ_csr
        return order[indptr[task] : indptr[task + 1]]

    def predecessor_edges(self, task: int) -> np.ndarray:
        """Edge ids entering ``task``, in ascending edge order."""
        indptr, order = self._pred_csr
        return order[indptr[task] : indptr[task + 1]]

    @cached_property
    def topological_order(self) -> np.ndarray:
        """Tasks in a deterministic topological order (smallest ready id first).

        Raises `InvalidInstanceError` naming a task on a cycle.
        """
        try:
            order = topological_order(self.num_tasks, self.edge_src, self.edge_dst)
        except CycleFound as found:
            raise InvalidInstanceError(
                f"{self.name}: dependency cycle through task {self.names[found.cycle[0]]!r}"
            ) from None
        return _int_array(order)

    # -- checks ----------------------------------------------------------------

    def validate(self, capacities: list[int] | None = None) -> None:
        """Reject structural errors with a message naming the culprit.

        Checks dangling edges, negative costs and bytes, cycles and, when per-core
        ``capacities`` are given, tasks whose weights fit on no core.
        """
        n = self.num_tasks
        if not (self.edge_src.shape == self.edge_dst.shape == self.edge_bytes.shape):
            raise InvalidInstanceError(f"{self.name}: edge arrays differ in length")
        for end, array in (("source", self.edge_src), ("target", self.edge_dst)):
            bad = np.flatnonzero((array < 0) | (array >= n))
            if bad.size:
                e = int(bad[0])
                raise InvalidInstanceError(
                    f"{self.name}: edge {e} has dangling {end} {int(array[e])} "
                    f"(tasks are 0..{n - 1})"
                )
        if self.cost.shape != (n,):
            raise InvalidInstanceError(f"{self.name}: {self.cost.shape[0]} costs for {n} tasks")
        costs = self.cost if self.core_cost is None else self.core_cost.min(axis=1)
        bad = np.flatnonzero(costs < 0)
        if bad.size:
            t = int(bad[0])
            raise InvalidInstanceError(
                f"{self.name}: task {self.names[t]!r} has negative cost {int(costs[t])}"
            )
        bad = np.flatnonzero(self.edge_bytes < 0)
        if bad.size:
            e = int(bad[0])
            raise InvalidInstanceError(
                f"{self.name}: edge {self.names[int(self.edge_src[e])]!r} -> "
                f"{self.names[int(self.edge_dst[e])]!r} has negative bytes"
            )
        loops = np.flatnonzero(self.edge_src == self.edge_dst)
        if loops.size:
            t = int(self.edge_src[int(loops[0])])
            raise InvalidInstanceError(
                f"{self.name}: dependency cycle through task {self.names[t]!r} (self-loop)"
            )
        for attr in ("operation", "lane"):
            if getattr(self, attr).shape != (n,):
                raise InvalidInstanceError(f"{self.name}: {attr} array does not have {n} entries")
        if self.core_cost is not None and (
            self.core_cost.ndim != 2 or self.core_cost.shape[0] != n
        ):
            raise InvalidInstanceError(f"{self.name}: core_cost must have one row per task")
        if len(self.task_weights) != n:
            raise InvalidInstanceError(
                f"{self.name}: task_weights has {len(self.task_weights)} entries for {n} tasks"
            )
        bad = np.flatnonzero(self.weight_size < 0)
        if bad.size:
            w = int(bad[0])
            raise InvalidInstanceError(f"{self.name}: weight {w} has negative size")
        for t, weights in enumerate(self.task_weights):
            for w in weights:
                if not 0 <= w < self.num_weights:
                    raise InvalidInstanceError(
                        f"{self.name}: task {self.names[t]!r} uses unknown weight id {w}"
                    )
        _ = self.topological_order
        if capacities is not None:
            if not capacities:
                raise InvalidInstanceError(f"{self.name}: the target has no cores")
            largest = max(capacities)
            for t, weights in enumerate(self.task_weights):
                need = int(sum(int(self.weight_size[w]) for w in weights))
                if need > largest:
                    raise InvalidInstanceError(
                        f"{self.name}: oversized task {self.names[t]!r} needs {need} weight "
                        f"slots but the largest core holds {largest}"
                    )


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Group edge ids by ``keys`` (stable): returns (indptr, edge ids)."""
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=n) if keys.size else np.zeros(n, dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return _int_array(indptr), _int_array(order)
