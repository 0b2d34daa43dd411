"""Parameter initialisation: truncated normal by resampling."""

from __future__ import annotations

import torch


@torch.no_grad()
def trunc_normal_(tensor: torch.Tensor, std: float = 1.0, cutoff: float = 3.0) -> torch.Tensor:
    """Fill `tensor` in place with N(0, std^2) restricted to [-cutoff*std, cutoff*std].

    Values outside the range are redrawn (rejection sampling); with a 3-sigma cut only 0.27% of
    draws need a second try, so the loop ends after a few rounds.
    """
    if tensor.device.type == "meta":  # shape-only tensors (e.g. parameter counting) hold no values
        return tensor
    tensor.normal_(0.0, std)
    bound = cutoff * std
    outside = tensor.abs() > bound
    while bool(outside.any()):
        tensor[outside] = torch.empty_like(tensor[outside]).normal_(0.0, std)
        outside = tensor.abs() > bound
    return tensor
