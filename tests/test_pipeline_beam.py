"""The queue-aware beam refinement: rounds, budgets, stopping, the 2.1 % rule, diagnostics."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from click.testing import CliRunner

from raptor_cp.cli import main
from raptor_cp.flows import compile_pipeline, prepare
from raptor_cp.forked import can_fork
from raptor_cp.graph import ComputeGraph
from raptor_cp.pipeline import beam as beam_search
from raptor_cp.pipeline.beam import BeamPipelineSolver, SelectionStoppedError, _Search
from raptor_cp.pipeline.initial import initial_pipeline
from raptor_cp.pipeline.proxy import relieves
from raptor_cp.pipeline.selection import Candidate, PipelineSelection, near_equivalence
from raptor_cp.problems import LatencyProblem, PipelineProblem, Stage, check
from raptor_cp.progress import reporting
from raptor_cp.solvers import DEFAULT_METHOD, solve
from raptor_cp.targets.base import AVAILABLE, SUPPORTED, RealizedScheduleCost
from raptor_cp.targets.generic import GenericTarget

LENET = Path(__file__).parent / "data" / "models" / "lenet5.onnx"


def _cost(ns: int) -> RealizedScheduleCost:
    return RealizedScheduleCost(AVAILABLE, (), SUPPORTED, float(ns), float(ns), (1,), 0, (5, 5), 1)


def _candidate(index: int, ns: int) -> Candidate:
    plan = cast(Any, SimpleNamespace(schedule=SimpleNamespace(stage=(0,))))
    stages = (Stage(0, 1, index + 1),)
    return Candidate(index, stages, None, "", 0, None, plan, (), _cost(ns))


def test_a_close_alternative_keeps_the_initialized_schedule() -> None:
    # 1000 is within [980/1.021, 980/0.979]: not separated from the initial.
    decision = near_equivalence([_candidate(0, 1000), _candidate(1, 980)])
    assert (decision.selected, decision.best, decision.ties) == (0, 1, (1, 0))
    assert decision.band_ns == (Fraction(980_000, 1021), Fraction(1_000_000, 979))
    assert decision.rule.startswith("candidate 1 does not separate")


def test_a_separated_best_candidate_is_selected() -> None:
    # Ties of 970: 990 <= 970 / 0.979 (990.8); the band reaches 990 / 0.979 = 1011.2.
    decision = near_equivalence([_candidate(0, 1012), _candidate(1, 970), _candidate(2, 990)])
    assert (decision.selected, decision.best, decision.ties) == (1, 1, (1, 2))
    kept = near_equivalence([_candidate(0, 1011), _candidate(1, 970), _candidate(2, 990)])
    assert kept.selected == 0
    assert decision.rule.startswith("candidate 1 separates")


def test_equal_estimates_break_by_the_stage_budget_vector() -> None:
    decision = near_equivalence([_candidate(2, 900), _candidate(0, 1000), _candidate(1, 900)])
    assert decision.best == 1  # (900, budgets (2,)) before (900, budgets (3,))


@pytest.fixture(scope="module")
def lenet_beam() -> tuple[PipelineProblem, PipelineSelection]:
    prepared = prepare(LENET, "arch-a")
    problem = PipelineProblem(prepared.graph, prepared.target, 4)
    solution = solve(problem)
    check(problem, solution)
    assert solution.selection is not None
    return problem, solution.selection


def test_beam_is_the_default_pipeline_method() -> None:
    assert DEFAULT_METHOD[PipelineProblem] == "beam"


def test_rounds_respect_the_beam_and_the_budgets(lenet_beam: tuple) -> None:
    _, selection = lenet_beam
    used, budget = selection.queue_evaluations
    assert (budget, selection.constructive_packings[1]) == (32, 128)
    evaluated = [c for c in selection.candidates if c.cost is not None]
    assert used == len(evaluated) <= 32
    assert selection.constructive_packings[0] <= 128
    first_round, *later = selection.rounds
    assert first_round[1] == (0,) and len(first_round[2]) <= 2
    seen = {0, *first_round[2]}
    for _round, beam, found in later:
        assert len(beam) == 2 and len(found) <= 2
        assert set(beam) <= seen
        seen.update(found)
    # Two roots: the initialized schedule and the latency schedule as one stage.
    roots = [c for c in selection.candidates if c.parent is None]
    assert [c.index for c in roots] == [0, 1] and selection.latency_root == "candidate 1"
    assert roots[1].round == 0 and len(roots[1].stages) == 1 and roots[1].cost is not None
    assert {p.candidate for p in roots[1].plan.placements} == {"latency"}
    # Every other candidate came from a parent of its round's beam.
    beams = {r: beam for r, beam, _ in selection.rounds}
    for candidate in selection.candidates[2:]:
        assert candidate.parent in beams[candidate.round]
    # Physical placements are distinct.
    digests = {
        tuple(c.plan.schedule.core.tolist()) + tuple(c.plan.schedule.stage) for c in evaluated
    }
    assert len(digests) == len(evaluated)


def test_the_selection_is_the_initial_or_the_best_candidate(lenet_beam: tuple) -> None:
    _, selection = lenet_beam
    decision = selection.decision
    best = min((c for c in selection.candidates if c.cost is not None), key=lambda c: c.rank())
    assert decision.best == best.index
    assert decision.selected in (0, best.index)
    assert selection.selected.estimate_ns is not None


def test_the_search_is_deterministic(lenet_beam: tuple) -> None:
    problem, selection = lenet_beam
    again = solve(problem).selection
    assert again is not None
    assert [c.canonical for c in again.candidates] == [c.canonical for c in selection.candidates]
    assert [c.estimate_ns for c in again.candidates] == [
        c.estimate_ns for c in selection.candidates
    ]
    assert again.decision == selection.decision


def test_the_witness_is_analysed_for_every_candidate_that_can_lead(
    lenet_beam: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem, selection = lenet_beam
    parents = {p for _, beam, _ in selection.rounds for p in beam}
    analysed = {c.index for c in selection.candidates if c.cost and c.cost.recurrence_analysed}
    assert parents | {selection.decision.selected} <= analysed
    assert len(analysed) < selection.queue_evaluations[0]  # some skipped Howard
    # Skipping it for the others changes nothing but the skipped rows.
    monkeypatch.setattr(_Search, "may_join_beam", lambda self, index: True)
    always = solve(problem).selection
    assert always is not None
    assert all(c.cost and c.cost.recurrence_analysed for c in always.candidates if c.cost)
    assert [c.canonical for c in always.candidates] == [c.canonical for c in selection.candidates]
    assert [c.estimate_ns for c in always.candidates] == [
        c.estimate_ns for c in selection.candidates
    ]
    assert always.rounds == selection.rounds and always.decision == selection.decision


@pytest.mark.skipif(not can_fork(), reason="forked evaluation runs on Linux only")
def test_side_by_side_evaluation_selects_the_same_schedule(lenet_beam: tuple) -> None:
    problem, selection = lenet_beam
    forked = BeamPipelineSolver(jobs=2).solve(problem).selection
    assert forked is not None
    assert [c.canonical for c in forked.candidates] == [c.canonical for c in selection.candidates]
    assert [c.estimate_ns for c in forked.candidates] == [
        c.estimate_ns for c in selection.candidates
    ]
    assert [a.outcome for a in forked.attempts] == [a.outcome for a in selection.attempts]
    assert forked.rounds == selection.rounds and forked.decision == selection.decision


@pytest.mark.skipif(not can_fork(), reason="forked builds run on Linux only")
@pytest.mark.parametrize("duplicates", [False, True])
def test_builds_made_ahead_in_a_child_change_no_result(
    lenet_beam: tuple, monkeypatch: pytest.MonkeyPatch, duplicates: bool
) -> None:
    problem, selection = lenet_beam
    if duplicates:
        # A third of the placements pass for the initialized one's: `_advance` then
        # tries the parent's next proposal, and the build made ahead for the next
        # slot may no longer be that slot's pick.
        digest = beam_search.placement_digest
        root: list[str] = []

        def colliding(plan: Any) -> str:
            real = digest(plan)
            root.append(real) if not root else None
            return root[0] if int(real, 16) % 3 == 0 else real

        monkeypatch.setattr(beam_search, "placement_digest", colliding)
        selection = solve(problem).selection
        assert any(a.outcome.startswith("duplicate") for a in selection.attempts)
    taken: list[bool] = []
    build = _Search.build

    def counting(self: _Search, stages: Any) -> Any:
        canonical = tuple((s.first, s.stop, s.cores) for s in stages)
        taken.append(self.speculation is not None and self.speculation[0] == canonical)
        return build(self, stages)

    monkeypatch.setattr(_Search, "build", counting)
    ahead = BeamPipelineSolver(jobs=2).solve(problem).selection
    assert ahead is not None
    assert sum(taken) >= len(ahead.rounds) // 2  # most rounds built their second pick ahead
    monkeypatch.setattr(_Search, "speculate", lambda self, current, following: None)
    taken.clear()
    here = BeamPipelineSolver(jobs=2).solve(problem).selection
    assert here is not None and not any(taken)
    for run in (ahead, here):
        assert [c.canonical for c in run.candidates] == [c.canonical for c in selection.candidates]
        assert [c.estimate_ns for c in run.candidates] == [
            c.estimate_ns for c in selection.candidates
        ]
        assert [a.outcome for a in run.attempts] == [a.outcome for a in selection.attempts]
        assert run.rounds == selection.rounds and run.decision == selection.decision
        assert run.work == selection.work


@pytest.mark.skipif(not can_fork(), reason="forked builds run on Linux only")
def test_a_speculation_follows_the_next_pick_and_its_outcome_is_the_plain_build(
    lenet_beam: tuple,
) -> None:
    problem, _ = lenet_beam
    initial = initial_pipeline(problem.graph, problem.target, problem.depth)
    search = _Search(problem, initial, 32, 128, jobs=2)
    stages = initial.plan.stages
    root = Candidate(0, stages, None, "initial", 0, None, initial.plan, initial.packing, None)
    search.candidates.append(root)
    search.visited.add(root.canonical)
    first, second = (entry.proposal for entry in search.shortlist(root)[:2])
    try:
        search.speculate(root.canonical, following=0)  # builds the root's best proposal
        assert search.speculation is not None and search.speculation[0] == first.canonical
        running = search.speculation[1]
        search.speculate(first.canonical, following=0)  # the current pick is the one ahead
        assert search.speculation is not None and search.speculation[1] is running
        # Taken while another pick is built here (a retry): the next pick changes.
        search.visited.add(first.canonical)
        search.speculate(((0, -1, 0),), following=0)
        assert search.speculation is not None and search.speculation[0] == second.canonical
        assert running.running == [] and running.waiting == []  # the old one was stopped
        ahead, _ = search.build(second.stages)
        assert search.speculation is None
        search.speculate(second.canonical, following=None)  # no next slot: nothing starts
        assert search.speculation is None
    finally:
        search.drop_speculation()
    here = _Search(problem, initial, 32, 128, jobs=1)
    plain, _ = here.construct(second.stages)
    assert beam_search.placement_digest(ahead) == beam_search.placement_digest(plain)
    assert ahead.interval_ns == plain.interval_ns
    assert search.packed.keys() >= {(s.first, s.stop, s.cores) for s in second.stages}


def test_the_shortlist_guides_only_moves_that_relieve_a_bottleneck(lenet_beam: tuple) -> None:
    problem, _ = lenet_beam
    initial = initial_pipeline(problem.graph, problem.target, problem.depth)
    search = _Search(problem, initial, 32, 128, jobs=1)
    stages = initial.plan.stages
    proxy = search.proxy.score(stages)
    root = Candidate(0, stages, None, "initial", 0, proxy, initial.plan, initial.packing, None)
    search.candidates.append(root)
    search.visited.add(root.canonical)
    bottleneck = search.bottlenecks(root)

    def relieving(proposal: Any) -> bool:
        changed = bottleneck.intersection(proposal.changed)
        return any(relieves(stages[b], proposal.stages, search.costs.span) for b in changed)

    shortlist = search.shortlist(root)
    merges = [e.proposal for e in shortlist if e.proposal.move.startswith("merge")]
    # The instance exercises the rule: a merge changes the bottleneck but lengthens it.
    assert merges and all(bottleneck.intersection(p.changed) for p in merges)
    assert not any(relieving(p) for p in merges)
    assert [e.relieves_bottleneck for e in shortlist] == [relieving(e.proposal) for e in shortlist]
    keys = [e.score.key(relieving(e.proposal), e.proposal.stages) for e in shortlist]
    assert keys == sorted(keys)


def test_a_one_evaluation_budget_leaves_no_room_for_the_latency_root(lenet_beam: tuple) -> None:
    problem, _ = lenet_beam
    selection = BeamPipelineSolver(queue_evaluations=1).solve(problem).selection
    assert selection is not None
    assert selection.queue_evaluations == (1, 1)
    assert selection.latency_root.startswith("not a candidate: the queue evaluation budget (1)")


def test_the_queue_budget_stops_the_search(lenet_beam: tuple) -> None:
    problem, _ = lenet_beam
    selection = BeamPipelineSolver(queue_evaluations=3).solve(problem).selection
    assert selection is not None
    assert selection.queue_evaluations == (3, 3)
    assert selection.termination == "queue evaluation budget (3) spent"


def test_the_search_says_what_it_waits_for_after_the_initialization(lenet_beam: tuple) -> None:
    # Without these ticks the CLI's heartbeat repeated "placing the stages on the mesh"
    # while a 100,000-task graph's latency schedule took minutes (docs/benchmarks.md,
    # "Twenty-second pass").
    problem, _ = lenet_beam
    seen: list[str] = []
    with reporting(lambda phase, detail: seen.append(detail)):
        BeamPipelineSolver(queue_evaluations=3).solve(problem)
    after = seen[seen.index("partition: placing the stages on the mesh") + 1 :]
    method = DEFAULT_METHOD[LatencyProblem]
    assert after[:2] == [
        "select: scoring the initialized schedule's neighbours",
        f"select: the latency schedule ({method}) of the second root",
    ]


def _chain(n: int) -> ComputeGraph:
    return ComputeGraph(
        names=tuple(f"t{i}" for i in range(n)),
        cost=np.full(n, 50, dtype=np.int64),
        edge_src=np.arange(n - 1),
        edge_dst=np.arange(1, n),
        edge_bytes=np.full(n - 1, 16, dtype=np.int64),
        name="chain",
    )


def test_a_target_without_a_queue_model_stops_a_comparison() -> None:
    problem = PipelineProblem(_chain(6), GenericTarget(4), 2)
    with pytest.raises(
        SelectionStoppedError,
        match=r"^pipeline selection stopped: candidate 0 \(stages \[\[0, 3, 2\], \[3, 6, 2\]\]\) "
        r"lacks timing \(static support unknown\): chain candidate 0: target generic:4 has no "
        r"step timing",
    ):
        solve(problem)


def test_one_operation_group_skips_the_queue_comparison() -> None:
    problem = PipelineProblem(_chain(1), GenericTarget(4), 2)
    solution = solve(problem)
    assert solution.selection is not None
    assert solution.selection.termination == "single candidate: one operation group"
    assert solution.selection.queue_evaluations[0] == 0
    assert solution.objective == solution.plan.interval_ns  # type: ignore[union-attr]


def test_periodic_diagnostics_agree_with_the_selection_queue_estimate() -> None:
    result = compile_pipeline(prepare(LENET, "arch-a"), 2, periodic=True)
    assert result.periodic is not None and result.solution.selection is not None
    cost = result.solution.selection.selected.cost
    assert cost is not None
    # The diagnostic's estimate with the memory controller's FIFO is the selection's run.
    queue = result.periodic["memory_controller"]
    assert (queue["interval_ns"], queue["alternative_tie_interval_ns"]) == (
        cost.index_interval_ns,
        cost.reversed_interval_ns,
    )
    assert result.periodic["pipeline"]["selection_queue"]["estimate_ns"] == result.interval_ns


def test_the_initial_method_compiles_on_a_generic_target(tmp_path: Path) -> None:
    model = tmp_path / "chain.json"
    graph = {
        "format": "raptor-graph",
        "version": 1,
        "name": "chain",
        "tasks": [{"name": f"t{i}", "cost": 50} for i in range(6)],
        "edges": [{"src": f"t{i}", "dst": f"t{i + 1}", "bytes": 16} for i in range(5)],
    }
    model.write_text(json.dumps(graph))
    args = ["compile", str(model), "--target", "generic:4", "--pipeline", "2", "--json"]
    failed = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "a")])
    assert failed.exit_code == 2
    assert failed.stderr.splitlines()[-1].startswith("error: pipeline selection stopped")
    done = CliRunner().invoke(
        main, [*args, "--pipeline-method", "initial", "--out", str(tmp_path / "b")]
    )
    assert done.exit_code == 0, done.output
    summary = json.loads(done.stdout)
    assert (summary["interval_source"], summary["selection"]["solver"]) == (
        "analytic proxy",
        "initial",
    )
    # A generic target writes no program: no prediction, and the reason says why.
    assert summary["program_interval_ns"] is None
    assert "needs a pimsim-nn target" in summary["program_interval_reason"]
