"""Budget-aware admission of exchange plans: rank by estimate, let the exact encoder decide.

The reference is the seed "Exchange footprint model" (sections "Admission" and
"Wider shortlist experiment"). A compile for an IPU must produce an exchange
table whose busiest tile fits ``exchange_table_budget_bytes``. Candidates pass
three stages, each cut to a shortlist by the same budget-aware ranking:

1. *Expanded plans* (`CandidateSource.expanded`): complete, cheaply placed
   plans, one per (planning configuration, tile budget), priced by the footprint
   estimate. Per planning configuration at most `AdmissionLimits.expanded_plan_finalists`
   (16) go on.
2. *Placement finalists*: at most `AdmissionLimits.placement_finalists` (4)
   of those within the fragment limit, plus the minimum-storage alternative,
   are placed and mapped by the list scheduler (`CandidateSource.place`),
   giving a second plan each. Both the cheap plan and the scheduled one stay
   candidates. (A plan the exact encoder may not take is not worth placing
   before the candidates it may; exhaustion still places it.)
3. *Exchange-schedule finalists*: at most `AdmissionLimits.exchange_schedule_finalists`
   (1), plus its minimum-storage alternative, are encoded exactly
   (`CandidateSource.encode`). A plan is admitted only when its exact busiest
   tile fits the budget: an estimate alone never admits or rejects anything.

Ranking (`rank`). Candidates whose estimated busiest tile (with structural
sharing) fits the budget come first, ordered by execution score
``execution_ns + penalty * estimate_bytes`` (the storage penalty is in ns per
estimated byte); then candidates over budget, smallest predicted excess first
(score, then label, then key on ties). So when every estimate is over budget
the smallest one is still encoded and checked exactly: the attempt is retained,
not abandoned.

Shortlists (`shortlist`) take the first ``limit`` ranked candidates and add the
one with the smallest estimated storage when it is not among them (the first
in rank order on ties) -- not the one with the fewest raw transfer fragments,
which the seed found a poor proxy for encoded bytes.

Effort safeguard: a candidate whose plan has a stored phase with more than
`AdmissionLimits.fragment_limit` transfer pieces (TX and RX fragments: every
send and every receive, split at the ISA limit; the seed's 16,384) is never
sent to the exact encoder (nor placed before exhaustion); it stays in the
report with that reason, and each attempt lists the candidates the limit kept
from placement or encoding.

Storage-penalty retries. `admit` runs one attempt per penalty in
`AdmissionLimits.penalties` until one admits a plan. Work is keyed by a
canonical key -- a fingerprint of the lowering and the placement, so two
candidates that would produce the same plan are one candidate, whatever
options named them -- and is never repeated across attempts: candidate
generation happens once (it does not depend on the penalty), every placement
and exact encoding is memoized by key, a retry re-ranks the known estimates,
and its shortlists skip candidates already placed (for placement) or already
rejected by the exact encoder (for encoding), so each retry spends its limits
on new work. The seed's builds repeated the planning search and near-identical
oversized schedules on every retry; here a retry that finds nothing new does
nothing.

Exhaustion. When no penalty attempt admits a plan, admission falls back to the
whole candidate space (`AdmissionLimits.exhaustive`, on by default): it
encodes every candidate within the fragment limit not encoded yet, smallest
estimate first, then places every expanded candidate not placed yet and
encodes each new plan, and stops at the first exact table that fits. So
admission finds a plan whenever `exhaustive_search` over the same candidates
does, and otherwise reports that none was found within the budget.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from raptor_cp.errors import InvalidConfigError
from raptor_cp.exchange.encoder import FootprintError

DEFAULT_PENALTIES = (0, 16, 256)
"""Storage penalties of the retries, ns per estimated table byte (the seed's 0, 16, 256)."""
DEFAULT_FRAGMENT_LIMIT = 16_384
"""Transfer pieces in one phase above which a plan is not encoded exactly (the seed's)."""

Progress = Callable[[str, str], None]
"""``progress(stage, detail)``: told before each placement (``placing``) and after each
placement, skip and exact encoding (sources also report lowerings and expanded plans)."""


@dataclass(frozen=True)
class AdmissionLimits:
    """How much work admission may do (module docstring)."""

    expanded_plan_finalists: int = 16
    placement_finalists: int = 4
    exchange_schedule_finalists: int = 1
    fragment_limit: int = DEFAULT_FRAGMENT_LIMIT
    penalties: tuple[int, ...] = DEFAULT_PENALTIES
    exhaustive: bool = True
    """Fall back to the whole candidate space when no attempt admits a plan."""

    def __post_init__(self) -> None:
        counts = (
            self.expanded_plan_finalists,
            self.placement_finalists,
            self.exchange_schedule_finalists,
            self.fragment_limit,
        )
        if min(counts) < 1:
            raise InvalidConfigError(
                "exchange admission: finalist limits and fragment_limit must be >= 1"
            )
        if not self.penalties or min(self.penalties) < 0:
            raise InvalidConfigError(
                "exchange admission: penalties must be a non-empty list of ns per byte >= 0"
            )


@dataclass(frozen=True)
class PlanRecord:
    """One candidate exchange plan, summarised (the plan itself stays with its source)."""

    key: str
    """Canonical key: equal keys mean equal plans."""
    label: str
    """Human-readable name, e.g. ``lanes=64 block=159744 tiles=736 spread``."""
    configuration: str
    """Planning configuration (the group of the expanded-plan limit)."""
    placement: str
    """``spread`` (cheap constructive placement) or the list scheduler's name."""
    tile_budget: int
    execution_ns: int
    """Bulk-synchronous time of the plan (compute, syncs and exchange)."""
    estimate_bytes: int
    """Estimated busiest tile with structural sharing: what ranking uses."""
    estimate_unshared_bytes: int
    fragments: int
    """Transfer pieces (sends and receives after splitting at the ISA limit)."""
    largest_phase: tuple[int, int] = (0, 0)
    """``(phase, pieces)`` of the stored phase with the most transfer pieces."""
    phase_estimates: tuple[tuple[int, int], ...] = ()
    """``(phase, estimated active-row bytes)`` per stored phase."""
    details: dict[str, object] = field(default_factory=dict, compare=False)
    """Facts for the report (lanes, block bytes, tasks, tiles used...)."""
    estimate_s: float = field(default=0.0, compare=False)
    """Wall time of the footprint estimate (benchmarks only; never in reports)."""


@dataclass(frozen=True)
class ExactRecord:
    """The exact encoder's answer for one plan."""

    exact_bytes: int
    """Busiest tile with sharing: what admission compares with the budget."""
    exact_unshared_bytes: int
    phase_bytes: tuple[tuple[int, int], ...]
    encode_s: float = field(default=0.0, compare=False)


class CandidateSource(Protocol):
    """Where admission gets candidates, placements and exact encodings."""

    def expanded(self) -> Sequence[PlanRecord]:
        """Every expanded plan; called once per admission."""
        ...

    def place(self, record: PlanRecord) -> PlanRecord | str:
        """The scheduler's plan for ``record``'s configuration and tile budget, or why none."""
        ...

    def encode(self, record: PlanRecord) -> ExactRecord:
        """Encode ``record``'s plan exactly."""
        ...


def over_fragment_limit(record: PlanRecord, limits: AdmissionLimits) -> bool:
    """True when one of ``record``'s phases has more pieces than the fragment limit."""
    return record.largest_phase[1] > limits.fragment_limit


def fragment_reason(record: PlanRecord, limits: AdmissionLimits) -> str:
    """Why ``record`` is not encoded (`over_fragment_limit`)."""
    phase, pieces = record.largest_phase
    return (
        f"not encoded: phase {phase} has {pieces} fragments, over the limit {limits.fragment_limit}"
    )


def storage_order(record: PlanRecord) -> tuple[object, ...]:
    """Smallest estimated table first (exhaustion's order)."""
    return (record.estimate_bytes, record.execution_ns, record.label, record.key)


def score(record: PlanRecord, penalty: int) -> int:
    """Execution score with the storage penalty: ``execution_ns + penalty * estimate``."""
    return record.execution_ns + penalty * record.estimate_bytes


def _rank_key(record: PlanRecord, budget: int, penalty: int) -> tuple[object, ...]:
    excess = record.estimate_bytes - budget
    if excess <= 0:
        return (0, 0, score(record, penalty), record.label, record.key)
    return (1, excess, score(record, penalty), record.label, record.key)


def rank(records: Iterable[PlanRecord], budget: int, penalty: int) -> list[PlanRecord]:
    """Predicted fits by score first, then the rest by predicted excess (module docstring)."""
    return sorted(records, key=lambda r: _rank_key(r, budget, penalty))


def shortlist(ranked: Sequence[PlanRecord], limit: int) -> list[PlanRecord]:
    """The first ``limit`` of ``ranked`` plus the minimum-estimated-storage alternative."""
    chosen = list(ranked[:limit])
    if ranked:
        smallest = min(ranked, key=lambda r: r.estimate_bytes)
        if smallest not in chosen:
            chosen.append(smallest)
    return chosen


def ranking_reason(record: PlanRecord, budget: int, penalty: int) -> str:
    """Why ``record`` ranks where it does, for reports."""
    if record.estimate_bytes <= budget:
        return (
            f"predicted to fit ({record.estimate_bytes} <= {budget} B); score "
            f"{score(record, penalty)} ns = {record.execution_ns} ns + {penalty} ns/B x "
            f"{record.estimate_bytes} B"
        )
    return f"predicted over budget by {record.estimate_bytes - budget} B"


@dataclass
class Attempt:
    """One storage-penalty attempt: who was shortlisted, what was new, what was admitted."""

    penalty: int
    placement_finalists: list[str] = field(default_factory=list)
    exchange_schedule_finalists: list[str] = field(default_factory=list)
    placements_run: int = 0
    encodings_run: int = 0
    over_fragment_limit: list[str] = field(default_factory=list)
    """Shortlisted or placed candidates the fragment limit kept from placement and exact
    encoding (each reported once, in the first attempt that met it)."""
    admitted: list[str] = field(default_factory=list)
    selected: str | None = None
    note: str = ""


@dataclass
class Exhaustion:
    """The fallback over the whole candidate space (module docstring)."""

    placements_run: int = 0
    encodings_run: int = 0
    encoded: list[str] = field(default_factory=list)
    selected: str | None = None
    note: str = ""


@dataclass
class Admission:
    """The state and outcome of one admission run (`admit`)."""

    budget: int
    limits: AdmissionLimits
    records: dict[str, PlanRecord] = field(default_factory=dict)
    """Every distinct candidate by key, expanded and placed."""
    aliases: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Labels of candidates found equivalent to (same key as) a recorded one."""
    expanded: list[str] = field(default_factory=list)
    placed: dict[str, str] = field(default_factory=dict)
    """Expanded key -> key of its scheduled plan, or the reason placement failed."""
    exact: dict[str, ExactRecord] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    """Latest ranking reason of each candidate."""
    stage: dict[str, str] = field(default_factory=dict)
    """Furthest stage each candidate reached."""
    attempts: list[Attempt] = field(default_factory=list)
    exhaustion: Exhaustion | None = None
    selected: str | None = None
    reported: set[str] = field(default_factory=set)
    """Candidates already reported as over the fragment limit."""

    def admitted(self, key: str) -> bool:
        """True when ``key`` was encoded and its exact busiest tile fits the budget."""
        exact = self.exact.get(key)
        return exact is not None and exact.exact_bytes <= self.budget

    def closest(self) -> str | None:
        """The encoded candidate with the smallest exact table (lowest key on ties)."""
        if not self.exact:
            return None
        return min(self.exact, key=lambda k: (self.exact[k].exact_bytes, k))

    def error(self, key: str) -> float | None:
        """``(estimate - exact) / exact`` of the busiest tile with sharing (None: not encoded)."""
        exact = self.exact.get(key)
        if exact is None or exact.exact_bytes == 0:
            return None
        return (self.records[key].estimate_bytes - exact.exact_bytes) / exact.exact_bytes

    def phase_errors(self, key: str) -> tuple[FootprintError, ...]:
        """Per stored phase, estimated against encoded active-row bytes."""
        exact = self.exact.get(key)
        if exact is None:
            return ()
        estimated = dict(self.records[key].phase_estimates)
        return tuple(FootprintError(p, estimated.get(p, 0), b) for p, b in exact.phase_bytes)

    def decision(self, key: str) -> str:
        """What became of candidate ``key``, in one phrase."""
        if key == self.selected:
            return "selected"
        exact = self.exact.get(key)
        if exact is not None:
            verdict = "<=" if exact.exact_bytes <= self.budget else ">"
            outcome = "admitted" if verdict == "<=" else "rejected"
            return f"{outcome} by the exact encoder ({exact.exact_bytes} {verdict} {self.budget} B)"
        record = self.records[key]
        if over_fragment_limit(record, self.limits):
            return fragment_reason(record, self.limits)
        return {
            "expanded": "not shortlisted for placement",
            "placement": "not shortlisted for exact encoding",
        }[self.stage[key]]


def admit(
    source: CandidateSource,
    budget: int,
    limits: AdmissionLimits,
    progress: Progress | None = None,
) -> Admission:
    """Run admission (module docstring); the result names the selected key, if any.

    Never raises for a budget that nothing meets: the caller reads
    `Admission.selected` (None) and `Admission.closest`.
    """
    if budget < 1:
        raise InvalidConfigError(f"exchange table budget must be >= 1 byte, got {budget}")
    state = Admission(budget, limits)
    tell = _Teller(state, source, progress)
    for record in source.expanded():
        if _remember(state, record):
            state.expanded.append(record.key)
            state.stage[record.key] = "expanded"
    for penalty in limits.penalties:
        attempt = Attempt(penalty)
        state.attempts.append(attempt)
        _attempt(state, tell, attempt)
        if attempt.selected is not None:
            state.selected = attempt.selected
            return state
    if limits.exhaustive:
        state.exhaustion = Exhaustion()
        _exhaust(state, tell, state.exhaustion)
        state.selected = state.exhaustion.selected
    return state


class _Teller:
    """Places and encodes through the source, recording and reporting each step."""

    def __init__(self, state: Admission, source: CandidateSource, progress: Progress | None):
        self.state, self.source = state, source
        self.progress = progress or (lambda stage, detail: None)

    def place(self, record: PlanRecord) -> PlanRecord | str:
        state = self.state
        self.progress(
            "placing",
            f"{record.label}: list scheduler on {record.tile_budget} tiles "
            f"({record.details.get('tasks', '?')} tasks)",
        )
        outcome = self.source.place(record)
        if isinstance(outcome, str):
            state.placed[record.key] = outcome
            self.progress("place", f"{record.label}: {outcome}")
            return outcome
        state.placed[record.key] = outcome.key
        _remember(state, outcome)
        state.stage[outcome.key] = "placement"
        self.progress(
            "place",
            f"{outcome.label}: estimate {outcome.estimate_bytes:,} B, largest phase "
            f"{outcome.largest_phase[1]:,} fragments",
        )
        return outcome

    def encode(self, record: PlanRecord) -> bool:
        """Encode ``record`` exactly; True when it is admitted."""
        state = self.state
        exact = state.exact[record.key] = self.source.encode(record)
        fits = exact.exact_bytes <= state.budget
        error = state.error(record.key)
        self.progress(
            "encode",
            f"{record.label}: exact {exact.exact_bytes:,} B, estimate {record.estimate_bytes:,} B"
            + ("" if error is None else f" ({100 * error:+.1f} %)")
            + (" fits" if fits else f" over {state.budget:,} B"),
        )
        return fits

    def skipped(self, records: Iterable[PlanRecord]) -> list[str]:
        """Report the candidates the fragment limit keeps from encoding, once each."""
        state, keys = self.state, []
        for record in records:
            if record.key in state.reported or not over_fragment_limit(record, state.limits):
                continue
            state.reported.add(record.key)
            keys.append(record.key)
            self.progress("skip", f"{record.label}: {fragment_reason(record, state.limits)}")
        return keys


def _remember(state: Admission, record: PlanRecord) -> bool:
    """Record a candidate; False (and an alias) when its key is already known."""
    known = state.records.get(record.key)
    if known is not None:
        if record.label != known.label and record.label not in state.aliases[record.key]:
            state.aliases[record.key].append(record.label)
        return False
    state.records[record.key] = record
    return True


def _attempt(state: Admission, tell: _Teller, attempt: Attempt) -> None:
    budget, limits, penalty = state.budget, state.limits, attempt.penalty
    records = state.records

    def ranked(keys: Iterable[str]) -> list[PlanRecord]:
        result = rank((records[k] for k in keys), budget, penalty)
        for r in result:
            state.reasons[r.key] = ranking_reason(r, budget, penalty)
        return result

    # Stage 1: per planning configuration, the expanded-plan shortlist.
    groups: dict[str, list[str]] = defaultdict(list)
    for key in state.expanded:
        groups[records[key].configuration].append(key)
    screened = [
        r.key
        for configuration in sorted(groups)
        for r in shortlist(ranked(groups[configuration]), limits.expanded_plan_finalists)
    ]
    # Stage 2: placement of new finalists (already placed ones stay candidates below).
    order = ranked(screened)
    attempt.over_fragment_limit = tell.skipped(order)
    fresh = [r for r in order if r.key not in state.placed and not over_fragment_limit(r, limits)]
    for record in shortlist(fresh, limits.placement_finalists):
        attempt.placement_finalists.append(record.key)
        state.stage[record.key] = "placement"
        tell.place(record)
        attempt.placements_run += 1
    # Stage 3: exact encoding of new finalists among everything placed so far.
    pool = sorted(set(state.placed) | {k for k in state.placed.values() if k in records})
    attempt.over_fragment_limit += tell.skipped(ranked(pool))
    encodable = [
        k for k in pool if k not in state.exact and not over_fragment_limit(records[k], limits)
    ]
    if not encodable:
        attempt.note = "nothing new to encode: every placed candidate was decided or too large"
        return
    finalists = shortlist(ranked(encodable), limits.exchange_schedule_finalists)
    for record in finalists:
        attempt.exchange_schedule_finalists.append(record.key)
        tell.encode(record)
        attempt.encodings_run += 1
    attempt.admitted = [r.key for r in finalists if state.admitted(r.key)]
    if attempt.admitted:
        attempt.selected = attempt.admitted[0]


def _exhaust(state: Admission, tell: _Teller, exhaustion: Exhaustion) -> None:
    """Encode, then place and encode, every remaining candidate until one fits."""
    records, limits = state.records, state.limits

    def encode(record: PlanRecord) -> bool:
        if record.key in state.exact or over_fragment_limit(record, limits):
            return False
        exhaustion.encoded.append(record.key)
        exhaustion.encodings_run += 1
        if tell.encode(record):
            exhaustion.selected = record.key
            return True
        return False

    for record in sorted(records.values(), key=storage_order):
        if encode(record):
            return
    unplaced = [records[k] for k in state.expanded if k not in state.placed]
    for record in sorted(unplaced, key=storage_order):
        state.stage[record.key] = "placement"
        outcome = tell.place(record)
        exhaustion.placements_run += 1
        if not isinstance(outcome, str) and encode(records[outcome.key]):
            return
    tell.skipped(sorted(records.values(), key=storage_order))
    exhaustion.note = "every candidate within the fragment limit was encoded; none fits the budget"
