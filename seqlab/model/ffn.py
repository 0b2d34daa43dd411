"""Position-wise feed-forward networks: SwiGLU (the LM's default), the plain SiLU ablation, and the
ReLU network of "Attention Is All You Need" (the seq2seq Transformer's default). `make_ffn` builds
any of them by name, for the LM's blocks and the seq2seq encoder and decoder layers alike."""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.activations import relu, silu
from seqlab.model.config import default_d_ff
from seqlab.model.linear import Linear


class _SwiGLUGate(torch.autograd.Function):
    """silu(a) * b in one step; saves only a and b (autograd would also keep sigmoid(a) and silu(a))."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return torch.sigmoid(a).mul_(a).mul_(b)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        a, b = ctx.saved_tensors
        s = torch.sigmoid(a)
        silu_a = a * s
        grad_b = grad_out * silu_a if ctx.needs_input_grad[1] else None
        # d silu(a) / da = s (1 + a (1 - s)) = s + silu(a) (1 - s) = lerp(s, 1, silu(a)): one pass, in
        # s's buffer (1 - s, times silu(a), plus s took three)
        grad_a = s.lerp_(s.new_ones(()), silu_a).mul_(grad_out).mul_(b)
        return grad_a, grad_b


def swiglu_gate(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """silu(a) * b elementwise (same shapes)."""
    return _SwiGLUGate.apply(a, b)


class SwiGLU(nn.Module):
    """w2(silu(w1 x) * w3 x) with w1, w3: d_model -> d_ff and w2: d_ff -> d_model.

    d_ff=None picks about 8/3 * d_model rounded to a multiple of 64.
    """

    def __init__(self, d_model: int, d_ff: int | None = None, device=None, dtype=None):
        super().__init__()
        d_ff = default_d_ff(d_model, "swiglu") if d_ff is None else d_ff
        self.d_model, self.d_ff = d_model, d_ff
        self.w1 = Linear(d_model, d_ff, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, device=device, dtype=dtype)
        self.w3 = Linear(d_model, d_ff, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model)"""
        return self.w2(swiglu_gate(self.w1(x), self.w3(x)))


class _TwoMatrixFeedForward(nn.Module):
    """w2(activation(w1 x)) with w1: d_model -> d_ff and w2: d_ff -> d_model; d_ff=None picks 4 * d_model."""

    kind = ""

    def __init__(self, d_model: int, d_ff: int | None = None, device=None, dtype=None):
        super().__init__()
        d_ff = default_d_ff(d_model, self.kind) if d_ff is None else d_ff
        self.d_model, self.d_ff = d_model, d_ff
        self.w1 = Linear(d_model, d_ff, device=device, dtype=dtype)
        self.w2 = Linear(d_ff, d_model, device=device, dtype=dtype)

    @staticmethod
    def activation(x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_model) -> (..., d_model)"""
        return self.w2(self.activation(self.w1(x)))


class SiLUFeedForward(_TwoMatrixFeedForward):
    """Ablation without gating: w2(silu(w1 x)); d_ff=None picks 4 * d_model."""

    kind, activation = "silu", staticmethod(silu)


class ReLUFeedForward(_TwoMatrixFeedForward):
    """The original Transformer's feed-forward: w2(max(0, w1 x)) (no biases); d_ff=None picks 4 * d_model."""

    kind, activation = "relu", staticmethod(relu)


class NoFeedForward(nn.Module):
    """The feed-forward of an attention-only block (ffn="none"): no parameters, output 0. The block
    skips it (and its norm); tools that read a block's parts see an MLP output of zeros."""

    kind = "none"

    def __init__(self, d_model: int, d_ff: int | None = None, device=None, dtype=None):
        super().__init__()
        self.d_model, self.d_ff = d_model, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


FEED_FORWARDS = {"swiglu": SwiGLU, "silu": SiLUFeedForward, "relu": ReLUFeedForward, "none": NoFeedForward}


def make_ffn(kind: str, d_model: int, d_ff: int | None, device=None, dtype=None) -> nn.Module:
    """"swiglu" -> SwiGLU; "silu" -> SiLUFeedForward; "relu" -> ReLUFeedForward (d_ff=None: each one's
    default); "none" -> NoFeedForward (attention-only blocks).

    Example: make_ffn("relu", 64, None) has w1 (256 x 64) and w2 (64 x 256).
    """
    if kind not in FEED_FORWARDS:
        raise ValueError(f"unknown ffn {kind!r}; expected one of {tuple(FEED_FORWARDS)}")
    return FEED_FORWARDS[kind](d_model, d_ff, device=device, dtype=dtype)
