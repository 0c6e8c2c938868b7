"""Experiment: software pipelining inside stages (overlapping generations), priced.

Usage::

    python benchmarks/experiments/overlap.py MODEL TARGET CUT_SETS FIRST:STOP:CORES ...

The stages are built as `benchmarks/bench_stage_split.py` builds them.
``CUT_SETS`` is a comma-separated list of cut sets; a cut set is a
``+``-separated list of ``STAGE:CUTS``, ``CUTS`` being ``none``, ``gA/B/...``
(a task of operation group ``A`` or later runs one generation behind, of ``B``
or later two, ...) or ``tA/B/...`` (the same by list start, at fractions of
the stage's span), with an ``r`` at the end to relist (below).

One pass of a lagged core's program runs its lag-0 tasks of generation ``k``
beside its lag-1 tasks of ``k - 1``, and so on. Each core's tasks are ordered by
their list start less the start of their lag's first task, so the lags
overlap (with ``r``: by a list schedule of the whole pass on the placement,
tasks by decreasing bottom level, a transfer into a later lag being no
dependency); the rendezvous are placed by the product's simulation
(`raptor_cp.periodic.rendezvous_order`), with one change: a transfer into a
later lag carries an earlier pass's payload, so it becomes ready when its
producer's core reaches the consumer's place in its order (a zero-ns marker),
not when its producer finishes. A lagged core keeps its release-tree entry
first, each load and READY wait before its task's first unit, each store and
signal after its task's last unit, its restart waits last.

Per cut set the script prints the cut stages' own recurrences
(`raptor_cp.pipeline.stage_recurrence`) and the plan's queue interval as
selection prices a candidate (`queue_schedule_cost`), with both tie orders'
intervals, the memory controller's service, and where the plan's critical
recurrence spends its delay. ``STAGE:none`` reproduces the product's programs
(a check of the reordering). Timing only: nothing is emitted (a first pass
would need a prologue, a sender a buffer per lag for payloads not sent yet,
and a lagged task's loads and stores are timed as if of the pass's own
generation). It answers "would overlapping generations inside a stage lift
its coupling?" (docs/benchmarks.md, "Thirteenth pass").
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from types import SimpleNamespace

import numpy as np
from split import hand_split

from raptor_cp.periodic.arrays import int64_array
from raptor_cp.periodic.rendezvous_order import (
    QUANTUM_NS,
    Action,
    Entry,
    UnitCuts,
    _Simulation,
    transfer_busy_ns,
)
from raptor_cp.periodic.schedule_cost import queue_schedule_cost
from raptor_cp.periodic.steps import Compute, Recv, Send, Signal, Step, Store
from raptor_cp.pipeline.realize import PipelineRealization
from raptor_cp.pipeline.stage_recurrence import own_recurrence


class _LaggedSimulation(_Simulation):
    """The product's rendezvous simulation over ``orders`` (per core, task ids, and
    ``n + i`` for the zero-ns marker of ``early[i]``'s transfer), where transfer
    ``early[i]`` is released by its marker instead of by its producer."""

    def __init__(self, graph, timing, orders, core, key, transfers, early, cuts) -> None:
        n = graph.num_tasks
        schedule = SimpleNamespace(core_order=orders, core=core, num_cores=len(orders))

        def units(task: int, c: int) -> dict[tuple[int, int], int]:
            return cuts(task, c) if task < n else {(0, 0): 0}

        super().__init__(graph, timing, schedule, key, transfers, units)
        src = graph.edge_src[self.edge].copy()
        position = {e: i for i, e in enumerate(transfers)}
        for i, e in enumerate(early):
            src[position[e]] = n + i
        total = n + len(early)
        self.missing = int64_array(np.bincount(self.dst_task, minlength=total))
        by_source = np.argsort(src, kind="stable")
        self.out_transfer = int64_array(by_source)
        self.out_start = int64_array(np.searchsorted(src[by_source], np.arange(total + 1)))


def relisted(split, stage: int, lag: np.ndarray) -> np.ndarray:
    """New list starts for the stage's tasks on their cores, lagging and leading tasks
    scheduled together (HEFT's rule with the cores fixed: tasks by decreasing bottom
    level, each at the earliest time its core is free and its inputs have arrived; a
    transfer from a leading to a lagging task is no dependency)."""
    graph, schedule = split.problem.graph, split.plan.schedule
    n = graph.num_tasks
    core = schedule.core
    mine = split.plan.task_stage(n) == stage
    src, dst = graph.edge_src, graph.edge_dst
    live = mine[src] & mine[dst] & ~(lag[dst] > lag[src])
    duration = np.array([graph.cost_on(t, int(core[t])) if mine[t] else 0 for t in range(n)])
    delay = np.zeros(graph.num_edges, dtype=np.int64)
    for e in np.flatnonzero(live & (core[src] != core[dst])).tolist():
        u, v = int(src[e]), int(dst[e])
        nbytes = int(graph.edge_bytes[e])
        delay[e] = transfer_busy_ns(split.timing, int(core[u]), int(core[v]), nbytes)[1]
    topo = graph.topological_order
    rank = np.empty(n, dtype=np.int64)
    rank[topo] = np.arange(n)
    out: list[list[int]] = [[] for _ in range(n)]
    into: list[list[int]] = [[] for _ in range(n)]
    for e in np.flatnonzero(live).tolist():
        out[int(src[e])].append(e)
        into[int(dst[e])].append(e)
    bottom = np.zeros(n, dtype=np.int64)
    for t in topo[::-1].tolist():
        if mine[t]:
            bottom[t] = duration[t] + max((delay[e] + bottom[dst[e]] for e in out[t]), default=0)
    order = sorted(np.flatnonzero(mine).tolist(), key=lambda t: (-bottom[t], rank[t]))
    free = np.zeros(schedule.num_cores, dtype=np.int64)
    start = np.zeros(n, dtype=np.int64)
    for t in order:
        ready = max((start[src[e]] + duration[src[e]] + delay[e] for e in into[t]), default=0)
        start[t] = max(ready, free[core[t]])
        free[core[t]] = start[t] + duration[t]
    return start


def stage_entries(split, stage: int, lag: np.ndarray, relist: bool) -> list[list[Entry]]:
    """The simulated entries of the stage's cores with ``lag`` (per task: generations behind);
    ``relist``: order each core by `relisted`, else by the list schedule's starts with the
    lagging tasks shifted back."""
    graph, schedule = split.problem.graph, split.plan.schedule
    n = graph.num_tasks
    core = schedule.core
    start = np.asarray(schedule.start_ns, dtype=np.int64)
    mine = split.plan.task_stage(n) == stage
    if relist:
        key = relisted(split, stage, lag)
    else:
        shift = np.zeros(int(lag.max()) + 1, dtype=np.int64)
        for level in range(1, shift.size):
            at = start[mine & (lag == level)]
            shift[level] = at.min() - start[mine].min() if at.size else shift[level - 1]
        key = start - shift[lag]
    src, dst = graph.edge_src, graph.edge_dst
    inside = mine[src] & mine[dst] & (core[src] != core[dst])
    transfers = np.flatnonzero(inside).tolist()
    early = [e for e in transfers if lag[dst[e]] > lag[src[e]]]
    markers: list[list[tuple[int, int, int]]] = [[] for _ in range(schedule.num_cores)]
    for i, e in enumerate(early):
        markers[int(core[src[e]])].append((int(key[dst[e]]), 0, n + i))
    orders = []
    for c, order in enumerate(schedule.core_order):
        if split.core_stage[c] != stage:
            orders.append([])
            continue
        items = [(int(key[t]), 1, t) for t in order] + markers[c]
        orders.append([t for *_, t in sorted(items)])
    cuts = UnitCuts(graph, split.problem.target, QUANTUM_NS)
    simulated = _LaggedSimulation(graph, split.timing, orders, core, key, transfers, early, cuts)
    return simulated.run().entries()


def reordered(split, c: int, entries: list[Entry]) -> list[Step]:
    """Core ``c``'s whole program (loads, stores, synchronization) with its compute and
    transfers in the order of ``entries``: the steps before its first compute run first
    (the release-tree entry), a step before a later compute run before that run's first
    unit, a store or signal after its task's last unit, the steps after the last compute
    run at the end."""
    graph = split.problem.graph
    n = graph.num_tasks
    product = split.realization
    before: dict[tuple[int, tuple[int, int]], list[Step]] = {}
    after: dict[int, list[Step]] = defaultdict(list)
    pending: list[Step] = []
    head: list[Step] | None = None
    for step, who, parts in zip(product.cores[c], product.tasks[c], product.parts[c], strict=True):
        if isinstance(step, Compute):
            if head is None:
                head, pending = pending, []
            elif pending:
                before[who[0], parts[0]] = pending
                pending = []
        elif isinstance(step, (Send, Recv)):
            continue
        elif isinstance(step, (Store, Signal)) and who:
            after[who[0]].append(step)
        else:
            pending.append(step)
    left = Counter(e.task for e in entries if e.action == Action.TASK)
    program: list[Step] = list(head or [])
    for entry in entries:
        if entry.action == Action.TASK:
            if entry.task >= n:
                continue
            program.extend(before.pop((entry.task, entry.part), []))
            if entry.ns:
                if program and isinstance(program[-1], Compute):
                    program[-1] = Compute(program[-1].ns + entry.ns)
                else:
                    program.append(Compute(entry.ns))
            left[entry.task] -= 1
            if not left[entry.task]:
                program.extend(after.pop(entry.task, []))
        else:
            nbytes = int(graph.edge_bytes[entry.edge])
            program.append((Send if entry.action == Action.SEND else Recv)(entry.peer, nbytes))
    assert not before and not after, f"core {c}: steps left unplaced"
    return program + pending


def main(argv: list[str]) -> None:
    model, target, cut_sets, *stage_specs = argv
    split = hand_split(model, target, stage_specs)
    graph, timing, costs = split.problem.graph, split.timing, split.costs
    n = graph.num_tasks
    group = costs.groups.group_of_task(n)
    task_stage = split.plan.task_stage(n)
    start = np.asarray(split.plan.schedule.start_ns, dtype=np.int64)
    print(f"python benchmarks/experiments/overlap.py {' '.join(argv)}")

    def lag_of(stage: int, spec: str) -> np.ndarray:
        in_stage = task_stage == stage
        lag = np.zeros(n, dtype=np.int64)
        if spec == "none":
            return lag
        first, last = int(start[in_stage].min()), int(start[in_stage].max())
        for point in spec[1:].split("/"):
            if spec.startswith("g"):
                lag += in_stage & (group >= int(point))
            else:
                lag += in_stage & (start >= first + float(point) * (last - first))
        return lag

    def report(label: str, programs: list[list[Step]], stages: list[int]) -> None:
        tasks = [[(0, 0)] * len(p) for p in programs]
        realization = PipelineRealization(programs, tasks, [[()] * len(p) for p in programs])
        own = []
        for s in stages:
            ratio, crossed, _ = own_recurrence(realization, split.core_stage == s, timing)
            own.append(f"{s} {_ms(ratio)} ({crossed} cores)")
        cost = queue_schedule_cost(
            programs, timing, label, True, baseline_service_ns=split.plan.baseline.service_ns
        )
        whole = cost.reasons[0] if cost.reasons else _ms(cost.estimate_ns)
        print(f"{label}: own recurrence of stage {', '.join(own)}; plan interval {whole}")
        if cost.recurrence is not None:
            delay = Counter()
            for c, ns in cost.recurrence.core_delay_ns.items():
                delay[int(split.core_stage[c])] += ns
            where = ", ".join(f"stage {s} {_ms(ns)}" for s, ns in sorted(delay.items()))
            print(
                f"  queue intervals {_ms(cost.index_interval_ns)} / "
                f"{_ms(cost.reversed_interval_ns)}, memory service {_ms(cost.memory_service_ns)}, "
                f"busiest core {_ms(max(cost.core_work_ns))}; "
                f"plan recurrence {_ms(cost.recurrence.ratio_ns)} at distance "
                f"{cost.recurrence.distance}: its cycle's delay on {where}"
            )

    everywhere = list(range(int(task_stage.max()) + 1))
    report("product realization", split.realization.cores, everywhere)
    for cut_set in cut_sets.split(","):
        programs = list(split.realization.cores)
        stages = []
        for item in cut_set.split("+"):
            stage_text, spec = item.split(":")
            stage, relist = int(stage_text), spec.endswith("r")
            entries = stage_entries(split, stage, lag_of(stage, spec.rstrip("r")), relist)
            for c in np.flatnonzero(split.core_stage == stage).tolist():
                programs[c] = reordered(split, c, entries[c])
            stages.append(stage)
        report(f"cuts {cut_set}", programs, stages)


def _ms(ns: float | None) -> str:
    return "none" if ns is None else f"{ns / 1e6:.3f} ms"


if __name__ == "__main__":
    main(sys.argv[1:])
