"""Elementwise and row-wise nonlinearities: SiLU and a numerically stable softmax."""

from __future__ import annotations

import torch


class _SiLUFunction(torch.autograd.Function):
    """silu(x) = x * sigmoid(x); the backward recomputes sigmoid from x so only x is saved."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        # d/dx [x s(x)] = s + x s (1 - s) = s (1 + x (1 - s))
        return grad_out * s * (1 + x * (1 - s))


def silu(x: torch.Tensor) -> torch.Tensor:
    """SiLU / swish: x * sigmoid(x), elementwise, any shape."""
    return _SiLUFunction.apply(x)


class _SoftmaxFunction(torch.autograd.Function):
    """Softmax along `dim` that saves only its output for the backward pass.

    Rows whose entries are all -inf (nothing visible) give all-zero probabilities instead of NaN.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, dim: int) -> torch.Tensor:
        row_max = x.amax(dim, keepdim=True)
        # an all -inf row would give (-inf) - (-inf) = NaN; shifting it by 0 keeps exp() at 0
        row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
        exp = (x - row_max).exp_()
        total = exp.sum(dim, keepdim=True)
        probs = exp.div_(total.clamp_min_(torch.finfo(total.dtype).tiny))
        ctx.dim = dim
        ctx.save_for_backward(probs)
        return probs

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (probs,) = ctx.saved_tensors
        # Jacobian-vector product of softmax: p * (g - <g, p>)
        inner = (grad_out * probs).sum(ctx.dim, keepdim=True)
        return probs * (grad_out - inner), None


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(x - max) / sum(exp(x - max)) along `dim`.

    Subtracting the row maximum keeps exp() <= 1, so logits of magnitude 1e4 give no inf/NaN.
    A row that is entirely -inf returns zeros (used for attention rows with no visible key).
    """
    if x.dim() == 0:
        raise ValueError("softmax needs at least one dimension")
    return _SoftmaxFunction.apply(x, dim % x.dim())
