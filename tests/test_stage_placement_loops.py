"""The stage placer's compiled loops against their rules restated plainly, and the
transfer terms they price with against `transfer_ns`.

`raptor_cp.pipeline._stage_placement` runs `StagePlacer.greedy`, `.replicated`
and `.timing` (rules: raptor_cp/pipeline/layout.py's module docstring and the
methods'). The functions below restate those rules over dicts and lists, the
way they read, and random stages on a mesh whose transfer price depends on the
pair check that both give the same placements and timings.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from raptor_cp.errors import CapabilityUnavailableError, ScheduleViolationError
from raptor_cp.graph import DIRECT_RECEIVE, PLAIN, ComputeGraph
from raptor_cp.heuristics.replication import plan_copies
from raptor_cp.pipeline import _stage_placement
from raptor_cp.pipeline.layout import RegionPrices, StageArrays, StagePlacer
from raptor_cp.targets.base import TransferTerms
from raptor_cp.targets.generic import GenericTarget
from raptor_cp.targets.registry import TARGET_PRESETS, resolve_target


@dataclass(frozen=True)
class Mesh(GenericTarget):
    """A 4 x 4 mesh: a handshake of 3 ns per hop plus 2 ns per hop per 8-byte flit,
    plus 5 ns of endpoint memory unless the receive is direct; ``slots`` a core."""

    slots: int = 12

    def hops(self, src: int, dst: int) -> int:
        return abs(src // 4 - dst // 4) + abs(src % 4 - dst % 4)

    def capacity(self, core: int) -> int:
        return self.slots

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        if src == dst:
            return 0
        return (
            3 * self.hops(src, dst) + -(-nbytes // 8) * 2 * self.hops(src, dst) + 5 * (not direct)
        )

    def transfer_terms(self, cores: Sequence[int]) -> TransferTerms:
        hops = np.array([[self.hops(a, b) for b in cores] for a in cores], dtype=np.int64)
        return TransferTerms(3 * hops, 2 * hops, 8, lambda nbytes, direct: 5 * (not direct))


def random_stage(seed: int) -> ComputeGraph:
    """A random DAG of 10-40 tasks, some sharing weights, numbered in topological order."""
    rng = random.Random(seed)
    n = rng.randint(10, 40)
    weights = rng.randint(1, 6)
    src, dst = [], []
    for v in range(1, n):
        for u in rng.sample(range(v), min(v, rng.randint(0, 3))):
            src.append(u)
            dst.append(v)
    task_weights = tuple(
        tuple(rng.sample(range(weights), rng.randint(0, min(2, weights))))
        if rng.random() < 0.8
        else ()
        for _ in range(n)
    )
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.array([rng.randint(1, 60) for _ in range(n)], dtype=np.int64),
        edge_src=np.array(src, dtype=np.int64),
        edge_dst=np.array(dst, dtype=np.int64),
        edge_bytes=np.array([rng.choice([1, 8, 20, 64]) for _ in src], dtype=np.int64),
        edge_kind=np.array(
            [DIRECT_RECEIVE if rng.random() < 0.3 else PLAIN for _ in src], dtype=np.int8
        ),
        task_weights=task_weights,
        weight_size=np.array([rng.randint(1, 5) for _ in range(weights)], dtype=np.int64),
        name=f"random{seed}",
    )


def _predecessors(graph: ComputeGraph) -> dict[int, list[tuple[int, int, bool]]]:
    """Per task, its (producer, bytes, direct) edges."""
    preds: dict[int, list[tuple[int, int, bool]]] = {t: [] for t in range(graph.num_tasks)}
    for e in range(graph.num_edges):
        preds[int(graph.edge_dst[e])].append(
            (int(graph.edge_src[e]), int(graph.edge_bytes[e]), bool(graph.edge_direct[e]))
        )
    return preds


def plain_greedy(graph: ComputeGraph, target: Mesh, region: Sequence[int]) -> list[int] | None:
    """Each task, in order, on the core where its weights fit and its demand after
    placing it (its compute plus its incoming transfers) is least; then fewest new
    weight slots; then the earliest region core. A producer's core is charged the
    transfer too."""
    preds = _predecessors(graph)
    resident: dict[int, set[int]] = {p: set() for p in region}
    used = dict.fromkeys(region, 0)
    demand = dict.fromkeys(region, 0)
    placed: dict[int, int] = {}
    for t in range(graph.num_tasks):
        best: tuple[int, int, int] | None = None
        for i, p in enumerate(region):
            new = sum(int(graph.weight_size[w]) for w in set(graph.task_weights[t]) - resident[p])
            if used[p] + new > target.capacity(p):
                continue
            incident = sum(target.transfer_ns(placed[u], p, b, d) for u, b, d in preds[t])
            key = (demand[p] + int(graph.cost[t]) + incident, new, i)
            best = key if best is None or key < best else best
        if best is None:
            return None
        p = region[best[2]]
        placed[t] = p
        resident[p] |= set(graph.task_weights[t])
        used[p] += best[1]
        for u, b, d in preds[t]:
            demand[p] += target.transfer_ns(placed[u], p, b, d)
            demand[placed[u]] += target.transfer_ns(placed[u], p, b, d)
        demand[p] += int(graph.cost[t])
    return [region.index(placed[t]) for t in range(graph.num_tasks)]


def plain_replicated(
    graph: ComputeGraph, target: Mesh, region: Sequence[int], holders: dict[int, set[int]]
) -> list[int] | None:
    """Each task, in order, on a core holding all its weights (any core without
    weights) where it finishes earliest; then least demand with its incoming
    transfers; then the earliest region core."""
    preds = _predecessors(graph)
    free = dict.fromkeys(region, 0)
    demand = dict.fromkeys(region, 0)
    placed: dict[int, int] = {}
    finish: dict[int, int] = {}
    for t in range(graph.num_tasks):
        best: tuple[int, int, int] | None = None
        for i, p in enumerate(region):
            if any(p not in holders[w] for w in graph.task_weights[t]):
                continue
            prices = [(u, target.transfer_ns(placed[u], p, b, d)) for u, b, d in preds[t]]
            ready = max([finish[u] + ns for u, ns in prices], default=0)
            end = max(ready, free[p]) + int(graph.cost[t])
            key = (end, demand[p] + sum(ns for _, ns in prices), i)
            best = key if best is None or key < best else best
        if best is None:
            return None
        p = region[best[2]]
        placed[t] = p
        finish[t] = free[p] = best[0]
        demand[p] = best[1] + int(graph.cost[t])
        for u, b, d in preds[t]:
            demand[placed[u]] += target.transfer_ns(placed[u], p, b, d)
    return [region.index(placed[t]) for t in range(graph.num_tasks)]


def plain_timing(
    graph: ComputeGraph, target: Mesh, cores: Sequence[int]
) -> tuple[dict[int, int], list[int], list[int], int, int]:
    """List schedule with the placement fixed: the available task of least
    (data-ready time, id) starts when its core is free. Returns per-core demand,
    starts, the order taken, span and the longest core window."""
    preds = _predecessors(graph)
    demand: dict[int, int] = {}
    for t in range(graph.num_tasks):
        demand[cores[t]] = demand.get(cores[t], 0) + int(graph.cost[t])
    for t in range(graph.num_tasks):
        for u, b, d in preds[t]:
            ns = target.transfer_ns(cores[u], cores[t], b, d)
            demand[cores[u]] += ns
            demand[cores[t]] += ns
    start = [0] * graph.num_tasks
    finish: dict[int, int] = {}
    free: dict[int, int] = {}
    opened: dict[int, int] = {}
    order: list[int] = []
    available = [(0, t) for t in range(graph.num_tasks) if not preds[t]]
    while available:
        ready, t = heapq.heappop(available)
        p = cores[t]
        start[t] = max(ready, free.get(p, 0))
        opened.setdefault(p, start[t])
        finish[t] = free[p] = start[t] + int(graph.cost[t])
        order.append(t)
        for v in range(t + 1, graph.num_tasks):
            producers = [u for u, _, _ in preds[v]]
            if t in producers and all(u in finish for u in producers):
                arrival = max(
                    finish[u] + target.transfer_ns(cores[u], cores[v], b, d) for u, b, d in preds[v]
                )
                heapq.heappush(available, (arrival, v))
    window = max(free[p] - opened[p] for p in opened)
    return demand, start, order, max(finish.values()), window


def random_case(seed: int) -> tuple[ComputeGraph, Mesh, list[int]]:
    """A random stage, a mesh of 4, 8 or 12 slots a core and a region of 5 of its cores."""
    rng = random.Random(seed)
    return random_stage(seed), Mesh(16, slots=(4, 8, 12)[seed % 3]), rng.sample(range(16), 5)


def _arrays(
    graph: ComputeGraph, target: Mesh, region: Sequence[int]
) -> tuple[StagePlacer, StageArrays, RegionPrices]:
    placer = StagePlacer(graph, target)
    tasks = list(range(graph.num_tasks))
    member = np.ones(graph.num_tasks, dtype=bool)
    stage = placer.stage(tasks, placer.stage_edges(tasks, member))
    return placer, stage, placer.prices(stage, region)


@pytest.mark.parametrize("seed", range(25))
def test_compiled_loops_follow_their_rules(seed: int) -> None:
    graph, target, region = random_case(seed)
    placer, stage, prices = _arrays(graph, target, region)

    greedy = placer.greedy(stage, prices)
    expected = plain_greedy(graph, target, region)
    assert (None if greedy is None else greedy.tolist()) == expected

    capacity = np.array([target.capacity(p) for p in region], dtype=np.int64)
    plan = plan_copies(graph, range(graph.num_tasks), capacity)
    replicated = placer.replicated(stage, prices)
    if plan is None:
        assert replicated is None
    else:
        holders = {
            w: {region[i] for i in np.flatnonzero(plan.reserved[w])}
            for w in range(graph.num_weights)
        }
        assert replicated is not None
        assert replicated.tolist() == plain_replicated(graph, target, region, holders)

    for position in (greedy, replicated, np.arange(graph.num_tasks) % len(region)):
        if position is None:
            continue
        cores = [region[i] for i in position.tolist()]
        timing = placer.timing(stage, prices, position)
        demand, start, order, span, window = plain_timing(graph, target, cores)
        assert timing.core_demand == demand
        assert [timing.start_ns[t] for t in range(graph.num_tasks)] == start
        assert list(timing.sequence) == order
        assert (timing.span_ns, timing.window_ns) == (span, window)


def test_the_stages_vary_what_the_rules_decide() -> None:
    # The comparison above means something only if ties, capacity failures and
    # cross-core transfers all occur among the random stages.
    outcomes = set()
    for seed in range(25):
        graph, target, region = random_case(seed)
        placer, stage, prices = _arrays(graph, target, region)
        greedy = placer.greedy(stage, prices)
        outcomes.add("greedy fails" if greedy is None else "greedy places")
        if greedy is not None and len(set(greedy.tolist())) > 1:
            outcomes.add("spread")
        replicated = placer.replicated(stage, prices)
        outcomes.add("no replication plan" if replicated is None else "replicated")
    assert outcomes == {
        "greedy fails",
        "greedy places",
        "spread",
        "no replication plan",
        "replicated",
    }


@pytest.mark.parametrize(
    "spec", [preset.name for preset in TARGET_PRESETS] + ["generic:12:3", "generic:5"]
)
def test_transfer_terms_price_like_transfer_ns(spec: str) -> None:
    target = resolve_target(spec)
    rng = random.Random(spec)
    cores = rng.sample(range(target.cores), min(target.cores, 20))
    terms = target.transfer_terms(cores)
    for _ in range(300):
        i, j = rng.randrange(len(cores)), rng.randrange(len(cores))
        nbytes, direct = rng.choice([0, 1, 7, 8, 9, 64, 1000, 65_537]), rng.random() < 0.5
        expected = target.transfer_ns(cores[i], cores[j], nbytes, direct)
        if i == j:
            assert expected == 0
            continue
        pair = 0
        if terms.fixed is not None:
            assert terms.per_unit is not None
            pair = int(terms.fixed[i, j]) + terms.units(nbytes) * int(terms.per_unit[i, j])
        assert pair + terms.constant(nbytes, direct) == expected


def test_a_target_that_reprices_transfers_must_give_its_terms() -> None:
    @dataclass(frozen=True)
    class Repriced(GenericTarget):
        def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
            return 2 * nbytes

    with pytest.raises(CapabilityUnavailableError, match="Repriced reprices transfer_ns"):
        Repriced(4).transfer_terms([0, 1])


def test_a_stage_edge_must_stay_in_the_stage() -> None:
    graph = random_stage(3)
    placer = StagePlacer(graph, Mesh(16))
    consumer = int(graph.edge_dst[0])
    with pytest.raises(
        ScheduleViolationError, match=r"reaches task \d+, which is not in the stage"
    ):
        placer.stage([consumer], [0])


def test_the_loops_refuse_inconsistent_arrays() -> None:
    graph = random_stage(3)
    tasks = range(graph.num_tasks)
    _, stage, prices = _arrays(graph, Mesh(16), [0, 1, 2, 3])
    position = np.zeros(len(tasks), dtype=np.int64)
    backwards = stage.pred_source.copy()
    backwards[0] = len(tasks) - 1
    with pytest.raises(ValueError, match="source is not an earlier task"):
        _stage_placement.greedy(
            4, stage.cost, stage.pred_start, backwards, prices.units, prices.constant,
            prices.fixed, prices.per_unit, stage.weight_start, stage.weight,
            np.ones(graph.num_weights, dtype=np.int64), np.full(4, 99, dtype=np.int64), position,
        )  # fmt: skip
    with pytest.raises(ValueError, match="array lengths disagree"):
        _stage_placement.timing(
            5, *prices.loop_arguments(stage)[1:], position, *(np.zeros(5, dtype=np.int64),) * 2,
            position.copy(), position.copy(),
        )  # fmt: skip
    with pytest.raises(ValueError, match="a core is outside the region"):
        _stage_placement.timing(
            *prices.loop_arguments(stage), position + 9, *(np.zeros(4, dtype=np.int64),) * 2,
            position.copy(), position.copy(),
        )  # fmt: skip
    with pytest.raises(TypeError, match="cost must be a contiguous int64 array"):
        _stage_placement.timing(
            4, stage.cost.astype(np.int32), *prices.loop_arguments(stage)[2:], position,
            *(np.zeros(4, dtype=np.int64),) * 2, position.copy(), position.copy(),
        )  # fmt: skip
