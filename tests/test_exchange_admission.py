"""Admission policy on hand-made candidates: ranking, shortlists, limits, memo, exact decides.

A `_Source` stands in for the workload: it returns given records, places each
expanded candidate as given and "encodes" a candidate to a given exact size,
counting every call, so the tests see exactly which work admission asked for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from raptor_cp.errors import InvalidConfigError
from raptor_cp.exchange.admission import (
    AdmissionLimits,
    ExactRecord,
    PlanRecord,
    admit,
    rank,
    ranking_reason,
    shortlist,
)
from raptor_cp.reports.exchange_admission import admission_report

BUDGET = 1000


def _record(
    key: str,
    estimate: int,
    execution: int = 100,
    configuration: str = "c0",
    fragments: int = 10,
    placement: str = "spread",
) -> PlanRecord:
    return PlanRecord(
        key=key,
        label=f"{configuration} {key}",
        configuration=configuration,
        placement=placement,
        tile_budget=4,
        execution_ns=execution,
        estimate_bytes=estimate,
        estimate_unshared_bytes=estimate,
        fragments=fragments,
        largest_phase=(0, fragments),
        phase_estimates=((0, estimate),),
    )


@dataclass
class _Source:
    records: list[PlanRecord]
    exact: dict[str, int]
    placed: dict[str, PlanRecord | str] = field(default_factory=dict)
    place_calls: Counter[str] = field(default_factory=Counter)
    encode_calls: Counter[str] = field(default_factory=Counter)
    expanded_calls: int = 0

    def expanded(self) -> Sequence[PlanRecord]:
        self.expanded_calls += 1
        return self.records

    def place(self, record: PlanRecord) -> PlanRecord | str:
        self.place_calls[record.key] += 1
        return self.placed.get(record.key, "no schedule")

    def encode(self, record: PlanRecord) -> ExactRecord:
        self.encode_calls[record.key] += 1
        size = self.exact[record.key]
        return ExactRecord(size, size, ((0, size),))


def _keys(records: Sequence[PlanRecord]) -> list[str]:
    return [r.key for r in records]


# -- ranking and shortlists ----------------------------------------------------


def test_predicted_fits_rank_before_faster_candidates_over_budget() -> None:
    fast_over = _record("fast", 1001, execution=10)
    slow_fit = _record("slow", 1000, execution=900)
    assert _keys(rank([fast_over, slow_fit], BUDGET, 0)) == ["slow", "fast"]


def test_fits_are_ordered_by_execution_score_with_the_storage_penalty() -> None:
    # penalty 0: 100 < 300; penalty 1: 100 + 900 = 1000 > 300 + 100 = 400
    big = _record("big", 900, execution=100)
    small = _record("small", 100, execution=300)
    assert _keys(rank([big, small], BUDGET, 0)) == ["big", "small"]
    assert _keys(rank([big, small], BUDGET, 1)) == ["small", "big"]


def test_smallest_predicted_excess_wins_when_every_estimate_is_over_budget() -> None:
    records = [_record("a", 3000, 1), _record("b", 1200, 999), _record("c", 2000, 5)]
    assert _keys(rank(records, BUDGET, 0)) == ["b", "c", "a"]
    assert ranking_reason(records[1], BUDGET, 0) == "predicted over budget by 200 B"


def test_shortlist_keeps_the_minimum_storage_alternative_not_the_fewest_fragments() -> None:
    # ranked by score: fast (est 900), mid (est 800, fewest fragments), lean (est 500)
    fast = _record("fast", 900, execution=10, fragments=50)
    mid = _record("mid", 800, execution=20, fragments=1)
    lean = _record("lean", 500, execution=30, fragments=40)
    ranked = rank([lean, mid, fast], BUDGET, 0)
    assert _keys(ranked) == ["fast", "mid", "lean"]
    assert _keys(shortlist(ranked, 1)) == ["fast", "lean"]
    assert _keys(shortlist(ranked, 3)) == ["fast", "mid", "lean"]


# -- admission -----------------------------------------------------------------


def test_an_attempt_is_retained_when_every_estimate_is_over_budget() -> None:
    # every estimate exceeds 1000 B, but the smallest is encoded and fits exactly
    records = [_record("a", 1500), _record("b", 1100)]
    source = _Source(records, exact={"a": 1300, "b": 900})
    state = admit(source, BUDGET, AdmissionLimits(placement_finalists=1))
    assert state.selected == "b"
    assert dict(source.encode_calls) == {"b": 1}
    assert state.decision("b") == "selected"


def test_the_exact_encoder_decides_not_the_estimate() -> None:
    # "fit" is predicted to fit but encodes over budget; "over" is predicted over and fits
    records = [_record("fit", 900, execution=10), _record("over", 1100, execution=5)]
    source = _Source(records, exact={"fit": 1200, "over": 700})
    state = admit(source, BUDGET, AdmissionLimits(placement_finalists=1))
    assert [a.exchange_schedule_finalists for a in state.attempts] == [["fit"], ["over"]]
    assert state.selected == "over"
    assert state.decision("fit") == "rejected by the exact encoder (1200 > 1000 B)"


def test_a_rejected_fit_is_followed_by_new_work_in_the_next_penalty_attempt() -> None:
    records = [_record("a", 600, execution=10), _record("b", 500, execution=20)]
    records.append(_record("c", 400, execution=30))
    source = _Source(records, exact={"a": 1200, "b": 900, "c": 1500})
    limits = AdmissionLimits(placement_finalists=1, exchange_schedule_finalists=1)
    state = admit(source, BUDGET, limits)
    # attempt 0 (penalty 0): places a and c (min storage), encodes a and c: both over.
    # attempt 1 (penalty 16): b is new; a and c are decided and not encoded again.
    assert [a.exchange_schedule_finalists for a in state.attempts] == [["a", "c"], ["b"]]
    assert state.selected == "b"
    assert max(source.encode_calls.values()) == 1
    assert max(source.place_calls.values()) == 1


def test_finalist_limits_bound_placement_and_encoding() -> None:
    # two configurations of 10 candidates; estimates descend with execution ascending,
    # so the minimum-storage candidate of each list is its last
    records = [
        _record(f"{c}{i}", 900 - 10 * i - (5 if c == "y" else 0), 100 + i, configuration=c)
        for c in ("x", "y")
        for i in range(10)
    ]
    limits = AdmissionLimits(
        expanded_plan_finalists=2,
        placement_finalists=3,
        exchange_schedule_finalists=1,
        penalties=(0,),
        exhaustive=False,
    )
    source = _Source(records, exact={r.key: 5000 for r in records})
    state = admit(source, BUDGET, limits)
    attempt = state.attempts[0]
    # stage 1 keeps x0, x1, x9 and y0, y1, y9; stage 2 places the best 3 + y9 (min storage)
    assert attempt.placement_finalists == ["x0", "y0", "x1", "y9"]
    assert sum(source.place_calls.values()) == 4
    # stage 3 encodes the best-ranked and the minimum-storage candidate only
    assert attempt.exchange_schedule_finalists == ["x0", "y9"]
    assert sum(source.encode_calls.values()) == 2
    assert state.selected is None


def test_equivalent_and_memoized_work_is_not_repeated_across_penalty_retries() -> None:
    # "dup" has the key of "a": one candidate. "a" and "b" schedule to the same plan "s".
    records = [_record("a", 700, 10), _record("a", 700, 11, configuration="c1")]
    records += [_record("b", 800, 20)]
    scheduled = _record("s", 650, 15, placement="peft")
    source = _Source(
        records, exact={"a": 2000, "b": 2100, "s": 1900}, placed={"a": scheduled, "b": scheduled}
    )
    state = admit(source, BUDGET, AdmissionLimits(placement_finalists=2))
    assert source.expanded_calls == 1
    assert state.aliases["a"] == ["c1 a"]
    assert state.placed == {"a": "s", "b": "s"}
    assert dict(source.place_calls) == {"a": 1, "b": 1}
    assert dict(source.encode_calls) == {"s": 1, "a": 1, "b": 1}
    # the third attempt has nothing new to encode and does nothing
    assert state.attempts[-1].encodings_run == 0
    assert state.attempts[-1].note.startswith("nothing new to encode")
    assert state.selected is None
    assert state.closest() == "s"


def test_the_fragment_limit_keeps_large_plans_from_the_exact_encoder() -> None:
    records = [_record("huge", 100, 10, fragments=50), _record("ok", 200, 20, fragments=5)]
    source = _Source(records, exact={"huge": 100, "ok": 300})
    state = admit(source, BUDGET, AdmissionLimits(fragment_limit=10))
    assert state.selected == "ok"
    assert "huge" not in source.encode_calls
    assert state.decision("huge") == "not encoded: phase 0 has 50 fragments, over the limit 10"
    assert state.attempts[0].over_fragment_limit == ["huge"]


def test_exhaustion_places_and_encodes_what_the_attempts_left_until_a_plan_fits() -> None:
    # One attempt with one placement finalist: "a" is placed (no schedule) and encoded;
    # it does not fit. Exhaustion encodes the others smallest estimate first (b, c: no
    # fit), then places b (no schedule) and c, whose scheduled plan "cs" fits.
    records = [_record("a", 500, 10), _record("b", 600, 20), _record("c", 900, 30)]
    cs = _record("cs", 950, 25, placement="peft")
    source = _Source(records, exact={"a": 1100, "b": 1200, "c": 1300, "cs": 800}, placed={"c": cs})
    limits = AdmissionLimits(placement_finalists=1, exchange_schedule_finalists=1, penalties=(0,))
    state = admit(source, BUDGET, limits)
    assert state.exhaustion is not None
    assert state.exhaustion.encoded == ["b", "c", "cs"]
    assert state.exhaustion.placements_run == 2
    assert state.selected == state.exhaustion.selected == "cs"
    assert max(source.encode_calls.values()) == 1


def test_exhaustion_that_finds_nothing_says_so_and_can_be_turned_off() -> None:
    records = [_record("a", 500, 10), _record("b", 600, 20)]
    source = _Source(records, exact={"a": 1100, "b": 1200})
    state = admit(source, BUDGET, AdmissionLimits(placement_finalists=1))
    assert state.selected is None
    assert state.exhaustion is not None
    assert state.exhaustion.note == (
        "every candidate within the fragment limit was encoded; none fits the budget"
    )
    assert set(source.encode_calls) == {"a", "b"}
    limits = AdmissionLimits(placement_finalists=1, penalties=(0,), exhaustive=False)
    assert admit(_Source(records, exact={"a": 1100, "b": 1200}), BUDGET, limits).exhaustion is None


def test_the_report_gives_every_candidate_its_estimate_exact_error_and_decision() -> None:
    records = [_record("a", 1200, 10), _record("b", 900, 20), _record("c", 950, 30)]
    source = _Source(records, exact={"b": 600, "c": 700})
    limits = AdmissionLimits(placement_finalists=2, exchange_schedule_finalists=2, penalties=(0,))
    report = admission_report(admit(source, BUDGET, limits))
    rows = {c["key"]: c for c in report["candidates"]}  # type: ignore[union-attr]
    assert report["selected"] == "b"
    assert (rows["b"]["estimate_bytes"], rows["b"]["exact_bytes"]) == (900, 600)
    assert rows["b"]["error"] == 0.5
    assert rows["b"]["phase_errors"] == [
        {"phase": 0, "estimate_bytes": 900, "exact_bytes": 600, "error": 0.5}
    ]
    assert rows["b"]["decision"] == "selected"
    assert rows["c"]["decision"] == "admitted by the exact encoder (700 <= 1000 B)"
    assert rows["a"]["decision"] == "not shortlisted for placement"
    assert rows["a"]["exact_bytes"] is None
    assert rows["a"]["ranking"] == "predicted over budget by 200 B"
    assert rows["b"]["ranking"] == (
        "predicted to fit (900 <= 1000 B); score 20 ns = 20 ns + 0 ns/B x 900 B"
    )


def test_limits_below_one_are_rejected() -> None:
    with pytest.raises(InvalidConfigError, match="finalist limits and fragment_limit must be >= 1"):
        AdmissionLimits(placement_finalists=0)
    with pytest.raises(InvalidConfigError, match="penalties must be a non-empty list"):
        AdmissionLimits(penalties=())
    with pytest.raises(InvalidConfigError, match="budget must be >= 1 byte, got 0"):
        admit(_Source([], {}), 0, AdmissionLimits())
