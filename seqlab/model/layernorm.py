"""Layer normalisation (Ba, Kiros & Hinton, 2016), the norm of the original Transformer."""

from __future__ import annotations

import torch
from torch import nn


class _LayerNormFunction(torch.autograd.Function):
    """y = x_hat * weight + bias with x_hat = (x - mean) / sqrt(var + eps); hand-written backward.

    Autograd through the elementary ops would keep the centred x, its square, the variance, the
    rsqrt and x_hat for the backward pass; this keeps x_hat and the per-row 1/std only. With
    g = dL/dy * weight (the gradient w.r.t. x_hat) and d the row size:
        dL/dx = (g - mean(g) - x_hat * mean(g * x_hat)) / std
    """

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        compute = torch.promote_types(x.dtype, torch.float32)
        x_hat = x.to(compute, copy=True)
        x_hat.sub_(x_hat.mean(-1, keepdim=True))
        inv_std = torch.rsqrt((x_hat * x_hat).mean(-1, keepdim=True).add_(eps))
        x_hat.mul_(inv_std)
        ctx.save_for_backward(x_hat, weight, inv_std)
        ctx.has_bias = bias is not None
        ctx.bias_dtype = None if bias is None else bias.dtype
        y = x_hat * weight if weight is not None else x_hat.clone()
        if bias is not None:
            y.add_(bias)
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        x_hat, weight, inv_std = ctx.saved_tensors
        g = grad_out.to(x_hat.dtype)
        d = x_hat.shape[-1]
        grad_weight = grad_bias = None
        if weight is not None and ctx.needs_input_grad[1]:
            grad_weight = (g * x_hat).reshape(-1, d).sum(0).to(weight.dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = g.reshape(-1, d).sum(0).to(ctx.bias_dtype)
        grad_x = None
        if ctx.needs_input_grad[0]:
            g_hat = g * weight if weight is not None else g.clone()
            dot = (g_hat * x_hat).mean(-1, keepdim=True)
            grad_x = g_hat.sub_(g_hat.mean(-1, keepdim=True)).sub_(x_hat * dot).mul_(inv_std).to(grad_out.dtype)
        return grad_x, grad_weight, grad_bias, None


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
               eps: float = 1e-5) -> torch.Tensor:
    """(..., d) -> (..., d): (x - mean) / sqrt(var + eps) * weight + bias over the last dimension.

    var is the biased variance (divide by d, not d - 1), as in the paper and torch.
    Worked example (d = 2, eps = 0, weight 1, bias 0): x = [1, 3] has mean 2, var 1 -> [-1, 1].
    Statistics are taken in at least float32; the result has x's dtype.
    """
    return _LayerNormFunction.apply(x, weight, bias, eps)


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

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        """The divisor of each row, sqrt(var(x) + eps), (..., 1), in at least float32."""
        x_c = x.to(torch.promote_types(x.dtype, torch.float32))
        centred = x_c - x_c.mean(-1, keepdim=True)
        return (centred * centred).mean(-1, keepdim=True).add_(self.eps).sqrt()

    def frozen(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """The norm with its divisor held at ``scale``, without the bias: linear in x (the parts of a
        sum go through it one by one; the bias is a part of its own)."""
        return ((x - x.mean(-1, keepdim=True)) / scale).to(x.dtype) * self.weight

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}, bias={self.bias is not None}"
