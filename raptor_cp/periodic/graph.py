"""`PeriodicGraph`: the indexed dependency graph of a repeating (pipelined) execution.

Node ``x`` stands for one event of every generation ``k``; edge ``e`` says
``t(v[e], k) >= t(u[e], k - d[e]) + w[e]``: the event ``v`` of generation ``k``
waits ``w[e]`` (ns, or any integer weight) after event ``u`` of the generation
``d[e] >= 0`` iterations earlier. Distance-zero edges order events within one
generation; distance-positive edges are recurrences (a core's completion
releasing its next entry, a buffer slot freed one generation later).

Storage is ``O(V + E)``: four parallel int64 edge arrays, an optional core label
per node and link label per edge, and an out-edge CSR index built once. The
graph is never unrolled over generations and no dense matrix is formed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from raptor_cp.errors import InvalidInstanceError
from raptor_cp.toposort import topological_order

NO_LABEL = -1
"""The core of a node (or link of an edge) that is not placed on one."""


def _int_array(values: object, name: str, owner: str) -> np.ndarray:
    array = np.asarray(values)
    if array.size == 0:
        array = array.astype(np.int64)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise InvalidInstanceError(f"{owner}: {name} must be a 1-D integer array")
    array = array.astype(np.int64)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class PeriodicGraph:
    """Events ``0..num_nodes-1`` and edges ``u -> v`` with delay ``w`` and distance ``d``.

    Parameters
    ----------
    num_nodes:
        Number of events ``V``.
    u, v:
        Edge sources and targets (``0 <= u, v < V``; self-loops and parallel
        edges allowed).
    w:
        Edge delays, integer ns (any sign: a negative delay is a lead).
    d:
        Iteration distances, ``>= 0``.
    core:
        Optional per-node core id (``-1``: none), reported by cycle witnesses.
    link:
        Optional per-edge link id (``-1``: none), reported by cycle witnesses.
    name:
        Used in error messages.

    Raises `InvalidInstanceError` on creation when an array has the wrong
    length or type, an endpoint is out of range or a distance is negative.
    """

    num_nodes: int
    u: np.ndarray
    v: np.ndarray
    w: np.ndarray
    d: np.ndarray
    core: np.ndarray | None = None
    link: np.ndarray | None = None
    name: str = "periodic graph"
    _out_start: np.ndarray = field(init=False, repr=False)
    _out_edges: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.num_nodes < 0:
            raise InvalidInstanceError(f"{self.name}: num_nodes is {self.num_nodes}, not >= 0")
        for attr in ("u", "v", "w", "d"):
            object.__setattr__(self, attr, _int_array(getattr(self, attr), attr, self.name))
        if not self.u.shape == self.v.shape == self.w.shape == self.d.shape:
            raise InvalidInstanceError(f"{self.name}: edge arrays u, v, w, d differ in length")
        for attr, size in (("core", self.num_nodes), ("link", self.num_edges)):
            value = getattr(self, attr)
            array = np.full(size, NO_LABEL) if value is None else value
            array = _int_array(array, attr, self.name)
            if array.shape != (size,) or (array.size and array.min() < NO_LABEL):
                raise InvalidInstanceError(
                    f"{self.name}: {attr} must hold {size} ids >= {NO_LABEL}"
                )
            object.__setattr__(self, attr, array)
        for end, array in (("source", self.u), ("target", self.v)):
            bad = np.flatnonzero((array < 0) | (array >= self.num_nodes))
            if bad.size:
                e = int(bad[0])
                raise InvalidInstanceError(
                    f"{self.name}: edge {e} has {end} {int(array[e])} "
                    f"(nodes are 0..{self.num_nodes - 1})"
                )
        bad = np.flatnonzero(self.d < 0)
        if bad.size:
            e = int(bad[0])
            raise InvalidInstanceError(
                f"{self.name}: edge {e} has iteration distance {int(self.d[e])}, not >= 0"
            )
        order = np.argsort(self.u, kind="stable")
        start = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.u, minlength=self.num_nodes), out=start[1:])
        for attr, array in (("_out_start", start), ("_out_edges", order.astype(np.int64))):
            array.setflags(write=False)
            object.__setattr__(self, attr, array)

    @classmethod
    def from_edges(
        cls, num_nodes: int, edges: Iterable[tuple[int, int, int, int]], name: str = "graph"
    ) -> PeriodicGraph:
        """Build a graph from ``(u, v, w, d)`` tuples; edge ids follow their order."""
        rows = np.asarray(list(edges), dtype=np.int64).reshape(-1, 4)
        return cls(num_nodes, rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], name=name)

    @property
    def num_edges(self) -> int:
        return int(self.u.shape[0])

    def out_edges(self, node: int) -> np.ndarray:
        """Edge ids leaving ``node``, ascending."""
        return self._out_edges[self._out_start[node] : self._out_start[node + 1]]

    @cached_property
    def recurrent_edges(self) -> np.ndarray:
        """Boolean mask of the edges that lie on some cycle (inside a strong component).

        Only these edges can matter for a cycle ratio. Strong components from
        `scipy.sparse.csgraph.connected_components` (Pearce's variant of Tarjan's
        algorithm), ``O(V + E)``.
        """
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        if self.num_edges == 0:
            return np.zeros(0, dtype=bool)
        adjacency = csr_matrix(
            (np.ones(self.num_edges, dtype=np.int8), (self.u, self.v)),
            shape=(self.num_nodes, self.num_nodes),
        )
        _, label = connected_components(adjacency, directed=True, connection="strong")
        mask = label[self.u] == label[self.v]
        mask.setflags(write=False)
        return mask

    def zero_distance_cycle(self) -> tuple[int, ...] | None:
        """Edge ids of a cycle made only of distance-0 edges, or None when there is none.

        Such a cycle is a deadlock: each of its events waits for the next one
        of the same generation. Deterministic: the cycle through the smallest
        edge id on any zero-distance cycle, closed by a breadth-first shortest
        path (out-edges in ascending id order).
        """
        zero = self.recurrent_edges & (self.d == 0)
        if not zero.any():
            return None
        sub = PeriodicGraph(
            self.num_nodes, self.u[zero], self.v[zero], self.w[zero], self.d[zero], name=self.name
        )
        ids = np.flatnonzero(zero)
        on_cycle = np.flatnonzero(sub.recurrent_edges)
        if on_cycle.size == 0:
            return None
        first = int(on_cycle[0])
        start, goal = int(sub.v[first]), int(sub.u[first])
        reached_by = {start: -1}
        queue = deque([start])
        while goal not in reached_by:
            node = queue.popleft()
            for edge in sub.out_edges(node).tolist():
                if int(sub.v[edge]) not in reached_by:
                    reached_by[int(sub.v[edge])] = edge
                    queue.append(int(sub.v[edge]))
        path = [first]
        node = goal
        while node != start:
            path.append(reached_by[node])
            node = int(sub.u[reached_by[node]])
        cycle = [first, *reversed(path[1:])]
        return tuple(int(ids[edge]) for edge in cycle)

    def sweep_order(self, nodes: np.ndarray, edges: np.ndarray) -> list[int]:
        """``nodes`` in a topological order of the distance-0 edges among ``edges``.

        Smallest ready id first (deterministic). The caller has ruled out
        zero-distance cycles (`zero_distance_cycle`).
        """
        zero = edges[self.d[edges] == 0]
        ids = np.unique(nodes)
        local = topological_order(
            ids.shape[0], np.searchsorted(ids, self.u[zero]), np.searchsorted(ids, self.v[zero])
        )
        return ids[local].tolist()


def canonical_cycle(edges: Iterable[int]) -> tuple[int, ...]:
    """A cycle's edge ids rotated to start at its smallest id (one name per cycle)."""
    cycle = list(edges)
    first = cycle.index(min(cycle))
    return tuple(cycle[first:] + cycle[:first])
