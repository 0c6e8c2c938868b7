"""pimsim-nn chips: config reader (`config`), the target (`target`) and what it prices.

``raptor_cp.targets.pim`` re-exports what callers outside the package use, so
``from raptor_cp.targets.pim import PimTarget`` keeps working.
"""

from raptor_cp.targets.pim.config import PimConfig, load_pim_config
from raptor_cp.targets.pim.target import PimTarget

__all__ = ["PimConfig", "PimTarget", "load_pim_config"]
