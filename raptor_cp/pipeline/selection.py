"""Pipeline selection: the evidence of how a schedule was chosen, and the 2.1 % rule.

Every pipeline solver returns a `PipelineSelection` (the evidence
``reports/pipeline_selection.json`` serializes): the candidates it evaluated,
each with its stages, search parent, proxy, placed plan and the target's
`RealizedScheduleCost`; the proposals it attempted; the beam of each round;
the termination; the budgets used; phase times; and the `Decision`.

`near_equivalence` is the seeds' final policy (scheduling.md, "Default
throughput selection"): the candidate with the lowest (larger) estimate must
separate from the initialized schedule. Its *ties* are the candidates whose
estimate is within the margin of it (``e <= best / 0.979``); the comparison
band is ``[min(ties) / 1.021, max(ties) / 0.979]``; when the initialized
schedule's estimate falls inside the band, the initialized schedule is kept
("close alternatives retain the initialized schedule"), otherwise the best
one is selected. The 2.1 % margin is a policy heuristic, not an accuracy
bound. Exact rational arithmetic, so the decision is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from raptor_cp.problems import Stage
from raptor_cp.targets.base import RealizedScheduleCost

if TYPE_CHECKING:
    from raptor_cp.pipeline.initial import InitialPipeline
    from raptor_cp.pipeline.plan import PipelinePlan
    from raptor_cp.pipeline.proxy import ProxyScore

MARGIN = Fraction(21, 1000)
"""The near-equivalence margin (2.1 %)."""


@dataclass(frozen=True, eq=False)
class Candidate:
    """One placed schedule the search built (index 0: the initialized schedule)."""

    index: int
    """Evaluation index: the order candidates were built in."""
    stages: tuple[Stage, ...]
    parent: int | None
    """The candidate whose neighbourhood proposed this one (None for the initial)."""
    move: str
    round: int
    """The search round that built it (0: initialization)."""
    proxy: ProxyScore | None
    plan: PipelinePlan
    packing: tuple[dict[str, object], ...]
    """Per stage: the constructive packing's evidence."""
    cost: RealizedScheduleCost | None
    """The target's evidence; None when the queue comparison was skipped."""
    relieves_bottleneck: bool | None = None
    """Whether its move relieved a bottleneck stage of its parent, the shortlist's tie
    guidance (`raptor_cp.pipeline.proxy.relieves`); None for a root."""

    @property
    def canonical(self) -> tuple[tuple[int, int, int], ...]:
        return tuple((s.first, s.stop, s.cores) for s in self.stages)

    @property
    def estimate_ns(self) -> int | None:
        return None if self.cost is None else self.cost.estimate_ns

    def rank(self) -> tuple[object, ...]:
        """Deterministic order: estimate, stage/budget vector, physical core order, index."""
        return (
            self.estimate_ns,
            self.canonical,
            tuple(self.plan.schedule.stage or ()),
            self.index,
        )


@dataclass(frozen=True)
class Attempt:
    """One proposal the search tried to build, and what happened to it."""

    round: int
    parent: int
    move: str
    stages: tuple[tuple[int, int, int], ...]
    outcome: str
    """``evaluated``, ``duplicate placement of candidate k`` or ``packing failed: ...``."""
    candidate: int | None = None


@dataclass(frozen=True)
class Decision:
    """The selected candidate and the policy evidence behind it."""

    selected: int
    best: int | None
    """The candidate with the lowest estimate (None without a comparison)."""
    ties: tuple[int, ...]
    band_ns: tuple[Fraction, Fraction] | None
    rule: str


def near_equivalence(candidates: Sequence[Candidate], initial: int = 0) -> Decision:
    """Apply the 2.1 % rule to ``candidates`` (every one has an estimate; module docstring)."""
    ranked = sorted(candidates, key=lambda c: c.rank())
    best = ranked[0]
    assert best.estimate_ns is not None
    top = Fraction(best.estimate_ns) / (1 - MARGIN)
    ties = [c for c in ranked if c.estimate_ns is not None and c.estimate_ns <= top]
    low = Fraction(min(c.estimate_ns or 0 for c in ties)) / (1 + MARGIN)
    high = Fraction(max(c.estimate_ns or 0 for c in ties)) / (1 - MARGIN)
    reference = next(c for c in candidates if c.index == initial)
    assert reference.estimate_ns is not None
    indices = tuple(c.index for c in ties)
    if best.index == initial:
        return Decision(
            initial, best.index, indices, (low, high), "the initialized schedule is best"
        )
    if low <= reference.estimate_ns <= high:
        rule = (
            f"candidate {best.index} does not separate from the initialized schedule "
            f"({reference.estimate_ns} ns within [min(ties)/1.021, max(ties)/0.979]): kept"
        )
        return Decision(initial, best.index, indices, (low, high), rule)
    rule = (
        f"candidate {best.index} separates from the initialized schedule "
        f"({reference.estimate_ns} ns outside [min(ties)/1.021, max(ties)/0.979])"
    )
    return Decision(best.index, best.index, indices, (low, high), rule)


@dataclass(frozen=True, eq=False)
class PipelineSelection:
    """How a pipeline solver chose its schedule (see the module docstring)."""

    solver: str
    initial: InitialPipeline
    candidates: tuple[Candidate, ...]
    decision: Decision
    attempts: tuple[Attempt, ...] = ()
    rounds: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...] = ()
    """Per round: (round, the beam's parents, the candidates it evaluated)."""
    termination: str = ""
    queue_evaluations: tuple[int, int] = (0, 0)
    """(used, budget)."""
    constructive_packings: tuple[int, int] = (0, 0)
    """(used, budget)."""
    phase_times_s: dict[str, float] = field(default_factory=dict)
    work: dict[str, int] = field(default_factory=dict)
    latency_root: str = ""
    """What became of the latency schedule as a one-stage candidate (``candidate k`` or
    why it is not one; `raptor_cp.pipeline.latency_candidate`); empty when the search
    did not run."""

    @property
    def selected(self) -> Candidate:
        return next(c for c in self.candidates if c.index == self.decision.selected)

    def candidate_of(self, plan: PipelinePlan) -> Candidate:
        """The candidate whose placed plan is ``plan`` (the emitted one may differ from
        `selected` after a backend rejection, `raptor_cp.emit.backend`)."""
        return next(c for c in self.candidates if c.plan is plan)

    def backend_order(self) -> list[Candidate]:
        """The costed candidates in the order the backend should try them.

        The seeds ("Default throughput selection"): a candidate the backend rejects
        is discarded and selection runs again among the remaining costed
        candidates with the same policy, the initialized schedule (or, once it is
        gone, the first remaining candidate) being the reference. The policy only
        depends on the remaining set, so the whole order is computed here by
        applying `near_equivalence` repeatedly: ``O(C² log C)`` for ``C`` costed
        candidates (at most the 32 queue evaluations). The first entry is
        `selected`. Without queue estimates (one candidate, or the ``initial``
        solver) the selected candidate is the only costed one.
        """
        remaining = [c for c in self.candidates if c.estimate_ns is not None]
        if self.selected not in remaining:
            return [self.selected]
        order: list[Candidate] = []
        while remaining:
            reference = min(c.index for c in remaining)
            chosen = near_equivalence(remaining, reference).selected
            order.append(next(c for c in remaining if c.index == chosen))
            remaining = [c for c in remaining if c.index != chosen]
        return order
