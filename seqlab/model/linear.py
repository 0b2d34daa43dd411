"""Bias-free linear layer."""

from __future__ import annotations

import math

import torch
from torch import nn

from seqlab.model.init import trunc_normal_


class Linear(nn.Module):
    """y = x W^T with `weight` of shape (out_features, in_features) and no bias.

    Init: truncated normal, std = sqrt(2 / (in + out)), cut at +-3 std.
    """

    def __init__(self, in_features: int, out_features: int, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        trunc_normal_(self.weight, std=math.sqrt(2.0 / (in_features + out_features)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., in_features) -> (..., out_features)"""
        return x @ self.weight.t()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"
