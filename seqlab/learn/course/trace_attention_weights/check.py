"""trace_attention_weights: the answer, computed by the labs when asked."""

from __future__ import annotations

import numpy as np

from seqlab.labs.attention import attention


def answer() -> list[float]:
    """The weights of q = [1, 0] over the keys [1, 0] and [0, 1] (values 2 and 10)."""
    out = attention(np.array([1.0, 0.0]), np.eye(2), np.array([2.0, 10.0]))
    return [float(w) for w in out["weights"]]
