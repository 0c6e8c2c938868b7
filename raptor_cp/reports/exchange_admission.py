"""The ``reports/exchange_admission.json`` document of an admission run (formatting only).

Every candidate of `raptor_cp.exchange.admission.Admission` with its estimate,
exact table size, largest phase in fragments, estimate error per phase,
furthest stage and decision; the limits, each storage-penalty attempt and the
exhaustion fallback. Deterministic: no wall times, and candidates in (label,
key) order. The fields are listed in docs/exchange.md ("Command line").
"""

from __future__ import annotations

from raptor_cp.exchange.admission import Admission


def admission_report(state: Admission) -> dict[str, object]:
    """The ``reports/exchange_admission.json`` document (deterministic: no wall times)."""
    candidates = []
    for key in sorted(state.records, key=lambda k: (state.records[k].label, k)):
        record = state.records[key]
        exact = state.exact.get(key)
        candidates.append(
            {
                "key": key,
                "label": record.label,
                "equivalent": sorted(state.aliases.get(key, [])),
                "configuration": record.configuration,
                "placement": record.placement,
                "tile_budget": record.tile_budget,
                "execution_ns": record.execution_ns,
                "fragments": record.fragments,
                "largest_phase": {
                    "phase": record.largest_phase[0],
                    "fragments": record.largest_phase[1],
                },
                "estimate_bytes": record.estimate_bytes,
                "estimate_unshared_bytes": record.estimate_unshared_bytes,
                "exact_bytes": None if exact is None else exact.exact_bytes,
                "exact_unshared_bytes": None if exact is None else exact.exact_unshared_bytes,
                "error": _ratio(state.error(key)),
                "phase_errors": [
                    {
                        "phase": e.key,
                        "estimate_bytes": e.estimated,
                        "exact_bytes": e.encoded,
                        "error": _ratio(e.error),
                    }
                    for e in state.phase_errors(key)
                ],
                "stage": state.stage.get(key, "expanded"),
                "placed_as": state.placed.get(key),
                "decision": state.decision(key),
                "ranking": state.reasons.get(key, ""),
                "details": record.details,
            }
        )
    closest = state.closest()
    return {
        "budget_bytes": state.budget,
        "limits": {
            "expanded_plan_finalists": state.limits.expanded_plan_finalists,
            "placement_finalists": state.limits.placement_finalists,
            "exchange_schedule_finalists": state.limits.exchange_schedule_finalists,
            "fragment_limit": state.limits.fragment_limit,
            "penalties_ns_per_byte": list(state.limits.penalties),
            "exhaustive": state.limits.exhaustive,
        },
        "selected": state.selected,
        "closest": closest,
        "attempts": [
            {
                "penalty_ns_per_byte": a.penalty,
                "placement_finalists": a.placement_finalists,
                "exchange_schedule_finalists": a.exchange_schedule_finalists,
                "placements_run": a.placements_run,
                "encodings_run": a.encodings_run,
                "over_fragment_limit": a.over_fragment_limit,
                "admitted": a.admitted,
                "selected": a.selected,
                "note": a.note,
            }
            for a in state.attempts
        ],
        "exhaustion": None
        if state.exhaustion is None
        else {
            "placements_run": state.exhaustion.placements_run,
            "encodings_run": state.exhaustion.encodings_run,
            "encoded": state.exhaustion.encoded,
            "selected": state.exhaustion.selected,
            "note": state.exhaustion.note,
        },
        "candidates": candidates,
    }


def _ratio(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
