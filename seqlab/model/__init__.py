"""Transformer LM components written from scratch (no torch.nn layers or torch.nn.functional).

Names load on first use (see seqlab/lazy.py), so ``seqlab.model.config`` (the choice tuples the
training config's parser lists) is importable without torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.model.activations": ("log_softmax", "relu", "silu", "softmax"),
    "seqlab.model.attention": (
        "MultiHeadAttention", "attention_backend", "attention_weights", "causal_mask",
        "scaled_dot_product_attention",
    ),
    "seqlab.model.block": ("TransformerBlock",),
    "seqlab.model.checks": ("gpu_path_forced",),
    "seqlab.model.config": ("ATTENTIONS", "ModelConfig", "default_d_ff"),
    "seqlab.model.embedding": ("Embedding",),
    "seqlab.model.ffn": ("ReLUFeedForward", "SiLUFeedForward", "SwiGLU", "make_ffn"),
    "seqlab.model.kv_cache": ("KVCache", "StaticKVCache"),
    "seqlab.model.layernorm": ("LayerNorm",),
    "seqlab.model.linear": ("Linear",),
    "seqlab.model.positional": ("LearnedPositionalEmbedding", "SinusoidalPositionalEncoding"),
    "seqlab.model.recurrent": ("GRUCell", "LSTMCell", "RecurrentLayer", "RNNCell"),
    "seqlab.model.residual": ("residual",),
    "seqlab.model.rmsnorm": ("RMSNorm",),
    "seqlab.model.rope": ("RotaryPositionalEmbedding",),
    "seqlab.model.taps": ("ActivationCache", "TapPoint", "Taps"),
    "seqlab.model.transformer": ("TransformerLM",),
})
