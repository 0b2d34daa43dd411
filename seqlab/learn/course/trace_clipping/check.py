"""trace_clipping: the answer, computed by the labs when asked."""

from __future__ import annotations

import numpy as np

from seqlab.labs.clipping import clip_global_norm


def answer() -> list[float]:
    """The factor global-norm clipping at 2 multiplies [3, 4] by."""
    clipped, _ = clip_global_norm(np.array([3.0, 4.0]), 2.0)
    return [float(clipped[0] / 3.0)]
