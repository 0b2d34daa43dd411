"""One Transformer block: attention and feed-forward sublayers with residual connections."""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.attention import MultiHeadAttention
from seqlab.model.ffn import make_ffn
from seqlab.model.kv_cache import KVCache
from seqlab.model.norm import make_norm
from seqlab.model.residual import check_norm_position, residual
from seqlab.model.taps import or_none


class TransformerBlock(nn.Module):
    """Pre-norm (default):  z = x + attn(ln1(x));  y = z + ffn(ln2(z)).
    Post-norm ablation:     z = ln1(x + attn(x));  y = ln2(z + ffn(z)).

    Submodules attn (causal self-attention, seqlab.model.attention.MultiHeadAttention), ffn, ln1, ln2.
    theta=None turns RoPE off (NoPE); norm="none" makes ln1/ln2 parameter-free identities (norm_eps
    is the norms' epsilon); ffn="silu" swaps SwiGLU for w2(silu(w1 x)); `attention` picks the
    attention backend ("auto" | "reference" | "chunked" | "sdpa" | "flash", see
    seqlab.model.attention); num_kv_heads (default num_heads) sets the key/value heads of
    grouped-query attention. causal=False lets every position see every other (the seq2seq
    encoder's layer is this block with causal=False). ffn="none" makes an attention-only block:
    y = x + attn(ln1(x)) (post-norm: ln1(x + attn(x))), with no feed-forward and no ln2.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int | None, max_seq_len: int,
                 theta: float | None, *, norm: str = "rmsnorm", norm_position: str = "pre",
                 ffn: str = "swiglu", attention: str = "auto", num_kv_heads: int | None = None,
                 norm_eps: float = 1e-5, causal: bool = True, device=None, dtype=None):
        super().__init__()
        self.norm_position = check_norm_position(norm_position)
        self.attn = MultiHeadAttention(d_model, num_heads, max_seq_len, theta, num_kv_heads=num_kv_heads,
                                       causal=causal, attention=attention, device=device, dtype=dtype)
        self.ffn = make_ffn(ffn, d_model, d_ff, device=device, dtype=dtype)
        self.ln1 = make_norm(norm, d_model, device=device, dtype=dtype, eps=norm_eps)
        self.attention_only = ffn == "none"
        self.ln2 = make_norm("none" if self.attention_only else norm, d_model, device=device, dtype=dtype,
                             eps=norm_eps)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor | None = None, *,
                kv_cache: KVCache | None = None, layer_index: int = 0,
                key_padding_mask: torch.Tensor | None = None, taps=None) -> torch.Tensor:
        """(batch, seq, d_model) -> (batch, seq, d_model).

        taps: a Taps scope for this block (``layers.{i}``): resid_pre, attn_out, resid_mid, mlp_out
        (not in an attention-only block), resid_post, and the attention's points under ``attn.``.
        An edit of resid_mid may keep fewer (the last) positions; the block's output has as many.
        """
        taps = or_none(taps)
        attn_taps = taps.scope("attn")

        def attend(h: torch.Tensor) -> torch.Tensor:
            return taps.tap("attn_out", self.attn(h, token_positions, kv_cache=kv_cache, layer_index=layer_index,
                                                  key_padding_mask=key_padding_mask, taps=attn_taps))

        x = taps.tap("resid_pre", x)
        z = taps.tap("resid_mid", residual(x, self.ln1, attend, self.norm_position))
        if not self.attention_only:
            z = residual(z, self.ln2, lambda h: taps.tap("mlp_out", self.ffn(h)), self.norm_position)
        return taps.tap("resid_post", z)
