"""trace_perplexity: the answer, computed by the labs when asked."""

from __future__ import annotations

import math


def answer() -> list[float]:
    """exp of a mean cross-entropy of 1.0 nat per token."""
    return [math.exp(1.0)]
