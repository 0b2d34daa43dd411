"""trace_recurrence: the answer, computed by the labs when asked."""

from __future__ import annotations

from seqlab.labs.recurrence import scalar_recurrence


def answer() -> list[float]:
    """h_3 of h_t = tanh(0.5 h_{t-1} + x_t) from h_0 = 0 on the inputs 1, 0, -1."""
    return [float(scalar_recurrence(0.5, [1.0, 0.0, -1.0])[-1])]
