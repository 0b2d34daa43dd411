"""Which attention backend can run which inputs.

Every backend takes ``fn(Q, K, V, mask=None, *, causal=False)``: Q (..., heads, n, d), K and V
(..., kv_heads, m, d), mask bool (True = may attend). reference and chunked take any input but
only broadcast K/V (1 or all heads); sdpa takes any input and grouped-query K/V; flash takes no
mask and needs CUDA or the CPU interpreter. A dispatcher asks before calling and falls back:

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

