"""Scaled dot-product attention and causal multi-head self-attention."""

from __future__ import annotations

import math

import torch
from torch import nn

from seqlab.model.activations import softmax
from seqlab.model.kv_cache import KVCache
from seqlab.model.linear import Linear
from seqlab.model.rope import RotaryPositionalEmbedding


def scaled_dot_product_attention(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) V.

    Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v) -> (..., n, d_v).
    mask: bool, (n, m) or broadcastable to (..., n, m); True = the query may attend to the key.
    A query row with no visible key gets all-zero weights and therefore a zero output (not NaN).
    """
    d_k = Q.shape[-1]
    if K.shape[-1] != d_k:
        raise ValueError(f"Q has d_k={d_k} but K has {K.shape[-1]} (shapes {tuple(Q.shape)}, {tuple(K.shape)})")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has {K.shape[-2]} keys but V has {V.shape[-2]} values")
    # scale the (n, d_k) queries rather than the (n, m) scores: fewer multiplications
    scores = (Q * (1.0 / math.sqrt(d_k))) @ K.transpose(-2, -1)  # (..., n, m)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"attention mask must be bool (True = may attend), got {mask.dtype}")
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ V


def causal_mask(num_queries: int, num_keys: int, device=None) -> torch.Tensor:
    """(num_queries, num_keys) bool: query i (the last num_queries of num_keys positions) sees keys <= it."""
    offset = num_keys - num_queries
    query_index = torch.arange(num_queries, device=device)[:, None] + offset
    key_index = torch.arange(num_keys, device=device)[None, :]
    return key_index <= query_index


class MultiHeadSelfAttention(nn.Module):
    """Causal multi-head self-attention with optional RoPE on queries and keys.

    Submodules q_proj, k_proj, v_proj, output_proj (each d_model x d_model, no bias). The three input
    projections run as one fused matmul on their concatenated weights; the state dict keeps them
    separate. Heads are a batch dimension: (batch, heads, seq, d_head).
    """

    def __init__(self, d_model: int, num_heads: int, max_seq_len: int | None = None,
                 theta: float | None = None, device=None, dtype=None):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_head = d_model // num_heads
        self.q_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.k_proj = Linear(d_model, d_model, device=device, dtype=dtype)
        self.v_proj = Linear(d_model, d_model, device=device, dtype=dtype)
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
        weight = torch.cat((self.q_proj.weight, self.k_proj.weight, self.v_proj.weight), dim=0)
        qkv = (x @ weight.t()).view(*batch, seq, 3, self.num_heads, self.d_head)
        # (3, batch..., heads, seq, d_head)
        q, k, v = qkv.movedim(-3, 0).transpose(-3, -2).unbind(0)
        past = kv_cache.layer_length(layer_index) if kv_cache is not None else 0
        if self.rope is not None:
            if token_positions is None:
                token_positions = torch.arange(past, past + seq, device=x.device)
            positions = torch.as_tensor(token_positions, device=x.device)
            if positions.dim() >= 2:  # (batch, seq) -> (batch, 1, seq): same rotation for every head
                positions = positions.unsqueeze(-2)
            q = self.rope(q, positions)
            k = self.rope(k, positions)
        if kv_cache is not None:
            k, v = kv_cache.append(layer_index, k, v)
        mask = causal_mask(seq, k.shape[-2], device=x.device)
        if key_padding_mask is not None:
            if key_padding_mask.shape[-1] != k.shape[-2]:
                raise ValueError(
                    f"key padding mask covers {key_padding_mask.shape[-1]} positions but there are "
                    f"{k.shape[-2]} keys"
                )
            mask = mask & key_padding_mask[..., None, None, :].to(torch.bool)
        out = scaled_dot_product_attention(q, k, v, mask)  # (batch..., heads, seq, d_head)
        out = out.transpose(-3, -2).reshape(*batch, seq, self.d_model)
        return self.output_proj(out)
