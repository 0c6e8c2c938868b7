"""Every exception raptor-cp raises on purpose.

A `RaptorError` is a user-facing problem: the CLI prints its message as one line
and exits with status 2. Anything else escaping the library is a bug.
"""

from __future__ import annotations


class RaptorError(Exception):
    """Base class of the errors a user can act on (bad input, impossible budgets)."""


class InvalidInputError(RaptorError):
    """A workload file is malformed: bad JSON/ONNX, missing field, unknown operator."""


class UnsupportedOperatorError(InvalidInputError):
    """A model uses an operator raptor-cp does not know how to lower."""


class InvalidConfigError(RaptorError):
    """A hardware configuration is malformed or names an unknown preset."""


class CapabilityUnavailableError(InvalidConfigError):
    """The target lacks an optional capability the analysis needs (exchange on a PIM chip, say)."""

    def __init__(self, message: str, *, target: str, capability: str) -> None:
        super().__init__(message)
        self.target = target
        self.capability = capability


class TimingUnavailableError(RaptorError):
    """The periodic model cannot time a program: the diagnostic reports ``unavailable``.

    Raised when the target has no complete phase timing, a time lies outside the
    supported numeric range, or a form is not supported by the target's
    communication lowering (scheduling.md, "Periodic dependency diagnostics").
    Diagnostics turn it into an explicit ``unavailable`` report, not an error.
    """


class InvalidInstanceError(RaptorError):
    """A graph or problem violates a structural rule (cycle, negative cost, oversized task)."""


class ScheduleViolationError(RaptorError):
    """A schedule breaks a rule of `check`: the message names the task and the rule."""


class NotFoundWithinBudgetError(RaptorError):
    """A bounded heuristic search ended without a solution; this is not a proof of infeasibility."""


class ProvedInfeasibleError(RaptorError):
    """An exact solver proved that no solution exists."""
