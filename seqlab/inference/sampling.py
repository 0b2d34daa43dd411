"""Turning next-token logits into a next token: temperature, top-k, nucleus (top-p), greedy.

Worked example, logits ``[2.0, 1.0, 0.0]`` at temperature 1: softmax gives ``[0.665, 0.245,
0.090]``; top_k=2 renormalizes to ``[0.731, 0.269, 0]``; top_p=0.7 keeps the first two tokens
(0.665 < 0.7); temperature 0 is greedy, token 0. top_k 0 (or None) means no top-k filter.
A tiny positive temperature sends every token below the maximum to -inf rather than overflowing
into NaN; temperatures below 1.2e-38 are computed as that number (same distribution).
:func:`check_sampling_args` is the one place the arguments are validated.
"""

from __future__ import annotations

import torch

from seqlab.model import softmax

SMALLEST_TEMPERATURE = torch.finfo(torch.float32).tiny  # 1.2e-38: smaller ones would round to 0 in float32


def check_sampling_args(temperature: float = 1.0, top_p: float = 1.0, top_k: int | None = None) -> None:
    """Raise ValueError naming the first bad argument: temperature >= 0 (0 = greedy),
    top_p in (0, 1], top_k an integer >= 0 or None (0 and None: no top-k filter)."""
    if not temperature >= 0:  # also NaN
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 0:
        raise ValueError(f"top_k must be a positive integer, or 0 for no top-k filter; got {top_k}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


def top_k_mask(logits: torch.Tensor, k: int) -> torch.Tensor:
    """(..., vocab) -> bool mask keeping exactly the k largest logits per row (ties by index order
    of ``torch.topk``). k >= vocab, and k = 0 (no filter), keep everything."""
    check_sampling_args(top_k=k)
    if k == 0 or k >= logits.shape[-1]:
        return torch.ones_like(logits, dtype=torch.bool)
    keep = torch.zeros_like(logits, dtype=torch.bool)
    return keep.scatter(-1, torch.topk(logits, k, dim=-1).indices, True)


def top_p_mask(probs: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus (Holtzman et al. 2020): per row, the smallest set of most probable tokens whose
    cumulative probability is >= p. probs (..., vocab) -> bool mask. The top token is always kept."""
    check_sampling_args(top_p=p)
    if p >= 1.0:
        return torch.ones_like(probs, dtype=torch.bool)
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
    # a token is needed while the mass of the tokens before it is still short of p
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    keep_sorted = mass_before < p
    keep_sorted[..., 0] = True
    return torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)


def next_token_distribution(logits: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0,
                            top_k: int | None = None) -> torch.Tensor:
    """(batch, vocab) logits -> (batch, vocab) probabilities after temperature, top-k, then top-p
    (each filter renormalizes). temperature must be > 0 here (0 means greedy, see sample_next);
    a tiny one gives the top token probability 1 (module docstring)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 for a distribution, got {temperature}")
    check_sampling_args(temperature, top_p, top_k)
    logits = logits.float()
    shifted = logits - logits.amax(dim=-1, keepdim=True)  # <= 0, the top token at exactly 0
    scaled = shifted / max(temperature, SMALLEST_TEMPERATURE)
    if top_k:
        scaled = scaled.masked_fill(~top_k_mask(scaled, top_k), float("-inf"))
    probs = softmax(scaled, dim=-1)
    if top_p < 1.0:
        probs = torch.where(top_p_mask(probs, top_p), probs, torch.zeros_like(probs))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def sample_next(logits: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0,
                top_k: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """(batch, vocab) logits -> (batch,) next ids. temperature 0 = greedy (argmax)."""
    check_sampling_args(temperature, top_p, top_k)
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = next_token_distribution(logits, temperature, top_p, top_k)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
