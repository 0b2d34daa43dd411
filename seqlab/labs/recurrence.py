"""The one-number RNN h_t = tanh(a h_{t-1} + x_t), and why gradients through time vanish or explode.

dh_T/dh_0 is a product of T factors a * tanh'(.), so with |factor| < 1 it shrinks like 0.5^10 and
with |factor| > 1 it grows like 2^10.
"""

from __future__ import annotations

import numpy as np


def scalar_recurrence(a: float, xs, h0: float = 0.0) -> np.ndarray:
    """States h_1..h_T of h_t = tanh(a * h_{t-1} + x_t). xs: (T,) -> (T,)."""
    xs = np.asarray(xs, dtype=np.float64)
    if xs.ndim != 1:
        raise ValueError(f"scalar_recurrence: xs must be 1-D (T,), got shape {xs.shape}")
    states = np.empty_like(xs)
    h = float(h0)
    for t, x in enumerate(xs):
        h = np.tanh(a * h + x)
        states[t] = h
    return states


def repeated_factor(factor: float, steps: int) -> float:
    """factor multiplied into itself `steps` times: the size of a gradient after `steps` identical
    Jacobian factors (0.5 -> 0.0009765625 after 10, 2 -> 1024)."""
    if steps < 0:
        raise ValueError(f"repeated_factor: steps must be >= 0, got {steps}")
    product = 1.0
    for _ in range(steps):
        product *= factor
    return product


def scalar_recurrence_backward(a: float, xs, h0: float = 0.0) -> dict[str, object]:
    """Gradients of the final state h_T: d h_T / d a, d h_T / d x_t (T,), d h_T / d h0.

    Walks backward keeping dh = d h_T / d h_t; each step multiplies by the local Jacobian
    tanh'(pre_t) * a = (1 - h_t^2) * a, which is exactly the repeated factor.
    """
    xs = np.asarray(xs, dtype=np.float64)
    states = scalar_recurrence(a, xs, h0)
    previous = np.concatenate([[float(h0)], states[:-1]])   # h_{t-1} for each t
    dh = 1.0
    da = 0.0
    dxs = np.zeros_like(xs)
    for t in reversed(range(len(xs))):
        dpre = dh * (1.0 - states[t] ** 2)
        da += dpre * previous[t]   # the same a is used at every step: its gradient sums over time
        dxs[t] = dpre
        dh = dpre * a
    return {"a": da, "xs": dxs, "h0": dh}
