"""Token embedding lookup table."""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.checks import check_in_range
from seqlab.model.init import trunc_normal_


def _position_words(shape: tuple[int, ...]):
    """Where an entry of ids of this shape sits, in words: "position 7", "row 2, position 7"."""
    def words(where: tuple[int, ...]) -> str:
        if len(where) == 1 or (len(where) == 2 and shape[0] == 1):
            return f"position {where[-1]}"
        if len(where) == 2:
            return f"row {where[0]}, position {where[1]}"
        return f"index {where}"
    return words


def check_token_ids(ids: torch.Tensor, vocab_size: int, name: str | None = None) -> None:
    """The one check of token ids against a vocabulary: a TypeError for non-integer ids, a
    ValueError naming the first id outside [0, vocab_size) and where it sits, e.g. "prompt: token
    id 50 at position 1 is outside the vocabulary [0, 50)" (``name`` first, when given). On the GPU
    path the check is queued on the device instead (seqlab.model.checks.check_in_range)."""
    if ids.dtype in (torch.bool,) or ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"{name + ': ' if name else ''}token ids must be an integer tensor, got dtype {ids.dtype}")
    check_in_range(ids, vocab_size, f"{name + ': ' if name else ''}token id", f"the vocabulary [0, {vocab_size})",
                   _position_words(tuple(ids.shape)))


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
