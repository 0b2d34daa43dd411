"""Layer normalisation (Ba, Kiros & Hinton, 2016), the norm of the original Transformer."""

from __future__ import annotations

import torch
from torch import nn


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
               eps: float = 1e-5) -> torch.Tensor:
    """(..., d) -> (..., d): (x - mean) / sqrt(var + eps) * weight + bias over the last dimension.

    var is the biased variance (divide by d, not d - 1), as in the paper and torch.
    Worked example (d = 2, eps = 0, weight 1, bias 0): x = [1, 3] has mean 2, var 1 -> [-1, 1].
    Statistics are taken in at least float32; the result has x's dtype.
    """
    compute = torch.promote_types(x.dtype, torch.float32)
    x_c = x.to(compute)
    mean = x_c.mean(-1, keepdim=True)
    centred = x_c - mean
    var = (centred * centred).mean(-1, keepdim=True)
    y = centred * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.to(x.dtype)


class LayerNorm(nn.Module):
    """LayerNorm over the last dimension with a learned gain `weight` (ones) and shift `bias` (zeros).

    bias=False leaves out the shift (no `bias` parameter).
    """

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(d_model, device=device, dtype=dtype)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model)"""
        if x.shape[-1] != self.d_model:
            raise ValueError(f"LayerNorm({self.d_model}) got input of shape {tuple(x.shape)}: the last "
                             f"dimension must be {self.d_model}")
        return layer_norm(x, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}, bias={self.bias is not None}"
