"""Rotary positional embedding (Su et al., 2021), rotating adjacent pairs (2k, 2k+1)."""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.broadcast import broadcast_shapes, sum_to_shape
from seqlab.model.checks import check_positions


def rope_angles(theta: float, dim: int, length: int, *, dtype: torch.dtype = torch.float64,
                device=None) -> torch.Tensor:
    """The angle table (length, dim / 2): position i, pair k -> i * theta^(-2k / dim), computed in
    float64 (large positions keep accurate angles) and returned in ``dtype`` (float64 by default).
    The one builder of these angles: RoPE's cos/sin tables, the sinusoidal positions
    (seqlab.model.positional, theta 10000) and the exact float64 tables of the learn exercises' references."""
    inv_freq = theta ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim)
    return (torch.arange(length, dtype=torch.float64, device=device)[:, None] * inv_freq).to(dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x[2k], x[2k+1]) of x (..., d) by the angle with the given cos/sin (..., d/2)."""
    pairs = x.unflatten(-1, (-1, 2))
    x_even, x_odd = pairs[..., 0], pairs[..., 1]
    if torch.compiler.is_compiling():  # the compiler fuses this form into one loop
        rotated = torch.stack((x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1)
        return rotated.flatten(-2)
    # eager: write both halves straight into the interleaved output (no extra stack copy)
    out = x.new_empty(*broadcast_shapes(x_even.shape, cos.shape), 2)
    torch.mul(x_even, cos, out=out[..., 0]).sub_(x_odd * sin)
    torch.mul(x_even, sin, out=out[..., 1]).add_(x_odd * cos)
    return out.flatten(-2)


class _RotateFunction(torch.autograd.Function):
    """A rotation's backward is the inverse rotation (angle -> -angle); only cos/sin are saved."""

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        ctx.x_shape = x.shape
        return _rotate(x, cos, sin)

    @staticmethod
    def backward(ctx, grad_out):
        cos, sin = ctx.saved_tensors
        # x may have been broadcast against larger position tables
        return sum_to_shape(_rotate(grad_out, cos, -sin), ctx.x_shape), None, None


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x[2k], x[2k+1]) of x (..., d) by the angle whose cos/sin are given.

    cos, sin: (..., d/2), broadcastable against x's leading dims. Differentiable in x only.
    """
    return _RotateFunction.apply(x, cos, sin)


class RotaryPositionalEmbedding(nn.Module):
    """Rotates pair k of a query/key at position i by angle i * theta^(-2k/d_k).

    Position 0 is not rotated. cos/sin tables of shape (max_seq_len, d_k/2) live in
    non-persistent buffers (recomputable, so they are not in the state dict).
    """

    def __init__(self, theta: float, d_k: int, max_seq_len: int, device=None):
        super().__init__()
        if d_k % 2 != 0:
            raise ValueError(f"RoPE needs an even dimension, got d_k={d_k}")
        self.theta, self.d_k, self.max_seq_len = theta, d_k, max_seq_len
        # build in float64 so large positions keep accurate angles, then store float32
        angles = rope_angles(theta, d_k, max_seq_len, device=device)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor | None = None) -> torch.Tensor:
        """x (..., seq, d_k), token_positions (..., seq) ints (default 0..seq-1) -> (..., seq, d_k).

        token_positions must broadcast against x's leading dims (..., seq).
        """
        if x.shape[-1] != self.d_k:
            raise ValueError(f"RoPE expected last dimension d_k={self.d_k}, got shape {tuple(x.shape)}")
        if token_positions is None:
            cos, sin = self.cos_sin_span(0, x.shape[-2], x.dtype)
        else:
            cos, sin = self.cos_sin(token_positions, x.dtype)
        return rotate_pairs(x, cos, sin)

    def cos_sin(self, token_positions: torch.Tensor, dtype: torch.dtype = torch.float32):
        """Tables for the given positions (...) -> cos, sin of shape (..., d_k/2); checks the range."""
        token_positions = torch.as_tensor(token_positions, device=self.cos.device).long()
        check_positions(token_positions, self.max_seq_len, "the rotary embedding")
        return self.cos[token_positions].to(dtype), self.sin[token_positions].to(dtype)

    def cos_sin_span(self, start: int, length: int, dtype: torch.dtype = torch.float32):
        """Tables for the consecutive positions start, ..., start + length - 1 -> (length, d_k/2) each.

        A slice of the tables: no gather, and the range is checked on the host from two ints, so
        nothing waits for the device (the default positions of a training step take this path).
        """
        if start < 0 or start + length > self.max_seq_len:
            raise ValueError(f"token positions {start}..{start + length - 1} are outside "
                             f"[0, max_seq_len={self.max_seq_len}) of the rotary embedding")
        return self.cos[start:start + length].to(dtype), self.sin[start:start + length].to(dtype)

    def extra_repr(self) -> str:
        return f"theta={self.theta}, d_k={self.d_k}, max_seq_len={self.max_seq_len}"
