"""Two different gradient-clipping rules; they are not interchangeable.

- Global-norm clipping rescales ALL gradients by one factor min(1, threshold / ||g||), where ||g|| is
  the L2 norm over every entry of every array. The update keeps its direction.
- Coordinate-wise clipping clamps each entry to [-threshold, threshold] independently. Large entries
  shrink more than small ones, so the direction changes.
"""

from __future__ import annotations

import numpy as np


def global_norm(grads) -> float:
    """L2 norm over every entry of an array or a list of arrays."""
    arrays = [grads] if isinstance(grads, np.ndarray) else list(grads)
    return float(np.sqrt(sum(float(np.sum(np.asarray(g, dtype=np.float64) ** 2)) for g in arrays)))


def clip_global_norm(grads, threshold: float):
    """Rescale by min(1, threshold / ||g||). grads: an ndarray or a list of ndarrays.

    Returns (clipped, norm): clipped has the input's form (array or list of arrays), norm is the
    global norm before clipping. [3, 4] with threshold 2 -> ([1.2, 1.6], 5.0).
    """
    if not threshold > 0:
        raise ValueError(f"clip_global_norm: threshold must be > 0, got {threshold}")
    norm = global_norm(grads)
    scale = min(1.0, threshold / norm) if norm > 0 else 1.0
    if isinstance(grads, np.ndarray):
        return grads.astype(np.float64) * scale, norm
    return [np.asarray(g, dtype=np.float64) * scale for g in grads], norm


def clip_coordinatewise(grad, threshold: float) -> np.ndarray:
    """Clamp every entry to [-threshold, threshold] on its own (changes the direction)."""
    if not threshold > 0:
        raise ValueError(f"clip_coordinatewise: threshold must be > 0, got {threshold}")
    return np.clip(np.asarray(grad, dtype=np.float64), -threshold, threshold)
