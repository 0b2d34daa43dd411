"""trace_causal_count: the answer, computed by the labs when asked."""

from __future__ import annotations

from seqlab.labs.attention import causal_mask


def answer() -> list[float]:
    """How many (query, key) pairs a causal mask of 3 positions lets through."""
    return [float(causal_mask(3).sum())]
