"""Token embedding lookup table."""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.init import trunc_normal_


def check_token_ids(ids: torch.Tensor, vocab_size: int) -> None:
    """Raise a ValueError naming the first id outside [0, vocab_size) and where it sits."""
    if ids.dtype in (torch.bool,) or ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"token ids must be an integer tensor, got dtype {ids.dtype}")
    if ids.numel() == 0:
        return
    bad = (ids < 0) | (ids >= vocab_size)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"token id {int(ids[where])} at index {where} is outside the vocabulary "
            f"[0, {vocab_size})"
        )


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
        if not torch.compiler.is_compiling():  # a data-dependent check would split the compiled graph
            check_token_ids(token_ids, self.num_embeddings)
        return self.weight[token_ids]

    def extra_repr(self) -> str:
        return f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}"
