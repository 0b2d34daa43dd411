"""Attention, the formula: softmax(Q K^T / sqrt(d_k)) V, and causal multi-head self-attention.

`scaled_dot_product_attention` below is the reference: the formula as written in "Attention Is All
You Need", vectorised over every batch and head dimension, autograd doing the backward.
`seqlab.model.chunked_attention` computes the same thing in cache-sized pieces (faster on a CPU).
`MultiHeadSelfAttention(..., attention=...)` picks one of them per call:

    "reference"  always the formula below (few, large kernels: what a GPU and torch.compile want)
    "chunked"    always the cache-blocked CPU kernel
    "auto"       chunked on a CPU in eager mode; reference on CUDA, MPS, under torch.compile and on
                 the forced GPU path (seqlab.model.checks.gpu_path_forced)
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seqlab.model.activations import softmax
from seqlab.model.attention_inputs import causal_mask, check_attention_inputs
from seqlab.model.checks import on_gpu_path
from seqlab.model.chunked_attention import chunked_attention
from seqlab.model.config import check_attention, check_kv_heads
from seqlab.model.kv_cache import KVCache
from seqlab.model.linear import Linear
from seqlab.model.rope import RotaryPositionalEmbedding, rotate_pairs

__all__ = [
    "MultiHeadSelfAttention", "attention_backend", "attention_weights", "causal_mask",
    "scaled_dot_product_attention",
]


def attention_weights(Q: torch.Tensor, K: torch.Tensor, mask: torch.Tensor | None = None, *,
                      causal: bool = False) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)): how much each query attends to each key, (..., n, m).

    Q (..., n, d_k), K (..., m, d_k); mask and causal as in scaled_dot_product_attention below.
    The weights are at least float32 (also for bfloat16 scores under autocast); a query row with no
    visible key is all zeros (not NaN). Every row with a visible key sums to 1.
    """
    check_attention_inputs(Q, K, K, mask)
    if causal:
        visible = causal_mask(Q.shape[-2], K.shape[-2], device=Q.device)
        mask = visible if mask is None else mask & visible
    scores = (Q / math.sqrt(Q.shape[-1])) @ K.transpose(-2, -1)  # = Q K^T / sqrt(d_k), (..., n, m)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # a hidden key gets weight exp(-inf) = 0
    # softmax() returns zeros, not NaN, for a row that is -inf everywhere
    return softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1)


def scaled_dot_product_attention(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None, *,
    causal: bool = False,
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) V.

    Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v) -> (..., n, d_v); leading dims broadcast.
    mask: bool, (n, m) or broadcastable to (..., n, m); True = the query may attend to the key.
    causal=True also hides keys after each query, the n queries being the last n of the m
    positions (so with cached keys, m > n, query i sits at position m - n + i).
    A query row with no visible key gets all-zero weights and therefore a zero output (not NaN).

    Example: Q = K = [[1, 0], [0, 1]], V = [[1, 2], [3, 4]], causal=True. Query 0 sees only key 0,
    so its output is V[0] = [1, 2]; query 1 scores keys 0 and 1 as 0 and 1/sqrt(2), weights
    softmax([0, 0.71]) = [0.33, 0.67], output 0.33 [1, 2] + 0.67 [3, 4] = [2.34, 3.34].
    """
    check_attention_inputs(Q, K, V, mask)
    return attention_weights(Q, K, mask, causal=causal).to(V.dtype) @ V


def attention_backend(attention: str, x: torch.Tensor) -> str:
    """The backend ("reference" or "chunked") that `attention` ("auto", "reference", "chunked") means
    for the tensor x: "auto" is chunked only for CPU tensors in eager mode (not on the forced GPU path).

    torch.compiler.is_compiling() is read at forward time, so a model wrapped in torch.compile
    traces the reference even though it was built for the CPU.
    """
    if check_attention(attention) != "auto":
        return attention
    if torch.compiler.is_compiling() or on_gpu_path(x):
        return "reference"
    return "chunked"


class MultiHeadSelfAttention(nn.Module):
    """Causal multi-head self-attention with optional RoPE on queries and keys, and grouped keys/values.

    Submodules q_proj (d_model x d_model), k_proj and v_proj ((num_kv_heads * d_head) x d_model) and
    output_proj (d_model x d_model), no bias. The three input projections run as one fused matmul on
    their concatenated weights; the state dict keeps them separate. Heads are a batch dimension:
    (batch, heads, seq, d_head), and the attention itself is the backend named by `attention` (see
    attention_backend; not part of the weights).

    num_kv_heads (default num_heads) key/value heads: grouped-query attention (GQA; Ainslie et al.,
    2023), multi-query attention (MQA) with num_kv_heads=1. Query head h uses key/value head
    h // (num_heads // num_kv_heads), the convention of Llama and Hugging Face transformers: with
    8 query heads and 2 key/value heads, queries 0-3 share k/v head 0 and queries 4-7 head 1. The
    queries are viewed as (batch, kv_heads, group, seq, d_head) and the keys/values as
    (batch, kv_heads, 1, seq, d_head), so every backend broadcasts them over the group without
    copying them, and a KV cache holds num_kv_heads heads.
    """

    def __init__(self, d_model: int, num_heads: int, max_seq_len: int | None = None,
                 theta: float | None = None, *, num_kv_heads: int | None = None, attention: str = "auto",
                 device=None, dtype=None):
        super().__init__()
        self.attention = check_attention(attention)
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        num_kv_heads = num_heads if num_kv_heads is None else check_kv_heads(num_heads, num_kv_heads)
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        d_kv = num_kv_heads * self.d_head
        self.q_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.k_proj = Linear(d_model, d_kv, device=device, dtype=dtype)
        self.v_proj = Linear(d_model, d_kv, device=device, dtype=dtype)
        self.output_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.rope = None
        if theta is not None:
            if max_seq_len is None:
                raise ValueError("RoPE (theta given) needs max_seq_len")
            self.rope = RotaryPositionalEmbedding(theta, self.d_head, max_seq_len, device=device)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor | None = None, *,
                kv_cache: KVCache | None = None, layer_index: int = 0,
                key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (batch..., seq, d_model) -> (batch..., seq, d_model).

        token_positions: (seq,) or (batch, seq); default 0..seq-1 (after any cached positions).
        kv_cache: new keys/values are appended to layer `layer_index` and queries attend to all
        cached + new keys. key_padding_mask: (batch, all keys) bool, True = real token.
        """
        *batch, seq, _ = x.shape
        heads, kv_heads = self.num_heads, self.num_kv_heads
        weight = torch.cat((self.q_proj.weight, self.k_proj.weight, self.v_proj.weight), dim=0)
        # (batch..., seq, heads + 2 kv_heads, d_head): query heads, then key heads, then value heads
        qkv = (x @ weight.t()).view(*batch, seq, heads + 2 * kv_heads, self.d_head)
        past = kv_cache.layer_length(layer_index) if kv_cache is not None else 0
        qk, v = qkv[..., :heads + kv_heads, :], qkv[..., heads + kv_heads:, :]
        if self.rope is not None:
            if token_positions is None:  # past, ..., past + seq - 1
                cos, sin = self.rope.cos_sin_span(past, seq, x.dtype)  # (seq, d/2)
            else:
                cos, sin = self.rope.cos_sin(token_positions, x.dtype)  # (seq, d/2) or (batch, seq, d/2)
            # rotate queries and keys in one call; the same rotation for every head
            qk = rotate_pairs(qk, cos[..., None, :], sin[..., None, :])
        q, k = qk[..., :heads, :], qk[..., heads:, :]
        # heads become a batch dimension: (batch..., heads, seq, d_head)
        q, k, v = q.transpose(-3, -2), k.transpose(-3, -2), v.transpose(-3, -2)
        if kv_cache is not None:
            k, v = kv_cache.append(layer_index, k, v)
        padding = None
        if key_padding_mask is not None:
            if key_padding_mask.shape[-1] != k.shape[-2]:
                raise ValueError(
                    f"key padding mask covers {key_padding_mask.shape[-1]} positions but there are "
                    f"{k.shape[-2]} keys"
                )
            padding = key_padding_mask[..., None, None, None, :].to(torch.bool)  # (batch, 1, 1, 1, keys)
        # query groups: (batch..., kv_heads, group, seq, d_head) against (batch..., kv_heads, 1, keys, d_head)
        q = q.unflatten(-3, (kv_heads, heads // kv_heads))
        k, v = k.unsqueeze(-3), v.unsqueeze(-3)
        # causal: each new query sees the cached keys and the new keys up to its own position
        if attention_backend(self.attention, q) == "chunked":
            out = chunked_attention(q, k, v, padding, causal=True)
        else:
            out = scaled_dot_product_attention(q, k, v, padding, causal=True)
        out = out.flatten(-4, -3).transpose(-3, -2).reshape(*batch, seq, self.d_model)
        return self.output_proj(out)
