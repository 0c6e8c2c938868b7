"""Hardware targets behind the `SchedulingTarget` protocol."""

from raptor_cp.targets.base import SchedulingTarget

__all__ = ["SchedulingTarget"]
