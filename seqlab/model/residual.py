"""The residual connection around a sublayer, with its norm before (pre-norm) or after (post-norm).

    pre-norm:   x + sublayer(norm(x))      (GPT-2, Llama; the stack then ends with one final norm)
    post-norm:  norm(x + sublayer(x))      ("Attention Is All You Need")

Every Transformer layer in seqlab is a chain of these: the LM's TransformerBlock (attention, then the
feed-forward), and the seq2seq encoder (self-attention, feed-forward) and decoder layers (causal
self-attention, cross-attention, feed-forward).

Example: with norm = lambda h: 2 * h and sublayer = lambda h: h + 1, x = 1 gives
pre-norm 1 + (2 + 1) = 4 and post-norm 2 * (1 + 2) = 6.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from seqlab.model.config import NORM_POSITIONS


def check_norm_position(norm_position: str) -> str:
    """Return norm_position if it is "pre" or "post", else raise a ValueError saying so."""
    if norm_position not in NORM_POSITIONS:
        raise ValueError(f"unknown norm_position {norm_position!r}; expected 'pre' or 'post'")
    return norm_position


def residual(x: torch.Tensor, norm: Callable[[torch.Tensor], torch.Tensor],
             sublayer: Callable[[torch.Tensor], torch.Tensor], norm_position: str) -> torch.Tensor:
    """x + sublayer(norm(x)) for norm_position "pre", norm(x + sublayer(x)) for "post"."""
    if norm_position == "pre":
        return x + sublayer(norm(x))
    return norm(x + sublayer(x))
