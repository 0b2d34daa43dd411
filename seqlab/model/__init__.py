"""Transformer LM components written from scratch (no torch.nn layers or torch.nn.functional).

Names load on first use (PEP 562), so importing a light submodule such as ``seqlab.model.config``
(which ``seqlab train --help`` does, for the choices of ``--attention``) does not import torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

_EXPORTS = {
    "silu": "seqlab.model.activations",
    "softmax": "seqlab.model.activations",
    "MultiHeadSelfAttention": "seqlab.model.attention",
    "attention_backend": "seqlab.model.attention",
    "causal_mask": "seqlab.model.attention",
    "scaled_dot_product_attention": "seqlab.model.attention",
    "TransformerBlock": "seqlab.model.block",
    "gpu_path_forced": "seqlab.model.checks",
    "ATTENTIONS": "seqlab.model.config",
    "ModelConfig": "seqlab.model.config",
    "default_d_ff": "seqlab.model.config",
    "Embedding": "seqlab.model.embedding",
    "SiLUFeedForward": "seqlab.model.ffn",
    "SwiGLU": "seqlab.model.ffn",
    "KVCache": "seqlab.model.kv_cache",
    "Linear": "seqlab.model.linear",
    "RMSNorm": "seqlab.model.rmsnorm",
    "RotaryPositionalEmbedding": "seqlab.model.rope",
    "TransformerLM": "seqlab.model.transformer",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
