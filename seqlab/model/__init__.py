"""Transformer LM components written from scratch (no torch.nn layers or torch.nn.functional)."""

from seqlab.model.activations import silu, softmax
from seqlab.model.attention import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention
from seqlab.model.block import TransformerBlock
from seqlab.model.config import ModelConfig, default_d_ff
from seqlab.model.embedding import Embedding
from seqlab.model.ffn import SiLUFeedForward, SwiGLU
from seqlab.model.kv_cache import KVCache
from seqlab.model.layernorm import LayerNorm
from seqlab.model.linear import Linear
from seqlab.model.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from seqlab.model.recurrent import GRUCell, LSTMCell, RecurrentLayer, RNNCell
from seqlab.model.rmsnorm import RMSNorm
from seqlab.model.rope import RotaryPositionalEmbedding
from seqlab.model.transformer import TransformerLM

__all__ = [
    "Embedding",
    "GRUCell",
    "KVCache",
    "LSTMCell",
    "LayerNorm",
    "LearnedPositionalEmbedding",
    "Linear",
    "ModelConfig",
    "MultiHeadSelfAttention",
    "RMSNorm",
    "RNNCell",
    "RecurrentLayer",
    "RotaryPositionalEmbedding",
    "SiLUFeedForward",
    "SinusoidalPositionalEncoding",
    "SwiGLU",
    "TransformerBlock",
    "TransformerLM",
    "causal_mask",
    "default_d_ff",
    "scaled_dot_product_attention",
    "silu",
    "softmax",
]
