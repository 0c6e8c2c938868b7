"""Queue-aware pipeline selection: the seeds' bounded beam refinement (method ``beam``).

scheduling.md, "Default throughput selection", steps 2-9, as
`BeamPipelineSolver` runs them on a lowered graph:

2. the initialized schedule (`raptor_cp.pipeline.initial.initial_pipeline`):
   candidate 0, the search's first parent;
3. each round, every parent of the beam streams its legal joint
   partition/allocation moves (`raptor_cp.pipeline.neighbourhood`), each
   changed block getting minimax budgets over its pooled cores and then the
   pool's spare cores; the cheap proxy (`raptor_cp.pipeline.proxy`) ranks the
   unvisited ones into a shortlist of at most ``2 C`` (``C`` = 32 queue
   evaluations); ties, proxy values within the 2.1 % margin, prefer moves that
   relieve a bottleneck stage of the parent (change it without lengthening
   its dependency span, `raptor_cp.pipeline.proxy.relieves`): the stage whose
   cores carry the most processor service and, once the parent's critical
   recurrence is known, the one carrying the most delay of its witness cycle
   (`ProxyScore.key`);
4. the shortlist is tried in rank order: constructive packing of the changed
   stages (unchanged stages reuse theirs, and their placement when their cores
   stay the same), physical placement, and placement
   deduplication (two proposals placing every task and every core's stage
   identically are one schedule); each try uses one of the 128 constructive
   packings whether it succeeds or not; the round's next pick is built ahead
   in a forked child meanwhile (`_Search.speculate`, no effect on results);
5. the first distinct placement is realized (`raptor_cp.pipeline.realize`) and
   the target queried (`SchedulingTarget.estimate_realized_schedule_cost`,
   with its critical recurrence as guidance) -- one of the 32 queue evaluations;
6. unavailable timing, an unsupported static form or a queue run that does
   not converge stops the search: `SelectionStoppedError` names the candidate
   and the property, never silently dropping it;
7. each parent gets one evaluation per round (the first round: two for the
   single initial parent); all evaluated schedules stay available; the two
   with the lowest estimate (the larger of the two tie orders; ties: stage /
   budget vector, physical core order, evaluation index) form the next beam;
   the search stops at the queue or packing budget, or when no parent has a
   legal unvisited neighbour left;
8. the 2.1 % near-equivalence rule (`raptor_cp.pipeline.selection`) picks the
   result among the evaluated schedules;
9. the selected candidate's plan is the schedule (it was placed once and is
   not rebuilt).

A single candidate -- one operation group, or no neighbour that packs into a
distinct placement -- skips event extraction and queue comparison: the
initialized schedule is selected with its analytic proxy. Candidates are
queried only once a second distinct one exists, so a target without a queue
model (generic cores) stops only when a comparison is actually needed.

Bounds (scheduling.md, "Complexity and limits"): at most 32 queue evaluations
and 128 constructive packings; ``O(G + S² log P)`` proposals per parent and
round (`raptor_cp.pipeline.neighbourhood` bounds the splits), each scored from
memoised curves after one batched pricing of the round's new ranges;
placement deduplication by a digest of the physical placement, ``O(C (T + P))``.
"""

from __future__ import annotations

import hashlib
import heapq
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, NamedTuple

import numpy as np

from raptor_cp.collector import collector_paused
from raptor_cp.errors import (
    NotFoundWithinBudgetError,
    RaptorError,
    ScheduleViolationError,
    TimingUnavailableError,
)
from raptor_cp.forked import ForkedBatch
from raptor_cp.graph import ComputeGraph
from raptor_cp.heuristics.core_budgets import minimax_budgets
from raptor_cp.heuristics.prefix_dp import SPARE_UNITS
from raptor_cp.periodic.rendezvous_order import QUANTUM_NS, UnitCuts
from raptor_cp.pipeline.initial import InitialPipeline, add_spare_cores, initial_pipeline
from raptor_cp.pipeline.latency_candidate import latency_stage_plan
from raptor_cp.pipeline.layout import PlacementKey, StagePlacement, StagePlacer
from raptor_cp.pipeline.neighbourhood import Proposal, neighbours
from raptor_cp.pipeline.plan import PipelinePlan, assemble_pipeline
from raptor_cp.pipeline.proxy import ProxyScore, SelectionProxy, relieves
from raptor_cp.pipeline.realize import target_realization
from raptor_cp.pipeline.selection import (
    Attempt,
    Candidate,
    Decision,
    PipelineSelection,
    near_equivalence,
)
from raptor_cp.pipeline.stage_costs import StageCosts
from raptor_cp.problems import (
    LatencyProblem,
    LatencySolution,
    PipelineProblem,
    PipelineSolution,
    Stage,
    Status,
)
from raptor_cp.progress import tick
from raptor_cp.solvers import DEFAULT_METHOD, solve
from raptor_cp.targets.base import (
    UNKNOWN_SUPPORT,
    UNSUPPORTED,
    RealizedScheduleCost,
    RecurrenceRequest,
    SchedulingTarget,
)

QUEUE_EVALUATIONS = 32
"""Complete queue costs the search may evaluate (seeds)."""
CONSTRUCTIVE_PACKINGS = 128
"""Constructive allocations and physical packings the search may attempt (seeds)."""
PACKINGS_PER_EVALUATION = CONSTRUCTIVE_PACKINGS // QUEUE_EVALUATIONS
"""The seeds' ratio of the two budgets, kept when a user sets the queue evaluations."""
BEAM_WIDTH = 2
"""Schedules the beam retains (seeds)."""


class SelectionStoppedError(RaptorError):
    """A multi-candidate comparison cannot go on: a candidate lacks a required property.

    ``candidate`` is its evaluation index, ``prop`` the missing property
    (``timing``, ``static support`` or ``complete-state recurrence``).
    """

    def __init__(self, message: str, candidate: int, prop: str) -> None:
        super().__init__(message)
        self.candidate = candidate
        self.prop = prop


@dataclass(frozen=True)
class BeamPipelineSolver:
    """The queue-aware beam refinement as the default solver of `PipelineProblem`.

    ``objective`` is the selected candidate's queue estimate (its analytic
    proxy when a single candidate skipped the comparison); status FEASIBLE.
    """

    name: ClassVar[str] = "beam"

    spare_units: int = SPARE_UNITS
    queue_evaluations: int = QUEUE_EVALUATIONS
    constructive_packings: int = CONSTRUCTIVE_PACKINGS
    jobs: int = 1
    """CPUs a round's queue evaluations may use side by side (`raptor_cp.forked`); the
    selection does not depend on it."""

    def solve(self, problem: PipelineProblem) -> PipelineSolution:
        began = time.perf_counter()
        # The latency root's schedule does not depend on the initialization: with a
        # second CPU it is computed beside it (`_Search.add_latency_root` collects it).
        latency: ForkedBatch[LatencyProblem, LatencySolution] = ForkedBatch(
            _latency_schedule, self.jobs
        )
        latency.submit(problem.latency)
        try:
            initial = initial_pipeline(
                problem.graph, problem.target, problem.depth, self.spare_units
            )
            search = _Search(
                problem, initial, self.queue_evaluations, self.constructive_packings, self.jobs
            )
            try:
                selection = search.run(self.name, latency)
            finally:  # a search that failed mid-round leaves no child
                search.evaluations.close()
                search.drop_speculation()
        finally:
            latency.close()
        chosen = selection.selected
        objective = chosen.estimate_ns
        return PipelineSolution(
            chosen.plan,
            selection=selection,
            status=Status.FEASIBLE,
            solver=self.name,
            objective=chosen.plan.interval_ns if objective is None else objective,
            wall_s=time.perf_counter() - began,
        )


def _latency_schedule(problem: LatencyProblem) -> LatencySolution:
    """The production latency schedule (the default latency method) of ``problem``."""
    return solve(problem, DEFAULT_METHOD[LatencyProblem])


def realized_cost(
    problem: PipelineProblem, costs: StageCosts, stages: Sequence[Stage], name: str
) -> tuple[PipelinePlan, RealizedScheduleCost]:
    """Pack, place and realize ``stages`` the way the search builds a candidate, and query
    the target for its queue cost (for audits that evaluate a schedule the search did not
    build). Raises `NotFoundWithinBudgetError` when a stage cannot be packed."""
    assignments = [costs.assignment(s.first, s.stop, s.cores)[0] for s in stages]
    plan = assemble_pipeline(problem.graph, problem.target, costs.groups, stages, assignments)
    return plan, target_cost(problem.graph, problem.target, plan, name, recurrence=False)


def target_cost(
    graph: ComputeGraph,
    target: SchedulingTarget,
    plan: PipelinePlan,
    name: str,
    recurrence: RecurrenceRequest,
    cuts: UnitCuts | None = None,
) -> RealizedScheduleCost:
    """Realize ``plan`` for ``target`` (`target_realization`, tasks cut by ``cuts``) and ask
    the target for its cost.

    The baseline requests' controller service (``plan.baseline``) joins the memory
    term. A realization the target cannot time (sub-byte payloads, too few event
    registers) is an unsupported static form, not an exception.
    """
    began = time.perf_counter()
    with collector_paused():
        try:
            realization = target_realization(
                graph, target, plan.schedule, plan.task_stage(graph.num_tasks), cuts
            )
        except TimingUnavailableError as error:
            return RealizedScheduleCost.unavailable(f"{name}: {error}", UNSUPPORTED)
        realized_s = time.perf_counter() - began
        cost = target.estimate_realized_schedule_cost(
            realization.cores, name, recurrence, plan.baseline.service_ns
        )
    return replace(cost, wall_s=(("realization", realized_s), *cost.wall_s))


def placement_digest(plan: PipelinePlan) -> str:
    """A digest of the physical placement: every task's core and every core's stage."""
    digest = hashlib.sha1(np.ascontiguousarray(plan.schedule.core, dtype=np.int64).tobytes())
    digest.update(np.asarray(plan.schedule.stage or (), dtype=np.int64).tobytes())
    return digest.hexdigest()


def missing_property(cost: RealizedScheduleCost) -> str:
    """The selection property an unavailable cost lacks."""
    if cost.static_support == UNSUPPORTED:
        return "static support"
    if cost.static_support == UNKNOWN_SUPPORT:
        return "timing (static support unknown)"
    if cost.index_interval_ns is None or cost.reversed_interval_ns is None:
        return "complete-state recurrence"
    return "timing"


Canonical = tuple[tuple[int, int, int], ...]
"""A stage/budget vector (`Proposal.canonical`)."""
Packing = tuple[tuple[int, ...], dict[str, object]]
"""One stage's constructive packing: a core per task and its evidence (`StageCosts.assignment`)."""
Built = tuple[PipelinePlan, tuple[dict[str, object], ...]]
"""A built candidate: its plan and every stage's packing evidence (`_Search.build`)."""


@dataclass(frozen=True)
class _Prebuilt:
    """A candidate built ahead in a forked child (`_Search.speculate`): the build's
    outcome and the memo entries the child made, which the parent adopts."""

    outcome: Built | RaptorError
    packed: tuple[tuple[tuple[int, int, int], Packing], ...]
    placed: tuple[tuple[PlacementKey, StagePlacement], ...]
    seconds: float


@dataclass
class _Budget:
    queue_used: int = 0
    packings_used: int = 0
    times: dict[str, float] = field(
        default_factory=lambda: {
            "neighbourhood_scoring": 0.0,
            "constructive_packing": 0.0,
            "dependency_witness": 0.0,
            "queue_execution": 0.0,
            "latency_schedule": 0.0,
        }
    )


class _Search:
    """One run of the beam refinement (module docstring)."""

    def __init__(
        self,
        problem: PipelineProblem,
        initial: InitialPipeline,
        queue: int,
        packings: int,
        jobs: int = 1,
    ) -> None:
        self.problem = problem
        self.graph: ComputeGraph = problem.graph
        self.target: SchedulingTarget = problem.target
        self.depth = problem.depth
        self.initial = initial
        self.costs: StageCosts = initial.costs
        self.groups = self.costs.groups
        self.queue_limit = queue
        self.jobs = jobs
        self.pending: list[int] = []
        self.packing_limit = packings
        self.proxy = SelectionProxy.of(self.costs, self.target)
        work = np.add.reduceat(
            self.graph.cost[self.groups.ordered_tasks], self.groups.offsets[:-1]
        ).astype(np.int64)
        self.work_prefix = np.concatenate([[0], np.cumsum(work)])
        self.began = time.perf_counter() - initial.phase_times_s["initialization"]
        self.budget = _Budget(packings_used=1)
        self.candidates: list[Candidate] = []
        self.attempts: list[Attempt] = []
        self.rounds: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        self.visited: set[Canonical] = set()
        self.shortlists: dict[int, tuple[int, list[Ranked]]] = {}
        """Per parent: its latest shortlist and the size of `visited` it was made for."""
        self.speculation: tuple[Canonical, ForkedBatch[Sequence[Stage], _Prebuilt]] | None = None
        """The round's next candidate, built ahead in a child (`speculate`)."""
        self.placements: dict[str, int] = {}
        self.packed: dict[tuple[int, int, int], Packing] = {}
        self.placer = StagePlacer(self.graph, self.target)
        self.cuts = UnitCuts(self.graph, self.target, QUANTUM_NS)
        """Every candidate's task units (cut once, in this process, before evaluations fork)."""
        self.evaluations: ForkedBatch[int, RealizedScheduleCost] = ForkedBatch(self.cost_of, jobs)
        """The round's requested evaluations (`request`), collected by `evaluate_pending`."""
        self.submitted: list[int] = []
        """Candidates in `evaluations`, in submission order."""
        self.latency_root = ""
        for stage, core, evidence in zip(
            initial.plan.stages, initial.assignments, initial.packing, strict=True
        ):
            self.packed[stage.first, stage.stop, stage.cores] = (core, evidence)

    # -- allocation and scoring -------------------------------------------------

    def allocate(self, ranges: Sequence[tuple[int, int]], pool: int) -> tuple[int, ...] | None:
        """Minimax budgets of a changed block over ``pool`` cores, then its spare cores."""
        budgets = minimax_budgets(ranges, pool, self.costs)
        if budgets is None:
            return None
        stages = [Stage(a, b, k) for (a, b), k in zip(ranges, budgets, strict=True)]
        work = [int(self.work_prefix[b] - self.work_prefix[a]) for a, b in ranges]
        offsets = self.groups.offsets
        tasks = [int(offsets[b] - offsets[a]) for a, b in ranges]
        return tuple(s.cores for s in add_spare_cores(stages, pool, work, tasks))

    def bottlenecks(self, parent: Candidate) -> set[int]:
        """The parent's stages carrying the most processor service and recurrence delay."""
        found: set[int] = set()
        stage_of_core = parent.plan.schedule.stage or ()
        cost = parent.cost
        if cost is not None and cost.core_work_ns:
            busiest = max(range(len(cost.core_work_ns)), key=lambda c: (cost.core_work_ns[c], -c))
            found.add(stage_of_core[busiest])
            if cost.recurrence is not None:
                delay: dict[int, int] = {}
                for core, ns in cost.recurrence.core_delay_ns.items():
                    delay[stage_of_core[core]] = delay.get(stage_of_core[core], 0) + ns
                found.add(max(sorted(delay), key=lambda s: delay[s]))
        elif parent.proxy is not None:
            costs = parent.proxy.stage_cost
            found.add(max(range(len(costs)), key=lambda s: (costs[s], -s)))
        found.discard(-1)
        return found

    def shortlist(self, parent: Candidate) -> list[Ranked]:
        """The parent's unvisited legal proposals, best `2 C` by the proxy (memoised until
        `visited` grows)."""
        found = self.shortlists.get(parent.index)
        if found is not None and found[0] == len(self.visited):
            return found[1]
        began = time.perf_counter()
        stages = parent.stages
        self.costs.prefetch(self._new_ranges(stages))
        bottleneck = self.bottlenecks(parent)
        size = 2 * self.queue_limit
        heap: list[tuple[_Inverted, int, Ranked]] = []
        seen: set[tuple[tuple[int, int, int], ...]] = set()
        for n, proposal in enumerate(
            neighbours(stages, self.depth, self.allocate, self.work_prefix)
        ):
            if proposal.canonical in self.visited or proposal.canonical in seen:
                continue
            seen.add(proposal.canonical)
            score = self.proxy.score(proposal.stages)
            if score is None:
                continue
            relieving = any(
                relieves(stages[b], proposal.stages, self.costs.span)
                for b in bottleneck.intersection(proposal.changed)
            )
            key = score.key(relieving, proposal.stages)
            entry = (_Inverted(key), -n, Ranked(proposal, score, relieving))
            if len(heap) < size:
                heapq.heappush(heap, entry)
            elif key < heap[0][0].key:  # type: ignore[operator]
                heapq.heapreplace(heap, entry)
        ranked = sorted(heap, key=lambda e: (e[0].key, -e[1]))
        self.budget.times["neighbourhood_scoring"] += time.perf_counter() - began
        shortlist = [entry for _, _, entry in ranked]
        self.shortlists[parent.index] = (len(self.visited), shortlist)
        return shortlist

    def _new_ranges(self, stages: Sequence[Stage]) -> list[tuple[int, int]]:
        """Every range a move of ``stages`` can create, for one batched pricing."""
        found: list[tuple[int, int]] = []
        for i in range(len(stages)):
            for j in range(i, len(stages)):
                found.append((stages[i].first, stages[j].stop))
        for i in range(len(stages) - 1):
            left, right = stages[i], stages[i + 1]
            step = 1
            while step < right.stop - left.first:
                for cut in (left.stop - step, left.stop + step):
                    if left.first < cut < right.stop:
                        found.extend([(left.first, cut), (cut, right.stop)])
                step *= 2
        if len(stages) < self.depth:
            from raptor_cp.pipeline.neighbourhood import split_positions

            for stage in stages:
                for cut in split_positions(stage.first, stage.stop, self.work_prefix):
                    found.extend([(stage.first, cut), (cut, stage.stop)])
        return found

    # -- building and evaluating -------------------------------------------------

    def build(self, stages: Sequence[Stage]) -> Built:
        """Constructive packing of every stage and physical placement: the speculation's
        outcome when it built these stages, else `construct` here."""
        canonical = tuple((s.first, s.stop, s.cores) for s in stages)
        if self.speculation is None or self.speculation[0] != canonical:
            began = time.perf_counter()
            try:
                return self.construct(stages)
            finally:
                self.budget.times["constructive_packing"] += time.perf_counter() - began
        batch = self.speculation[1]
        self.speculation = None
        (prebuilt,) = batch.results()
        for key, packing in prebuilt.packed:
            self.packed.setdefault(key, packing)
        self.placer.adopt(prebuilt.placed)
        self.budget.times["constructive_packing"] += prebuilt.seconds
        if isinstance(prebuilt.outcome, RaptorError):
            raise prebuilt.outcome
        return prebuilt.outcome

    def construct(self, stages: Sequence[Stage]) -> Built:
        """Pack and place ``stages`` (both memoised per stage: a stage a move leaves
        unchanged on the same cores is neither packed nor placed again)."""
        assignments, evidence = [], []
        for stage in stages:
            key = (stage.first, stage.stop, stage.cores)
            if key not in self.packed:
                self.packed[key] = self.costs.assignment(stage.first, stage.stop, stage.cores)
            core, details = self.packed[key]
            assignments.append(core)
            evidence.append(details)
        plan = assemble_pipeline(
            self.graph, self.target, self.groups, stages, assignments, self.placer
        )
        return plan, tuple(evidence)

    def speculate(self, current: Canonical, following: int | None) -> None:
        """Start building the round's next pick in a child while this process builds
        ``current``: the best unvisited proposal of ``following`` (the next slot's
        parent), which `_advance` will take if ``current`` is admitted (otherwise it
        speculates again).

        A build is deterministic and `build` adopts a speculation's outcome only
        for the very stages it was made for, so speculation changes no result, only
        when a build happens. Nothing starts while ``current`` itself is being built
        ahead, or when the budget leaves no room for the next slot.
        """
        if self.speculation is not None and self.speculation[0] == current:
            return
        pick = None
        if following is not None and self._room_after_this_slot():
            pick = self._first_unvisited(following)
        running = None if self.speculation is None else self.speculation[0]
        if pick is not None and running == pick.canonical:
            return
        self.drop_speculation()
        if pick is not None:
            batch: ForkedBatch[Sequence[Stage], _Prebuilt] = ForkedBatch(self._prebuild, self.jobs)
            batch.submit(pick.stages)
            self.speculation = (pick.canonical, batch)

    def _first_unvisited(self, parent_index: int) -> Proposal | None:
        """The parent's best unvisited proposal, scoring its neighbourhood only when needed.

        The first unvisited entry of the parent's latest shortlist is what
        `shortlist` would rank first now: `visited` only grew since, and the
        proposals a full shortlist left out rank below all of it. So a slot that
        retries (a duplicate placement, a failed packing) does not score the next
        parent's neighbourhood again; that happens only when the parent has no
        shortlist yet or none of it is left unvisited.
        """
        latest = self.shortlists.get(parent_index)
        if latest is not None:
            for entry in latest[1]:
                if entry.proposal.canonical not in self.visited:
                    return entry.proposal
        listed = self.shortlist(self.candidates[parent_index])
        return listed[0].proposal if listed else None

    def drop_speculation(self) -> None:
        """Stop the speculative build, if any (its stages were not taken)."""
        if self.speculation is not None:
            self.speculation[1].close()
            self.speculation = None

    def _room_after_this_slot(self) -> bool:
        return (
            self.budget.queue_used + len(self.pending) + 1 < self.queue_limit
            and self.budget.packings_used < self.packing_limit
        )

    def _prebuild(self, stages: Sequence[Stage]) -> _Prebuilt:
        """`construct` ``stages`` (in a forked child) and hand back what it memoised."""
        began = time.perf_counter()
        mark = self.placer.memo_size()
        outcome: Built | RaptorError
        try:
            outcome = self.construct(stages)
        except (NotFoundWithinBudgetError, ScheduleViolationError) as error:
            outcome = error
        keys = [(s.first, s.stop, s.cores) for s in stages]
        return _Prebuilt(
            outcome,
            tuple((key, self.packed[key]) for key in keys if key in self.packed),
            tuple(self.placer.memo_after(mark)),
            time.perf_counter() - began,
        )

    def cost_of(self, index: int) -> RealizedScheduleCost:
        """Realize candidate ``index`` and query the target (pure: runs in a forked child
        when a round's evaluations run side by side, `raptor_cp.forked`)."""
        candidate = self.candidates[index]
        name = f"{self.graph.name} candidate {candidate.index}"
        return target_cost(
            self.graph, self.target, candidate.plan, name, self.may_join_beam(index), self.cuts
        )

    def may_join_beam(self, index: int) -> Callable[[RealizedScheduleCost], bool]:
        """Whether candidate ``index``, once costed, can join a later beam: it must rank
        ahead of the second best of the costs recorded before its round (records are
        made between rounds, so a child forked in the round sees the same ones; later
        records only raise the bar). Only a parent's recurrence guides moves
        (`bottlenecks`), so the others skip Howard's witness (about a second each on
        ResNet-50). The best candidate always qualifies when it is evaluated."""
        recorded = sorted(
            c.rank() for c in self.candidates if c.cost is not None and c.cost.available
        )
        if len(recorded) < BEAM_WIDTH:
            return lambda cost: True
        bar = recorded[BEAM_WIDTH - 1]
        candidate = self.candidates[index]
        return lambda cost: replace(candidate, cost=cost).rank() < bar

    def evaluate_pending(self) -> None:
        """Evaluate the candidates `request` queued, on up to ``jobs`` CPUs, and record
        them in index order; stop if one cannot be costed."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        first = self.budget.queue_used + 1
        numbers = f"{first}" if len(pending) == 1 else f"{first}-{first + len(pending) - 1}"
        tick(
            "select",
            f"queue evaluation {numbers} of at most {self.queue_limit} (candidate"
            f"{'s' * (len(pending) > 1)} {', '.join(map(str, pending))})",
        )
        submitted, self.submitted = self.submitted, []
        assert sorted(submitted) == sorted(pending)  # the initialized one is always requested
        costs = dict(zip(submitted, self.evaluations.results(), strict=True))
        for index in pending:
            self._record(self.candidates[index], costs[index])

    def _record(self, candidate: Candidate, cost: RealizedScheduleCost) -> None:
        self.budget.queue_used += 1
        wall = dict(cost.wall_s)
        self.budget.times["queue_execution"] += sum(
            wall.get(phase, 0.0) for phase in ("realization", "extraction", "queue")
        )
        self.budget.times["dependency_witness"] += wall.get("recurrence", 0.0)
        if not cost.available:
            prop = missing_property(cost)
            stages = [[s.first, s.stop, s.cores] for s in candidate.stages]
            # A budget changes only the search's length and its shortlists' size (2 per
            # evaluation, ranked alike), so with ``index`` evaluations the same candidates
            # come first and the search ends before this one.
            shorter = (
                f"; --pipeline-evaluations {candidate.index} ends the search before it"
                if candidate.index >= 2
                else ""
            )
            raise SelectionStoppedError(
                f"pipeline selection stopped: candidate {candidate.index} (stages {stages}) "
                f"lacks {prop}: {'; '.join(cost.reasons)} (--pipeline-method initial keeps the "
                f"initialized schedule without comparing candidates{shorter})",
                candidate.index,
                prop,
            )
        self.candidates[candidate.index] = replace(candidate, cost=cost)

    def request(self, index: int) -> None:
        """Queue candidate ``index`` for the round's evaluation (once); it starts at once
        in a forked child when a CPU is free, while the round builds its next candidate."""
        if self.candidates[index].cost is None and index not in self.pending:
            self.pending.append(index)
            if index not in self.submitted:
                self.submit(index)

    def submit(self, index: int) -> None:
        """Start evaluating candidate ``index`` (`ForkedBatch`); `request` records it."""
        self.cuts.warm()
        self.evaluations.submit(index)
        self.submitted.append(index)

    # -- the search ---------------------------------------------------------------

    def run(
        self, solver: str, latency: ForkedBatch[LatencyProblem, LatencySolution]
    ) -> PipelineSelection:
        initial = self.initial
        stages = initial.plan.stages
        self.visited.add(tuple((s.first, s.stop, s.cores) for s in stages))
        root = Candidate(
            0, stages, None, "initial partition", 0, self.proxy.score(stages), initial.plan,
            initial.packing, None,
        )  # fmt: skip
        self.candidates.append(root)
        self.placements[placement_digest(initial.plan)] = 0
        beam = [0]
        termination = "single candidate: one operation group"
        round_number = 0
        if self.groups.count > 1:
            termination = ""
            # The initialized schedule is requested with the first other candidate, if
            # any: evaluating it now overlaps the latency schedule and the first builds
            # (a result nobody requests is dropped). The first round's shortlist does
            # not depend on the latency root (it is not a parent and adds nothing to
            # `visited`): it is scored while the latency schedule is still computed.
            self.submit(0)
            tick("select", "scoring the initialized schedule's neighbours")
            self.shortlist(root)
            self.add_latency_root(latency)
        while not termination:
            round_number += 1
            quota = BEAM_WIDTH if len(beam) == 1 else 1
            evaluated: list[int] = []
            slots = [parent for parent in beam for _ in range(quota)]
            exhausted: set[int] = set()
            for slot, parent in enumerate(slots):
                if self._budget_spent():
                    break
                if parent in exhausted:
                    continue
                following = slots[slot + 1] if slot + 1 < len(slots) else None
                found = self._advance(parent, round_number, following)
                if found is None:
                    exhausted.add(parent)
                    continue
                evaluated.append(found)
            self.drop_speculation()
            self.evaluate_pending()
            self.rounds.append((round_number, tuple(beam), tuple(evaluated)))
            if self.budget.queue_used >= self.queue_limit:
                termination = f"queue evaluation budget ({self.queue_limit}) spent"
            elif self.budget.packings_used >= self.packing_limit:
                termination = f"constructive packing budget ({self.packing_limit}) spent"
            elif not evaluated:
                termination = "the beam's legal unvisited neighbourhood is exhausted"
            else:
                compared = [c for c in self.candidates if c.cost is not None]
                beam = [c.index for c in sorted(compared, key=lambda c: c.rank())[:BEAM_WIDTH]]
        compared = [c for c in self.candidates if c.cost is not None]
        if len(compared) < 2:
            if termination.startswith("the beam's"):
                termination = "single candidate: no neighbour packs into a distinct placement"
            decision = Decision(0, None, (), None, "single candidate: queue comparison skipped")
        else:
            decision = near_equivalence(compared, initial=0)
        times = dict(initial.phase_times_s)
        times.update(self.budget.times)
        times["total"] = time.perf_counter() - self.began
        work = dict(initial.work)
        work.update(
            {
                "rounds": len(self.rounds),
                "attempts": len(self.attempts),
                "stage_costs_priced": self.costs.stats.priced,
                "pricing_batches": self.costs.stats.batches,
            }
        )
        return PipelineSelection(
            solver=solver,
            initial=initial,
            candidates=tuple(self.candidates),
            decision=decision,
            attempts=tuple(self.attempts),
            rounds=tuple(self.rounds),
            termination=termination,
            queue_evaluations=(self.budget.queue_used, self.queue_limit),
            constructive_packings=(self.budget.packings_used, self.packing_limit),
            phase_times_s=times,
            work=work,
            latency_root=self.latency_root,
        )

    def add_latency_root(self, latency: ForkedBatch[LatencyProblem, LatencySolution]) -> None:
        """Add the production latency schedule as a one-stage candidate, evaluated with the
        first round (`raptor_cp.pipeline.latency_candidate`); `latency_root` says why not
        when it cannot be (the latency scheduler finds no schedule, or the same placement
        is already a candidate, or the queue budget cannot evaluate it beside the
        initialized schedule)."""
        if self.budget.queue_used + len(self.pending) + 2 > self.queue_limit:
            self.latency_root = (
                f"not a candidate: the queue evaluation budget ({self.queue_limit}) leaves no "
                "room beside the initialized schedule"
            )
            return
        began = time.perf_counter()
        method = DEFAULT_METHOD[LatencyProblem]
        tick("select", f"the latency schedule ({method}) of the second root")
        try:
            (found,) = latency.results()
            if found.schedule is None:
                self.latency_root = f"not a candidate: {method} found no latency schedule"
                return
            plan = latency_stage_plan(
                self.graph, self.target, self.groups, found.schedule, self.placer
            )
        except RaptorError as error:
            self.latency_root = f"not a candidate: {error}"
            return
        finally:
            self.budget.times["latency_schedule"] += time.perf_counter() - began
        digest = placement_digest(plan)
        if digest in self.placements:
            same = self.placements[digest]
            self.latency_root = f"not a candidate: the same placement as candidate {same}"
            return
        index = len(self.candidates)
        self.placements[digest] = index
        evidence = {"placement": "latency schedule", "scheduler": found.solver}
        move = f"latency schedule ({method}) as one stage"
        score = self.proxy.score(plan.stages)
        candidate = Candidate(index, plan.stages, None, move, 0, score, plan, (evidence,), None)
        self.candidates.append(candidate)
        self.latency_root = f"candidate {index}"
        self.request(0)
        self.request(index)

    def _budget_spent(self) -> bool:
        return (
            self.budget.queue_used + len(self.pending) >= self.queue_limit
            or self.budget.packings_used >= self.packing_limit
        )

    def _advance(self, parent_index: int, round_number: int, following: int | None) -> int | None:
        """Build and evaluate the parent's best admissible neighbour; None when there is none.

        ``following`` is the parent of the round's next slot: its pick is built
        ahead in a child (`speculate`) while this one is built here.
        """
        parent = self.candidates[parent_index]
        for proposal, score, relieving in self.shortlist(parent):
            if self._budget_spent():
                return None
            self.visited.add(proposal.canonical)
            self.budget.packings_used += 1
            self.speculate(proposal.canonical, following)
            attempt = (round_number, parent_index, proposal.move, proposal.canonical)
            try:
                plan, packing = self.build(proposal.stages)
            except (NotFoundWithinBudgetError, ScheduleViolationError) as error:
                self.attempts.append(Attempt(*attempt, f"packing failed: {error}"))
                continue
            digest = placement_digest(plan)
            if digest in self.placements:
                same = self.placements[digest]
                self.attempts.append(Attempt(*attempt, f"duplicate placement of candidate {same}"))
                continue
            index = len(self.candidates)
            self.placements[digest] = index
            candidate = Candidate(
                index, proposal.stages, parent_index, proposal.move, round_number, score, plan,
                packing, None, relieving,
            )  # fmt: skip
            self.candidates.append(candidate)
            self.request(0)
            if self._budget_spent():
                self.attempts.append(Attempt(*attempt, "not evaluated: queue budget spent", index))
                return None
            self.request(index)
            self.attempts.append(Attempt(*attempt, "evaluated", index))
            return index
        return None


class Ranked(NamedTuple):
    """One shortlist entry: a proposal, its proxy and whether it relieves a bottleneck
    stage of the parent (`raptor_cp.pipeline.proxy.relieves`)."""

    proposal: Proposal
    score: ProxyScore
    relieves_bottleneck: bool


@dataclass(frozen=True)
class _Inverted:
    """A key ordered backwards, so that ``heapq`` keeps the worst entry on top."""

    key: tuple[object, ...]

    def __lt__(self, other: _Inverted) -> bool:
        return other.key < self.key  # type: ignore[operator]
