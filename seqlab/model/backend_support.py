"""Which attention backend can run which inputs.

Every backend has the reference's calling convention, ``fn(Q, K, V, mask=None, *, causal=False)``
with Q (..., heads, n, d), K and V (..., kv_heads, m, d), mask bool (True = may attend), causal =
the n queries are the last n of the m positions; a query row with no visible key gives zeros:

    reference  seqlab.model.attention.scaled_dot_product_attention  (the formula; any input)
    chunked    seqlab.model.chunked_attention.chunked_attention     (cache-blocked, CPU-fast; any input)
    sdpa       seqlab.model.sdpa_attention.sdpa_attention            (torch's fused kernel; any input,
               and grouped-query K/V with fewer heads)
    flash      seqlab.model.flash_attention.flash_attention          (Triton FlashAttention-2; no mask,
               CUDA or the CPU interpreter; grouped-query K/V)

reference and chunked broadcast K/V against Q (a single K/V head serves all heads) but take no
grouped K/V with 1 < kv_heads < heads; expand those first.

A dispatcher asks ``attention_backend_supports(name, device, dtype, has_mask)`` before calling a
backend and falls back: seqlab.model.attention.attention_backend sends flash
with a padding mask (or where it cannot run) to what "auto" picks, sdpa on CUDA:

    >>> attention_backend_supports("flash", "cpu", torch.float32, has_mask=True)
    False
    >>> attention_backend_supports("sdpa", "cpu", torch.bfloat16, has_mask=True)
    True
"""

from __future__ import annotations

import torch

BACKENDS = ("reference", "chunked", "sdpa", "flash")


def _check_name(name: str) -> str:
    if name not in BACKENDS:
        raise ValueError(f"unknown attention backend {name!r}; choose one of {BACKENDS}")
    return name


def attention_backend_supports(name: str, device: torch.device | str, dtype: torch.dtype, has_mask: bool, *,
                               head_dim: int | None = None) -> bool:
    """Whether backend `name` runs attention on `device` in `dtype`, with a mask if `has_mask`.

    reference, chunked and sdpa: any floating dtype on any device, masks included. flash: see
    seqlab.model.flash_attention.flash_supports (no mask; CUDA, or the CPU interpreter in float32).
    head_dim, if given, is checked against flash's limit (256).
    """
    if _check_name(name) == "flash":
        from seqlab.model.flash_attention import flash_supports

        return flash_supports(device, dtype, has_mask, head_dim)
    return dtype.is_floating_point

