"""`generic:P`: P identical cores for task-graph research instances.

Zero communication and unlimited resident-weight capacity by default; a
``ns_per_byte`` makes every transfer between distinct cores cost
``ceil(bytes * ns_per_byte)`` (the classic HEFT model with unit bandwidth).
Matrix, vector and move work cost one nanosecond per multiply-accumulate or element.
Transfers are uniform, so schedulers need ``O(P)`` memory and P may go up to
`raptor_cp.limits.MAX_CORES`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raptor_cp.errors import CapabilityUnavailableError, InvalidConfigError
from raptor_cp.limits import MAX_INTEGER, check_cores, integer_text
from raptor_cp.targets.base import (
    UNLIMITED_CAPACITY,
    FixedWork,
    MatrixWork,
    MoveWork,
    RealizedScheduleCost,
    RecurrenceRequest,
    TransferTerms,
    VectorWork,
    WeightTiling,
    Work,
)

if TYPE_CHECKING:
    from raptor_cp.periodic.steps import Step


@dataclass(frozen=True)
class GenericTarget:
    """``cores`` identical cores on a line; see the module docstring for costs."""

    num_cores: int
    ns_per_byte: int = 0

    def __post_init__(self) -> None:
        if self.num_cores < 1:
            raise InvalidConfigError(f"generic target needs at least 1 core, got {self.num_cores}")
        check_cores(self.num_cores, f"generic:{self.num_cores}")
        if self.ns_per_byte < 0:
            raise InvalidConfigError(f"generic target: negative ns_per_byte {self.ns_per_byte}")
        if self.ns_per_byte > MAX_INTEGER:
            raise InvalidConfigError(
                f"generic target: ns_per_byte {integer_text(self.ns_per_byte)} is above 2^53"
            )

    @classmethod
    def parse(cls, spec: str) -> GenericTarget:
        """Parse ``generic:P`` or ``generic:P:ns_per_byte``."""
        parts = spec.split(":")
        try:
            if parts[0] != "generic" or len(parts) not in (2, 3):
                raise ValueError
            return cls(*(int(p) for p in parts[1:]))
        except ValueError:
            raise InvalidConfigError(
                f"bad generic target {spec!r}: expected generic:P or generic:P:NS_PER_BYTE "
                "with integers"
            ) from None

    def with_cores(self, cores: int) -> GenericTarget:
        """``--cores``: ``generic:cores`` with the same transfer price."""
        return dataclasses.replace(self, num_cores=cores)

    @property
    def name(self) -> str:
        suffix = f":{self.ns_per_byte}" if self.ns_per_byte else ""
        return f"generic:{self.num_cores}{suffix}"

    @property
    def cores(self) -> int:
        return self.num_cores

    def hops(self, src: int, dst: int) -> int:
        return abs(src - dst)

    def coordinates(self, core: int) -> tuple[int, int]:
        return (0, core)

    def capacity(self, core: int) -> int:
        return UNLIMITED_CAPACITY

    def weight_tiling(self, height: int, width: int, bits: int) -> WeightTiling:
        return WeightTiling(row_slices=(height,), column_blocks=(width,), crossbars_per_block=(0,))

    def execution_ns(self, work: Work) -> int:
        if isinstance(work, FixedWork):
            return work.ns
        if isinstance(work, MatrixWork):
            return work.mvms * work.rows * work.cols
        if isinstance(work, VectorWork | MoveWork):
            return work.elements
        raise TypeError(f"unknown work {work!r}")

    def transfer_ns(self, src: int, dst: int, nbytes: int, direct: bool = False) -> int:
        """``ceil(bytes × ns_per_byte)`` between distinct cores (no endpoint memory to omit)."""
        return 0 if src == dst else self._distinct_transfer_ns(nbytes, direct)

    def _distinct_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        return math.ceil(nbytes * self.ns_per_byte)

    def transfer_terms(self, cores: Sequence[int]) -> TransferTerms:
        """The uniform price as a constant per transfer.

        Raises
        ------
        CapabilityUnavailableError
            In a subclass that reprices `transfer_ns` without repricing this too: its
            prices are not known in table form, and guessing them would misprice.
        """
        if not self.uniform_transfers:
            raise CapabilityUnavailableError(
                f"{self.name}: {type(self).__name__} reprices transfer_ns but gives no "
                "transfer_terms, which stage placement prices with",
                target=self.name,
                capability="transfer terms",
            )
        return TransferTerms(None, None, 1, self._distinct_transfer_ns)

    def mean_transfer_ns(self, nbytes: int, direct: bool = False) -> int:
        return 0 if self.num_cores == 1 else self._distinct_transfer_ns(nbytes, direct)

    def max_transfer_ns(self, nbytes: int) -> int:
        """The uniform price; a subclass that reprices transfers gets the exact maximum."""
        if self.uniform_transfers:
            return self.mean_transfer_ns(nbytes)
        cores = range(self.num_cores)
        return max(self.transfer_ns(a, b, nbytes) for a in cores for b in cores)

    @property
    def uniform_transfers(self) -> bool:
        """True, unless a subclass reprices `transfer_ns` (research targets in tests do)."""
        return type(self).transfer_ns is GenericTarget.transfer_ns

    def global_read_ns(self, nbytes: int) -> int:
        return 0

    def global_write_ns(self, nbytes: int) -> int:
        return 0

    @property
    def warnings(self) -> tuple[str, ...]:
        return ()

    def step_timing(self) -> None:
        """None: whole transfers only, no phase prices (periodic reports are ``unavailable``)."""
        return None

    def exchange(self) -> None:
        """None: not a bulk-synchronous exchange machine."""
        return None

    def estimate_realized_schedule_cost(
        self,
        programs: Sequence[Sequence[Step]],
        name: str,
        recurrence: RecurrenceRequest = False,
        baseline_service_ns: int = 0,
    ) -> RealizedScheduleCost:
        """Unavailable: generic cores have no step timing to run a queue model with."""
        return RealizedScheduleCost.unavailable(
            f"{name}: target {self.name} has no step timing (generic cores price whole "
            "transfers only), so it has no queue model of a realized schedule"
        )

    def instruction_frontend(self) -> None:
        """None: no instruction format is modelled for this target."""
        return None

    def describe(self) -> dict[str, object]:
        return {
            "kind": "generic",
            "name": self.name,
            "cores": self.num_cores,
            "ns_per_byte": self.ns_per_byte,
            "capacity": "unlimited",
        }
