"""Undoing broadcasting in hand-written backward passes."""

from __future__ import annotations

import torch


def sum_to_shape(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum `grad` over the dimensions that broadcasting added or stretched to reach it from `shape`.

    E.g. an input of shape (3, 1, 5) used as (2, 3, 4, 5) gets its gradient summed over dim 0 and
    (keeping it) dim 1.
    """
    if grad.shape == shape:
        return grad
    lead = grad.dim() - len(shape)
    if lead:
        grad = grad.sum(dim=tuple(range(lead)))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(dim=stretched, keepdim=True) if stretched else grad
