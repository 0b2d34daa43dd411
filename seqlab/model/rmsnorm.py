"""Root-mean-square layer norm (Zhang & Sennrich, 2019)."""

from __future__ import annotations

import torch
from torch import nn


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    # at least float32 for the mean of squares; float64 input stays float64 (gradcheck)
    return torch.promote_types(dtype, torch.float32)


def _mean_square(x_c: torch.Tensor, eps: float) -> torch.Tensor:
    """mean(x^2) + eps over the last dimension, kept as size 1: the square of the norm's divisor."""
    return x_c.pow(2).mean(-1, keepdim=True).add_(eps)


class _RMSNormFunction(torch.autograd.Function):
    """y = x / sqrt(mean(x^2) + eps) * weight, with a hand-written backward.

    Autograd through the elementary ops would keep x^2, the mean, the rsqrt and the normalised x
    alive for the backward pass; this keeps only x and the per-row 1/rms.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        x_c = x.to(_compute_dtype(x.dtype))
        inv_rms = torch.rsqrt(_mean_square(x_c, eps))  # (..., 1)
        ctx.save_for_backward(x, weight, inv_rms)
        return (x_c * inv_rms).mul_(weight).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        x, weight, inv_rms = ctx.saved_tensors
        x_hat = x.to(inv_rms.dtype) * inv_rms
        g = grad_out.to(inv_rms.dtype)
        grad_weight = None
        if ctx.needs_input_grad[1]:
            grad_weight = (g * x_hat).reshape(-1, x.shape[-1]).sum(0).to(weight.dtype)
        grad_x = None
        if ctx.needs_input_grad[0]:
            g_hat = g * weight  # gradient w.r.t. x_hat
            # d x_hat / d x = inv_rms * (I - x_hat x_hat^T / d), applied in place on x_hat's buffer
            dot = (g_hat * x_hat).mean(-1, keepdim=True)
            grad_x = x_hat.mul_(dot).neg_().add_(g_hat).mul_(inv_rms).to(x.dtype)
        return grad_x, grad_weight, None


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """(..., d) -> (..., d); computed in (at least) float32, returned in x's dtype."""
    return _RMSNormFunction.apply(x, weight, eps)


class RMSNorm(nn.Module):
    """RMSNorm over the last dimension with a learned gain `weight` (d_model,) initialised to ones."""

    def __init__(self, d_model: int, eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model)"""
        return rms_norm(x, self.weight, self.eps)

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        """The divisor of each row, sqrt(mean(x^2) + eps), (..., 1), in at least float32 (the
        ``ln_final.scale`` tap: TransformerLens's ``hook_scale``)."""
        return _mean_square(x.to(_compute_dtype(x.dtype)), self.eps).sqrt()

    def frozen(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """The norm with its divisor held at ``scale`` (from :meth:`scale` of another input): linear in
        x, so the parts of a sum go through it one by one (direct logit attribution)."""
        return (x / scale).to(x.dtype) * self.weight

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"


class Identity(nn.Module):
    """Stands in for a norm layer in the no-normalisation ablation (no parameters)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        """No norm divides by 1: ones (..., 1)."""
        return torch.ones((*x.shape[:-1], 1), dtype=torch.promote_types(x.dtype, torch.float32), device=x.device)

    def frozen(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return x

