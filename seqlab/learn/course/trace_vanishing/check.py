"""trace_vanishing: the answer, computed by the labs when asked."""

from __future__ import annotations

from seqlab.labs.recurrence import repeated_factor


def answer() -> list[float]:
    """The product of 10 factors of 0.5, then of 10 factors of 2."""
    return [repeated_factor(0.5, 10), repeated_factor(2.0, 10)]
