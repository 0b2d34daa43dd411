"""Gradient clipping by the global L2 norm."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

CLIP_EPS = 1e-6


@torch.no_grad()
def clip_grad_norm(parameters: Iterable[torch.nn.Parameter], max_l2_norm: float) -> torch.Tensor:
    """Scale all gradients in place so their joint L2 norm is at most `max_l2_norm`.

    The norm is taken over every parameter's gradient together (parameters without .grad are
    skipped). When it exceeds the limit each gradient is multiplied by max / (norm + 1e-6).
    Returns the norm before clipping (0-dim float32 tensor; 0 when there are no gradients).

    No host-device synchronisation: "does the norm exceed the limit?" is not asked on the host
    (`if total_norm > max` would wait for the GPU); the factor is computed on the device as
    where(norm > max, max / (norm + eps), 1) and every gradient is multiplied by it (by exactly 1
    when there is nothing to clip).

    Clipping off: pass `max_l2_norm=math.inf`. The norm is still computed and returned (the trainer
    logs it), but no gradient is touched; the test is `math.isinf` on the Python float, so it costs
    no device sync and saves one multiply per parameter tensor every step.
    """
    if max_l2_norm < 0:
        raise ValueError(f"max_l2_norm must be >= 0, got {max_l2_norm}")
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    squares = torch.stack([g.detach().float().pow(2).sum().to(grads[0].device) for g in grads])
    total_norm = squares.sum().sqrt()
    if math.isinf(max_l2_norm):
        return total_norm
    scale = torch.where(total_norm > max_l2_norm, max_l2_norm / (total_norm + CLIP_EPS), 1.0)
    for g in grads:
        g.mul_(scale.to(g.dtype))
    return total_norm
