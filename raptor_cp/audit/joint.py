"""What splitting pipeline mode costs: the joint CP-SAT optimum against the prefix DP.

The production path prices stages with a packer's curves and partitions over
them. `compare_joint` solves a tiny `JointProblem` both ways: the prefix DP over
``pack``'s curves, and the joint CP-SAT model that decides cuts and every task's
core together. Since each core belongs to one stage, the joint optimum equals
the partition optimum over *exact* packing curves, so the difference (the
*splitting loss*) measures the packer's and the quantized grid's loss, never a
modelling difference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.heuristics.prefix_dp import SPARE_UNITS, initial_partition
from raptor_cp.problems import (
    JointProblem,
    JointSolution,
    PackingProblem,
    PartitionSolution,
    Status,
    check_partition,
)

if TYPE_CHECKING:
    from raptor_cp.models.joint_partition import CpSatJointModel


@dataclass(frozen=True)
class JointComparison:
    """The DP over a packer's curves and the joint optimum of one `JointProblem`."""

    dp: PartitionSolution
    joint: JointSolution
    disagreements: tuple[str, ...]
    """A DP objective below the joint bound (the packer reported a cost no placement
    achieves), or a DP that found nothing where the joint model found a placement."""

    @property
    def splitting_loss(self) -> int | None:
        """DP objective minus the joint optimum, when the joint model proved it."""
        if self.joint.status != Status.OPTIMAL:
            return None
        if self.dp.objective is None or self.joint.objective is None:
            return None
        return self.dp.objective - self.joint.objective


def compare_joint(
    problem: JointProblem,
    pack: Callable[[PackingProblem], int | None],
    model: CpSatJointModel | None = None,
    spare_units: int = SPARE_UNITS,
) -> JointComparison:
    """Run the prefix DP over ``pack``'s curves and the joint model (module docstring)."""
    from raptor_cp.models.joint_partition import CpSatJointModel

    model = model or CpSatJointModel()
    partition = problem.partition_problem(pack)
    dp = initial_partition(partition, spare_units)
    check_partition(partition, dp)
    joint = model.solve(problem)
    found = []
    if dp.objective is not None and joint.bound is not None and dp.objective < joint.bound:
        found.append(f"dp objective {dp.objective} below the joint bound {joint.bound}")
    if dp.stages is None and joint.stages is not None:
        found.append("dp found no partition where the joint model found a placement")
    return JointComparison(dp, joint, tuple(found))
