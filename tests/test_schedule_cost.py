"""`estimate_realized_schedule_cost`: the typed whole-schedule query of pipeline selection."""

from __future__ import annotations

import math

import pytest

from raptor_cp.periodic import schedule_cost
from raptor_cp.periodic.steps import Compute, Recv, Send, Step
from raptor_cp.targets.base import (
    AVAILABLE,
    SUPPORTED,
    UNAVAILABLE_COST,
    UNKNOWN_SUPPORT,
    UNSUPPORTED,
    RealizedScheduleCost,
)
from raptor_cp.targets.registry import resolve_target

PRODUCER_CONSUMER: list[list[Step]] = [
    [Compute(1000), Send(1, 64)],
    [Recv(0, 64), Compute(700)],
]


def test_pim_target_costs_a_realized_schedule_with_both_tie_orders() -> None:
    cost = resolve_target("arch-a").estimate_realized_schedule_cost(
        PRODUCER_CONSUMER + [[] for _ in range(166)], "pair", recurrence=True
    )
    assert (cost.status, cost.reasons, cost.static_support) == (AVAILABLE, (), SUPPORTED)
    assert cost.index_interval_ns is not None and cost.reversed_interval_ns is not None
    larger = max(cost.index_interval_ns, cost.reversed_interval_ns, max(cost.core_work_ns))
    assert cost.estimate_ns == math.ceil(larger) >= 1000
    assert cost.memory_service_ns == 0
    assert cost.recurrence is not None
    # The witness cycle's per-core delays total the ratio times its distance.
    total = sum(cost.recurrence.core_delay_ns.values())
    assert total == pytest.approx(cost.recurrence.ratio_ns * cost.recurrence.distance)


@pytest.mark.parametrize(("spec", "why"), [("generic:2", "no step timing"), ("ipu-mk1", "bulk")])
def test_targets_without_a_queue_model_answer_unavailable(spec: str, why: str) -> None:
    cost = resolve_target(spec).estimate_realized_schedule_cost(PRODUCER_CONSUMER, "pair")
    assert (cost.status, cost.static_support, cost.estimate_ns) == (
        UNAVAILABLE_COST,
        UNKNOWN_SUPPORT,
        None,
    )
    assert why in cost.reasons[0] and spec in cost.reasons[0]


def test_a_send_without_its_receive_is_an_unsupported_static_form() -> None:
    cost = resolve_target("arch-a").estimate_realized_schedule_cost(
        [[Compute(5), Send(1, 8)], [Compute(5)]] + [[] for _ in range(166)], "broken"
    )
    assert (cost.status, cost.static_support) == (UNAVAILABLE_COST, UNSUPPORTED)
    assert cost.reasons[0].startswith("unsupported static form: broken: core 0 sends 1 time(s)")


def test_a_core_above_the_extraction_bound_is_unavailable_not_truncated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schedule_cost, "MAX_CORE_STEPS", 1)
    cost = resolve_target("arch-a").estimate_realized_schedule_cost(
        PRODUCER_CONSUMER + [[] for _ in range(166)], "pair"
    )
    assert cost.reasons == ("pair: core 0 has 2 steps, above the extraction bound of 1 per core",)


def test_estimate_is_the_maximum_of_the_known_terms_rounded_up() -> None:
    cost = RealizedScheduleCost(AVAILABLE, (), SUPPORTED, 100.25, 100.5, (90, 99), 40, (5, 5), 7)
    assert (cost.estimate_ns, cost.binding) == (101, "queue_reversed")
    assert RealizedScheduleCost.unavailable("why").binding is None
