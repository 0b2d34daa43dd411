"""Token embedding lookup table."""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.checks import check_in_range
from seqlab.model.init import trunc_normal_


def check_token_ids(ids: torch.Tensor, vocab_size: int) -> None:
    """Raise a ValueError naming the first id outside [0, vocab_size) and where it sits."""
    if ids.dtype in (torch.bool,) or ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"token ids must be an integer tensor, got dtype {ids.dtype}")
    check_in_range(ids, vocab_size, "token id", f"the vocabulary [0, {vocab_size})")


class Embedding(nn.Module):
    """Maps integer ids (...) to vectors (..., embedding_dim) by row lookup in `weight`.

    Init: truncated normal(0, 1) cut at +-3.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        trunc_normal_(self.weight, std=1.0)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        """(...) int -> (..., embedding_dim)"""
        check_token_ids(token_ids, self.num_embeddings)
        return self.weight[token_ids]

    def extra_repr(self) -> str:
        return f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}"
