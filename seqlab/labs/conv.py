"""1-D and 2-D convolution (valid cross-correlation, stride 1) with hand-written backward passes.

    conv1d: x (C_in, L), w (C_out, C_in, K), b (C_out,) -> (C_out, L - K + 1)
    conv2d: x (C_in, H, W), w (C_out, C_in, KH, KW), b (C_out,) -> (C_out, H - KH + 1, W - KW + 1)

The same filter is applied at every position (weight sharing), so its gradient is the SUM over
positions of (output gradient there) x (input window there); `filter_gradient_contributions_1d`
returns the per-position terms so the sum can be seen and checked.
"""

from __future__ import annotations

import numpy as np


def _check(x, w, b, spatial: int):
    x, w = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    if x.ndim != 1 + spatial or w.ndim != 2 + spatial:
        raise ValueError(f"conv{spatial}d: x must be {1 + spatial}-D and w {2 + spatial}-D, got {x.shape}, {w.shape}")
    if w.shape[1] != x.shape[0]:
        raise ValueError(f"conv{spatial}d: filter expects {w.shape[1]} input channels, x has {x.shape[0]}")
    if any(k > n for k, n in zip(w.shape[2:], x.shape[1:])):
        raise ValueError(f"conv{spatial}d: kernel {w.shape[2:]} larger than input {x.shape[1:]}")
    b = np.zeros(w.shape[0]) if b is None else np.asarray(b, dtype=np.float64)
    if b.shape != (w.shape[0],):
        raise ValueError(f"conv{spatial}d: bias must have shape ({w.shape[0]},), got {b.shape}")
    return x, w, b


def conv1d(x, w, b=None) -> np.ndarray:
    """x (C_in, L), w (C_out, C_in, K), b (C_out,) or None -> (C_out, L - K + 1)."""
    x, w, b = _check(x, w, b, 1)
    K = w.shape[2]
    out = np.empty((w.shape[0], x.shape[1] - K + 1))
    for t in range(out.shape[1]):
        out[:, t] = np.einsum("oik,ik->o", w, x[:, t:t + K]) + b
    return out


def conv1d_backward(x, w, dout) -> dict[str, np.ndarray]:
    """Gradients of sum(dout * conv1d(x, w, b)): {"x": (C_in, L), "w": (C_out, C_in, K), "b": (C_out,)}."""
    x, w, _ = _check(x, w, None, 1)
    K = w.shape[2]
    dx = np.zeros_like(x)
    for t in range(dout.shape[1]):
        dx[:, t:t + K] += np.einsum("o,oik->ik", dout[:, t], w)
    dw = filter_gradient_contributions_1d(x, dout, K).sum(axis=0)   # shared filter: sum over positions
    return {"x": dx, "w": dw, "b": dout.sum(axis=1)}


def filter_gradient_contributions_1d(x, dout, kernel_size: int) -> np.ndarray:
    """The filter gradient from each output position t: dout[:, t] outer x[:, t:t+K].

    Returns (L_out, C_out, C_in, K); the filter's gradient is the sum over the first axis.
    """
    x = np.asarray(x, dtype=np.float64)
    return np.stack([np.einsum("o,ik->oik", dout[:, t], x[:, t:t + kernel_size]) for t in range(dout.shape[1])])


def conv2d(x, w, b=None) -> np.ndarray:
    """x (C_in, H, W), w (C_out, C_in, KH, KW), b (C_out,) or None -> (C_out, H - KH + 1, W - KW + 1)."""
    x, w, b = _check(x, w, b, 2)
    KH, KW = w.shape[2:]
    out = np.empty((w.shape[0], x.shape[1] - KH + 1, x.shape[2] - KW + 1))
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j] = np.einsum("oikl,ikl->o", w, x[:, i:i + KH, j:j + KW]) + b
    return out


def conv2d_backward(x, w, dout) -> dict[str, np.ndarray]:
    """Gradients of sum(dout * conv2d(x, w, b)): {"x", "w", "b"} shaped like the inputs."""
    x, w, _ = _check(x, w, None, 2)
    KH, KW = w.shape[2:]
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    for i in range(dout.shape[1]):
        for j in range(dout.shape[2]):
            window = x[:, i:i + KH, j:j + KW]
            dw += np.einsum("o,ikl->oikl", dout[:, i, j], window)   # every position adds to the one filter
            dx[:, i:i + KH, j:j + KW] += np.einsum("o,oikl->ikl", dout[:, i, j], w)
    return {"x": dx, "w": dw, "b": dout.sum(axis=(1, 2))}
