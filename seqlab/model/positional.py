"""Absolute position information added to token embeddings: fixed sinusoids or a learned table.

Sinusoidal (Vaswani et al., 2017), for position pos and pair index i of a d-dimensional vector:

    PE(pos, 2i)   = sin(pos / 10000^(2i/d))
    PE(pos, 2i+1) = cos(pos / 10000^(2i/d))

Worked example, d = 4: position 1 -> [sin 1, cos 1, sin 0.01, cos 0.01] = [0.841, 0.540, 0.010, 1.000].
Each pair is a clock at its own frequency, from one turn per 2*pi positions (i = 0) down to one
per 2*pi*10000 positions; PE(pos + k) is a fixed rotation of PE(pos) for every pos.
"""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.checks import check_positions
from seqlab.model.init import trunc_normal_
from seqlab.model.rope import rope_angles


def sinusoidal_table(max_seq_len: int, d_model: int, dtype=torch.float32, device=None) -> torch.Tensor:
    """(max_seq_len, d_model) table of the formula above (computed in float64, then cast)."""
    if d_model % 2 != 0:
        raise ValueError(f"sinusoidal positions need an even d_model, got {d_model}")
    angles = rope_angles(10000.0, d_model, max_seq_len, device=device)  # (max_seq_len, d_model/2), float64
    table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)  # interleave sin, cos
    return table.to(dtype)


def _positions(seq_len: int, offset: int, max_seq_len: int, device) -> torch.Tensor:
    if offset + seq_len > max_seq_len:
        raise ValueError(
            f"positions {offset}..{offset + seq_len - 1} exceed max_seq_len={max_seq_len}; "
            "raise max_seq_len in the model config or shorten the sequence"
        )
    return torch.arange(offset, offset + seq_len, device=device)


class _PositionTable(nn.Module):
    """Looks up rows of `self.rows()` (max_seq_len, d_model) for a range or given positions."""

    d_model: int
    max_seq_len: int

    def rows(self) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, seq_len: int, offset: int = 0, token_positions: torch.Tensor | None = None) -> torch.Tensor:
        """(seq_len, d_model) for positions offset..offset+seq_len-1, or (..., d_model) for explicit
        token_positions (...)."""
        table = self.rows()
        if token_positions is not None:
            check_positions(token_positions, self.max_seq_len, "the position table")
            return table[token_positions]
        return table[_positions(seq_len, offset, self.max_seq_len, table.device)]

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_seq_len={self.max_seq_len}"


class SinusoidalPositionalEncoding(_PositionTable):
    """The fixed vectors PE(pos) of the formula above.

    The table is a non-persistent buffer: recomputable, so it is not in the state dict.
    """

    def __init__(self, d_model: int, max_seq_len: int, device=None, dtype=None):
        super().__init__()
        self.d_model, self.max_seq_len = d_model, max_seq_len
        table = sinusoidal_table(max_seq_len, d_model, dtype or torch.get_default_dtype(), device)
        self.register_buffer("table", table, persistent=False)

    def rows(self) -> torch.Tensor:
        return self.table


class LearnedPositionalEmbedding(_PositionTable):
    """A trained vector per position, `weight` (max_seq_len, d_model), truncated-normal std 0.02."""

    def __init__(self, d_model: int, max_seq_len: int, device=None, dtype=None):
        super().__init__()
        self.d_model, self.max_seq_len = d_model, max_seq_len
        self.weight = nn.Parameter(torch.empty(max_seq_len, d_model, device=device, dtype=dtype))
        trunc_normal_(self.weight, std=0.02)

    def rows(self) -> torch.Tensor:
        return self.weight
