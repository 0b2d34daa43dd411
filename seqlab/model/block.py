"""One Transformer block: attention and feed-forward sublayers with residual connections."""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.attention import MultiHeadSelfAttention
from seqlab.model.ffn import make_ffn
from seqlab.model.kv_cache import KVCache
from seqlab.model.norm import make_norm


class TransformerBlock(nn.Module):
    """Pre-norm (default):  z = x + attn(ln1(x));  y = z + ffn(ln2(z)).
    Post-norm ablation:     z = ln1(x + attn(x));  y = ln2(z + ffn(z)).

    Submodules attn, ffn, ln1, ln2. theta=None turns RoPE off (NoPE); norm="none" makes ln1/ln2
    parameter-free identities (norm_eps is the norms' epsilon); ffn="silu" swaps SwiGLU for
    w2(silu(w1 x)); `attention` picks the attention backend ("auto" | "reference" | "chunked", see
    seqlab.model.attention); num_kv_heads (default num_heads) sets the key/value heads of
    grouped-query attention.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int | None, max_seq_len: int,
                 theta: float | None, *, norm: str = "rmsnorm", norm_position: str = "pre",
                 ffn: str = "swiglu", attention: str = "auto", num_kv_heads: int | None = None,
                 norm_eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        if norm_position not in ("pre", "post"):
            raise ValueError(f"unknown norm_position {norm_position!r}; expected 'pre' or 'post'")
        self.norm_position = norm_position
        self.attn = MultiHeadSelfAttention(d_model, num_heads, max_seq_len, theta, num_kv_heads=num_kv_heads,
                                           attention=attention, device=device, dtype=dtype)
        self.ffn = make_ffn(ffn, d_model, d_ff, device=device, dtype=dtype)
        self.ln1 = make_norm(norm, d_model, device=device, dtype=dtype, eps=norm_eps)
        self.ln2 = make_norm(norm, d_model, device=device, dtype=dtype, eps=norm_eps)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor | None = None, *,
                kv_cache: KVCache | None = None, layer_index: int = 0,
                key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, seq, d_model) -> (batch, seq, d_model)"""
        attn_kwargs = dict(kv_cache=kv_cache, layer_index=layer_index, key_padding_mask=key_padding_mask)
        if self.norm_position == "pre":
            z = x + self.attn(self.ln1(x), token_positions, **attn_kwargs)
            return z + self.ffn(self.ln2(z))
        z = self.ln1(x + self.attn(x, token_positions, **attn_kwargs))
        return self.ln2(z + self.ffn(z))
