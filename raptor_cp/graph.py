"""`ComputeGraph`: the task DAG every scheduler, model and evaluator works on.

Tasks have integer ids ``0..T-1``; dependencies are parallel numpy arrays; costs
are integer nanoseconds already priced by a target; resident weights are integer
ids with a size in weight slots. Successor/predecessor CSR views are built once
and cached.

Two cost quantities are kept apart (scheduling-implementation.md, "Priorities,
placement, and recovery limits"): ``cost`` is the *physical* estimate that PEFT,
placement, evaluation and the periodic realization use; ``nominal_cost`` is the
*nominal* priority that partitioning and packing use, where a transpose counts
as one bulk move. They must not be substituted for one another.

Beyond the dependencies, lowering records what the memory and communication
models need: each task's output fragment (``output_bytes``, its publication) and
element width (``payload_bits``), what kind of read each edge is (``edge_kind``:
a receive directly into assembly storage, a scalar projection), the operator
type of every operation, and the baseline global-memory requests of function
inputs, constants and outputs (`BaselineMemory`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.limits import check_tasks, check_total
from raptor_cp.toposort import CycleFound, topological_order

if TYPE_CHECKING:
    from raptor_cp.targets.base import Work


def _int_array(values: object) -> np.ndarray:
    array = np.asarray(values, dtype=np.int64)
    array.setflags(write=False)
    return array


PLAIN = 0
"""`ComputeGraph.edge_kind`: an exact projection of the producer's fragment."""
DIRECT_RECEIVE = 1
"""`ComputeGraph.edge_kind`: the producer's whole fragment, received directly into the
consumer's assembly storage; transfers omit its endpoint-memory charges."""
SCALAR_PROJECTION = 2
"""`ComputeGraph.edge_kind`: a scalar-index projection of the fragment (one source run);
a cross-stage read keeps its own store, rounded per contiguous source run."""


def _bool_array(values: object) -> np.ndarray:
    array = np.asarray(values, dtype=bool)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class BaselineMemory:
    """Global-memory requests of function inputs, constants and outputs, per inference.

    Request ``i`` is made by task ``task[i]`` for ``nbytes[i]`` bytes, a write
    (an output store) when ``write[i]``, else a read (an input or constant load).
    Reads with the same ``piece[i]`` read the same bytes of the same inference
    (a constant every lane of an operation reads whole); a write is a piece of its
    own. The seeds' separate baseline estimate (scheduling.md,
    "Costs and interpretation"): approximate before placement, bufferization,
    aliasing and load folding. Placement folds the loads (`first_loads`).
    """

    task: np.ndarray
    nbytes: np.ndarray
    write: np.ndarray
    piece: np.ndarray

    def __post_init__(self) -> None:
        for attr in ("task", "nbytes", "piece"):
            object.__setattr__(self, attr, _int_array(getattr(self, attr)))
        object.__setattr__(self, "write", _bool_array(self.write))

    @classmethod
    def empty(cls) -> BaselineMemory:
        return cls(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))

    @property
    def requests(self) -> int:
        return int(self.task.shape[0])

    def first_loads(self, core_of_task: np.ndarray) -> np.ndarray:
        """Which requests remain once each core loads each piece once per inference.

        Load folding (scheduling.md, "Costs and interpretation": baseline loads
        are approximate before placement and load folding): the reads of one piece
        by tasks on one core share one load and one local buffer; writes are never
        folded. A boolean mask over the requests, True for the first request of
        each (core, piece) in request order and for every write. ``core_of_task``
        maps each task to its core; every task on one core gives the fewest loads
        any placement can make. ``O(B log B)`` for ``B`` requests.
        """
        keep = self.write.copy()
        reads = np.flatnonzero(~self.write)
        if reads.size:
            core = np.asarray(core_of_task, dtype=np.int64)[self.task[reads]]
            pairs = np.stack((core, self.piece[reads]), axis=1)
            _, first = np.unique(pairs, axis=0, return_index=True)
            keep[reads[first]] = True
        return keep


def _shared_piece_error(base: BaselineMemory) -> str | None:
    """Why ``base``'s pieces are inconsistent (a write sharing a piece, one piece read
    with two sizes), or None. ``O(B log B)``."""
    if not base.requests:
        return None
    order = np.lexsort((base.nbytes, base.piece))
    piece, nbytes, write = base.piece[order], base.nbytes[order], base.write[order]
    same = piece[1:] == piece[:-1]
    clash = np.flatnonzero(same & ((nbytes[1:] != nbytes[:-1]) | write[1:] | write[:-1]))
    if not clash.size:
        return None
    i, j = int(order[clash[0]]), int(order[clash[0] + 1])
    return (
        f"baseline requests {i} and {j} share piece {int(base.piece[i])} but are not two "
        f"reads of one size ({int(base.nbytes[i])} and {int(base.nbytes[j])} bytes)"
    )


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
    nominal_cost:
        Per-task nominal priority for partitioning and packing (default ``cost``).
    edge_kind:
        Per edge, `PLAIN`, `DIRECT_RECEIVE` or `SCALAR_PROJECTION` (default all
        `PLAIN`).
    output_bytes:
        Per task, bytes of its output fragment (its publication); -1 for a task
        whose output size is unknown (a given-cost TASK) and None when no size is
        known (hand-made graphs): those are estimated from consumer reads.
    payload_bits:
        Per task, bits per element of its output (default 8: byte payloads).
    operation_types:
        Operator type of each operation (``Softmax``, ``OP_CONV``...; default "").
    baseline:
        Global-memory requests of function inputs, constants and outputs.
    work:
        The target-neutral work description each cost was priced from (lowering
        sets it; empty for hand-built graphs). Instruction emission
        (`raptor_cp.emit`) turns it into instructions.
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
    nominal_cost: np.ndarray | None = None
    edge_kind: np.ndarray | None = None
    output_bytes: np.ndarray | None = None
    payload_bits: np.ndarray | None = None
    operation_types: tuple[str, ...] = ()
    baseline: BaselineMemory = field(default_factory=BaselineMemory.empty)
    work: tuple[Work, ...] = ()

    def __post_init__(self) -> None:
        for attr in (
            "cost", "edge_src", "edge_dst", "edge_bytes", "weight_size", "core_cost", "output_bytes"
        ):  # fmt: skip
            value = getattr(self, attr)
            if value is not None:
                self._set_ints(attr, value)
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
        nominal = self.cost if self.nominal_cost is None else self.nominal_cost
        self._set_ints("nominal_cost", nominal)
        kinds = np.zeros(self.edge_src.shape) if self.edge_kind is None else self.edge_kind
        object.__setattr__(self, "edge_kind", _int_array(kinds))
        bits = np.full(n, 8) if self.payload_bits is None else self.payload_bits
        self._set_ints("payload_bits", bits)
        if not self.operation_types:
            object.__setattr__(self, "operation_types", tuple("" for _ in self.operation_names))

    def _set_ints(self, attr: str, value: object) -> None:
        """Store ``value`` as the read-only int64 array ``attr`` (beyond int64: a named error)."""
        try:
            object.__setattr__(self, attr, _int_array(value))
        except OverflowError:
            raise InvalidInstanceError(
                f"{self.name}: a value of {attr} does not fit a 64-bit integer"
            ) from None

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

    @property
    def edge_direct(self) -> np.ndarray:
        """Mask of the edges received directly into assembly storage."""
        return self.edge_kind == DIRECT_RECEIVE

    def operation_type(self, task: int) -> str:
        """The operator type of ``task``'s operation."""
        return self.operation_types[int(self.operation[task])]

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

    def asap_finish(self, cost: np.ndarray | None = None) -> np.ndarray:
        """Finish of every task in the as-soon-as-possible schedule on unlimited cores.

        Each task starts when its last predecessor finishes (transfers free) and
        runs ``cost`` ns (default `cost`); the largest finish is the critical
        path. One sweep in topological order, ``O(T + E)``.
        """
        cost_of = (self.cost if cost is None else cost).tolist()
        indptr, order = self._pred_csr
        starts, edges, src = indptr.tolist(), order.tolist(), self.edge_src.tolist()
        finish = [0] * self.num_tasks
        for t in self.topological_order.tolist():
            ready = 0
            for e in edges[starts[t] : starts[t + 1]]:
                if finish[src[e]] > ready:
                    ready = finish[src[e]]
            finish[t] = ready + cost_of[t]
        return np.asarray(finish, dtype=np.int64)

    # -- checks ----------------------------------------------------------------

    def validate(self, capacities: list[int] | None = None) -> None:
        """Reject structural errors with a message naming the culprit.

        Checks dangling edges, negative costs and bytes, cycles, the task-count and
        totals limits of `raptor_cp.limits` and, when per-core ``capacities`` are
        given, tasks whose weights fit on no core.
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
        for attr in ("operation", "lane", "nominal_cost", "payload_bits"):
            if getattr(self, attr).shape != (n,):
                raise InvalidInstanceError(f"{self.name}: {attr} array does not have {n} entries")
        if self.output_bytes is not None and self.output_bytes.shape != (n,):
            raise InvalidInstanceError(f"{self.name}: output_bytes array does not have {n} entries")
        if self.edge_kind.shape != self.edge_src.shape:
            raise InvalidInstanceError(f"{self.name}: edge_kind does not have one entry per edge")
        bad = np.flatnonzero((self.edge_kind < PLAIN) | (self.edge_kind > SCALAR_PROJECTION))
        if bad.size:
            raise InvalidInstanceError(
                f"{self.name}: edge {int(bad[0])} has unknown kind {int(self.edge_kind[bad[0]])}"
            )
        if len(self.operation_types) != len(self.operation_names):
            raise InvalidInstanceError(
                f"{self.name}: {len(self.operation_types)} operation types for "
                f"{len(self.operation_names)} operations"
            )
        base = self.baseline
        if not base.task.shape == base.nbytes.shape == base.write.shape == base.piece.shape:
            raise InvalidInstanceError(f"{self.name}: baseline request arrays differ in length")
        bad = np.flatnonzero((base.task < 0) | (base.task >= n) | (base.nbytes < 0))
        if bad.size:
            i = int(bad[0])
            raise InvalidInstanceError(
                f"{self.name}: baseline request {i} has task {int(base.task[i])} and "
                f"{int(base.nbytes[i])} bytes (tasks are 0..{n - 1}, bytes >= 0)"
            )
        shared = _shared_piece_error(base)
        if shared:
            raise InvalidInstanceError(f"{self.name}: {shared}")
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
        check_tasks(n, self.name)
        check_total(self.edge_bytes.tolist(), "edge bytes", self.name)
        check_total(self.weight_size.tolist(), "weight slots", self.name)
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
