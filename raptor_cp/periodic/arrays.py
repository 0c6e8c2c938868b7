"""What the compiled loops read: flat, C-contiguous int64 arrays.

`raptor_cp.periodic._queue_core`, `raptor_cp.periodic._rendezvous_core` and
`raptor_cp.periodic._ranked_order` take their inputs through the buffer
protocol and reject anything else.
"""

from __future__ import annotations

import numpy as np


def int64_array(values: object) -> np.ndarray:
    """``values`` as a flat C-contiguous int64 array (no copy when it already is one)."""
    return np.ascontiguousarray(values, dtype=np.int64)
