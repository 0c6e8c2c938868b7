"""What the compiled loops read: flat, C-contiguous int64 arrays.

Every compiled loop (`raptor_cp.periodic._queue_core`, `._rendezvous_core`,
`._ranked_order`, `._policy_iteration`, `._event_chain`,
`raptor_cp.heuristics._range_probe`, `raptor_cp.pipeline._stage_placement`) takes
its inputs through the buffer protocol and rejects anything else.
"""

from __future__ import annotations

import numpy as np


def int64_array(values: object) -> np.ndarray:
    """``values`` as a flat C-contiguous int64 array (no copy when it already is one)."""
    return np.ascontiguousarray(values, dtype=np.int64)
