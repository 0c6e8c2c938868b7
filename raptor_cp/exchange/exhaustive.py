"""Exhaustive search over admission's candidate space: the reference admission is checked on.

Admission (`raptor_cp.exchange.admission`) places and encodes only
shortlisted candidates. `exhaustive_search` does all the work it could do:
it places every expanded candidate with the list scheduler and encodes every
distinct plan, expanded or placed, whose phases stay within the fragment limit.
A budget can be met by the candidate space exactly when some encoded plan here
fits it, so admission must find a plan in that case (its exhaustion fallback
guarantees it) and report none otherwise. Cost: one placement per expanded
candidate and one exact encoding per distinct plan; small models only.
"""

from __future__ import annotations

from raptor_cp.exchange.admission import (
    AdmissionLimits,
    CandidateSource,
    ExactRecord,
    PlanRecord,
    over_fragment_limit,
)


def exhaustive_search(
    source: CandidateSource, limits: AdmissionLimits
) -> dict[str, tuple[PlanRecord, ExactRecord]]:
    """Every distinct candidate within the fragment limit with its exact encoding, by key."""
    records: dict[str, PlanRecord] = {}
    for record in source.expanded():
        records.setdefault(record.key, record)
    for record in list(records.values()):
        outcome = source.place(record)
        if not isinstance(outcome, str):
            records.setdefault(outcome.key, outcome)
    return {
        key: (record, source.encode(record))
        for key, record in sorted(records.items())
        if not over_fragment_limit(record, limits)
    }


def fitting(results: dict[str, tuple[PlanRecord, ExactRecord]], budget: int) -> list[str]:
    """Keys of the candidates whose exact busiest tile fits ``budget``."""
    return [key for key, (_, exact) in results.items() if exact.exact_bytes <= budget]
