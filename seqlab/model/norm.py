"""One factory for the normalisation layers the models choose by name.

``make_norm("layernorm", d)`` -> LayerNorm(d, eps=1e-5) (the original Transformer's),
``make_norm("rmsnorm", d)`` -> RMSNorm(d, eps=1e-5) (the LM's default), ``make_norm("none", d)`` ->
Identity() (the no-normalisation ablation). Each model's config says which of these it allows;
``eps`` (added to the variance / mean square) may differ, e.g. 1e-6 for a model brought in from
Hugging Face whose ``rms_norm_eps`` is 1e-6.
"""

from __future__ import annotations

from torch import nn

from seqlab.model.config import NORMS
from seqlab.model.layernorm import LayerNorm
from seqlab.model.rmsnorm import Identity, RMSNorm


def make_norm(kind: str, d_model: int, device=None, dtype=None, *, eps: float = 1e-5) -> nn.Module:
    """The norm layer called ``kind`` (one of seqlab.model.config.NORMS) over the last dimension, d_model wide."""
    if kind == "layernorm":
        return LayerNorm(d_model, eps=eps, device=device, dtype=dtype)
    if kind == "rmsnorm":
        return RMSNorm(d_model, eps=eps, device=device, dtype=dtype)
    if kind == "none":
        return Identity()
    raise ValueError(f"unknown norm {kind!r}; expected one of {NORMS}")
