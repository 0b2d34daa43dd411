"""Attention, softmax(Q K^T / sqrt(d_k)) V, and the multi-head attention built on it.

`scaled_dot_product_attention` is the reference: the formula as written, vectorised over batch and
heads, autograd doing the backward. Other backends compute the same (tested equal in values and
gradients): "chunked" (cache-blocked, fast on a CPU), "sdpa" (torch's fused kernel), "flash"
(Triton FlashAttention-2; takes no mask, so with a padding mask or where it cannot run it falls
back to what "auto" picks, per call). "auto" is chunked on a CPU in eager mode, sdpa on CUDA
(flash vs sdpa on CUDA is not yet measured), the reference on MPS, under torch.compile on a CPU
and on the forced GPU path. `attention_backend(attention, x, has_mask=...)` says which one runs.

`MultiHeadAttention` is seqlab's one multi-head attention: causal or bidirectional self-attention
with RoPE, grouped-query heads and a KV cache, and cross-attention to another sequence, with a
key-padding mask and taps (seqlab.model.taps) that read or replace its queries, keys, values,
scores, weights and each head's output.
"""

from __future__ import annotations

import math
import sys

import torch
from torch import nn

from seqlab.model.activations import softmax
from seqlab.model.attention_inputs import causal_mask, check_attention_inputs
from seqlab.model.backend_support import attention_backend_supports
from seqlab.model.checks import on_gpu_path
from seqlab.model.chunked_attention import chunked_attention
from seqlab.model.config import check_attention, check_kv_heads
from seqlab.model.flash_attention import flash_attention
from seqlab.model.kv_cache import KVCache
from seqlab.model.linear import Linear
from seqlab.model.rope import RotaryPositionalEmbedding, rotate_pairs
from seqlab.model.sdpa_attention import sdpa_attention
from seqlab.model.taps import or_none

__all__ = [
    "MultiHeadAttention", "attention_backend", "attention_scores", "attention_weights", "causal_mask",
    "scaled_dot_product_attention",
]


def attention_scores(Q: torch.Tensor, K: torch.Tensor, mask: torch.Tensor | None = None, *,
                     causal: bool = False) -> torch.Tensor:
    """Q K^T / sqrt(d_k), (..., n, m), with -inf where the mask (or causality) hides a key.

    Q (..., n, d_k), K (..., m, d_k); mask and causal as in scaled_dot_product_attention below.
    """
    check_attention_inputs(Q, K, K, mask)
    if causal:
        visible = causal_mask(Q.shape[-2], K.shape[-2], device=Q.device)
        mask = visible if mask is None else mask & visible
    scores = (Q / math.sqrt(Q.shape[-1])) @ K.transpose(-2, -1)  # = Q K^T / sqrt(d_k), (..., n, m)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # a hidden key gets weight exp(-inf) = 0
    return scores


def weights_of(scores: torch.Tensor) -> torch.Tensor:
    """softmax of attention scores over the keys, in at least float32 (also for bfloat16 scores
    under autocast); a row that is -inf everywhere (no visible key) is all zeros, not NaN."""
    return softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1)


def attention_weights(Q: torch.Tensor, K: torch.Tensor, mask: torch.Tensor | None = None, *,
                      causal: bool = False) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)): how much each query attends to each key, (..., n, m).

    Q (..., n, d_k), K (..., m, d_k); mask and causal as in scaled_dot_product_attention below.
    The weights are at least float32; a query row with no visible key is all zeros (not NaN).
    Every row with a visible key sums to 1.
    """
    return weights_of(attention_scores(Q, K, mask, causal=causal))


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


def _assume_constant_result(fn):
    """torch.compiler.assume_constant_result(fn) without importing torch._dynamo, which takes about
    1.6 s and which a process that never compiles (a `seqlab learn check` child, a CLI command)
    should not pay. The decorator only marks the function for dynamo to read when it traces a call;
    once torch._dynamo is loaded, its own decorator marks it."""
    if "torch._dynamo" in sys.modules:
        return torch.compiler.assume_constant_result(fn)
    fn._dynamo_marked_constant = True  # what torch._dynamo.assume_constant_result sets (tested equal)
    return fn


@_assume_constant_result
def _flash_runs(device: torch.device, dtype: torch.dtype, has_mask: bool, head_dim: int) -> bool:
    """attention_backend_supports("flash", ...), evaluated on the host once per trace under torch.compile
    (device, dtype and shapes are fixed in a compiled graph), so it adds no graph break."""
    return attention_backend_supports("flash", device, dtype, has_mask, head_dim=head_dim)


def attention_backend(attention: str, x: torch.Tensor, *, has_mask: bool = False) -> str:
    """The backend that `attention` (one of seqlab.model.config.ATTENTIONS) runs for queries x
    (..., head_dim) with or without a mask: "reference", "chunked", "sdpa" or "flash".

    "auto": "sdpa" for CUDA tensors; "chunked" for CPU tensors in eager mode; "reference" under
    torch.compile (on a CPU), on the forced GPU path and on other devices (MPS, meta).
    "flash": "flash" where seqlab.model.backend_support.attention_backend_supports says it runs
    (no mask; CUDA, or float32 CPU tensors in Triton's interpreter; head_dim <= 256), else what
    "auto" picks. The others are themselves.

    Only the device, dtype and shape of x are read (no values), so nothing waits for the device.
    torch.compiler.is_compiling() is read at forward time, so a model wrapped in torch.compile
    traces the reference on a CPU even though it was built for the CPU.

    Example: attention_backend("flash", torch.zeros(1, 4, 8, 16), has_mask=True) is "chunked" on a
    CPU (a padding mask sends flash to auto's choice).
    """
    attention = check_attention(attention)
    if attention == "flash":
        if _flash_runs(x.device, x.dtype, has_mask, x.shape[-1]):
            return "flash"
        attention = "auto"
    if attention != "auto":
        return attention
    if x.device.type == "cuda":
        return "sdpa"
    if torch.compiler.is_compiling() or on_gpu_path(x):
        return "reference"
    return "chunked"


class MultiHeadAttention(nn.Module):
    """Multi-head attention: self-attention (causal or not, RoPE, KV cache) or cross-attention.

    Submodules q_proj (d_model x d_model), k_proj and v_proj ((num_kv_heads * d_head) x d_model) and
    output_proj (d_model x d_model), no bias. Heads are a batch dimension: (batch, heads, seq,
    d_head); the attention itself is the backend named by `attention` (see attention_backend; not
    part of the weights).

    Self-attention, ``attn(x)``: queries, keys and values all come from x, through one fused matmul on
    the concatenated q/k/v weights (the state dict keeps them separate). causal=True (the default,
    the LM and the seq2seq decoder) hides the keys after each query; causal=False (an encoder) lets
    every query see every key. theta (with max_seq_len) rotates queries and keys by RoPE; a KVCache
    keeps the keys/values of past positions for incremental decoding.

    Cross-attention, ``attn(x, memory=m)`` or ``attn(x, memory_kv=attn.keys_values(m))``: queries come
    from x (batch, n, d_model), keys and values from another sequence m (batch, S, d_model), e.g.
    the encoder's output read by a decoder. keys_values(m) computes them once per source, so each
    decoding step only projects its new queries. Build a cross-attention with causal=False and no
    theta (RoPE and causality relate positions of ONE sequence).

    key_padding_mask (batch, keys) bool, True = a real key: padded keys get weight 0. taps (a scope
    of seqlab.model.taps.Taps) offer its points: q (batch, heads, n, d_head), k and v (batch,
    kv_heads, new keys, d_head; after RoPE, before the cache), scores and pattern (batch, heads,
    n, keys; reading or editing either makes this call use the reference formula, at least float32),
    z (batch, heads, n, d_head: the heads' outputs before the output projection) and head_out
    (batch, n, heads, d_model: each head's share of the output, summing over heads to it).

    num_kv_heads (default num_heads) key/value heads: grouped-query attention (GQA; Ainslie et al.,
    2023), multi-query attention (MQA) with num_kv_heads=1. Query head h uses key/value head
    h // (num_heads // num_kv_heads), the convention of Llama and Hugging Face transformers: with
    8 query heads and 2 key/value heads, queries 0-3 share k/v head 0 and queries 4-7 head 1. With
    grouped heads the reference and chunked backends see the queries as (batch, kv_heads, group,
    seq, d_head) and the keys/values as (batch, kv_heads, 1, seq, d_head); sdpa and flash take the
    grouped heads as they are. No backend copies K/V per query head, and a KV cache holds
    num_kv_heads heads.

    Example (d_model 16, 4 heads, a 5-token target reading a 7-token source)::

        cross = MultiHeadAttention(16, 4, causal=False)
        taps = Taps(read=["pattern"])
        out = cross(torch.randn(2, 5, 16), memory=torch.randn(2, 7, 16), taps=taps)
        out.shape, taps.cache["pattern"].shape      # (2, 5, 16), (2, 4, 5, 7); its rows sum to 1
    """

    def __init__(self, d_model: int, num_heads: int, max_seq_len: int | None = None,
                 theta: float | None = None, *, num_kv_heads: int | None = None, causal: bool = True,
                 attention: str = "auto", device=None, dtype=None):
        super().__init__()
        self.attention = check_attention(attention)
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        num_kv_heads = num_heads if num_kv_heads is None else check_kv_heads(num_heads, num_kv_heads)
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_head = d_model // num_heads
        self.causal = bool(causal)
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

    def keys_values(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention keys and values of memory (batch..., S, d_model) -> two (batch..., kv_heads, S, d_head),
        in one matmul on the concatenated k/v weights; pass them as forward(..., memory_kv=...)."""
        *batch, length, _ = memory.shape
        kv_heads = self.num_kv_heads
        weight = torch.cat((self.k_proj.weight, self.v_proj.weight), dim=0)
        kv = (memory @ weight.t()).view(*batch, length, 2 * kv_heads, self.d_head).transpose(-3, -2)
        return kv[..., :kv_heads, :, :], kv[..., kv_heads:, :, :]

    def _self_qkv(self, x: torch.Tensor, token_positions: torch.Tensor | None, kv_cache: KVCache | None,
                  layer_index: int, taps) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention heads of x (batch..., seq, d_model): q (batch..., heads, seq, d_head) and k, v
        (batch..., kv_heads, keys, d_head), rotated by RoPE and extended by the cache."""
        *batch, seq, _ = x.shape
        heads, kv_heads = self.num_heads, self.num_kv_heads
        weight = torch.cat((self.q_proj.weight, self.k_proj.weight, self.v_proj.weight), dim=0)
        # (batch..., seq, heads + 2 kv_heads, d_head): query heads, then key heads, then value heads
        qkv = (x @ weight.t()).view(*batch, seq, heads + 2 * kv_heads, self.d_head)
        past = kv_cache.layer_length(layer_index) if kv_cache is not None else 0
        # split, not sliced: the backward joins the parts' gradients in one cat instead of adding
        # zero-padded copies of qkv
        qk, v = qkv.split((heads + kv_heads, kv_heads), dim=-2)
        if self.rope is not None:
            if token_positions is None:  # past, ..., past + seq - 1
                cos, sin = self.rope.cos_sin_span(past, seq, x.dtype)  # (seq, d/2)
            else:
                cos, sin = self.rope.cos_sin(token_positions, x.dtype)  # (seq, d/2) or (batch, seq, d/2)
            # rotate queries and keys in one call; the same rotation for every head
            qk = rotate_pairs(qk, cos[..., None, :], sin[..., None, :])
        q, k = qk.split((heads, kv_heads), dim=-2)
        # heads become a batch dimension: (batch..., heads, seq, d_head)
        q, k, v = q.transpose(-3, -2), k.transpose(-3, -2), v.transpose(-3, -2)
        q, k, v = taps.tap("q", q), taps.tap("k", k), taps.tap("v", v)
        if kv_cache is not None:
            k, v = kv_cache.append(layer_index, k, v)
        return q, k, v

    def _cross_q(self, x: torch.Tensor, memory: torch.Tensor | None,
                 memory_kv: tuple[torch.Tensor, torch.Tensor] | None, misused: bool, taps):
        """Cross-attention heads: q of x (batch..., heads, n, d_head) and the memory's k, v."""
        if memory is not None and memory_kv is not None:
            raise ValueError("give the memory either as memory= (a tensor) or as memory_kv= (its keys_values), "
                             "not both")
        if self.causal or self.rope is not None or misused:
            raise ValueError("cross-attention (memory or memory_kv given) relates two sequences: build it with "
                             "causal=False and without theta (RoPE), and pass no token_positions or kv_cache "
                             "(cache the memory's keys_values instead)")
        *batch, seq, _ = x.shape
        q = (x @ self.q_proj.weight.t()).view(*batch, seq, self.num_heads, self.d_head).transpose(-3, -2)
        k, v = memory_kv if memory_kv is not None else self.keys_values(memory)
        return taps.tap("q", q), taps.tap("k", k), taps.tap("v", v)

    def _padding(self, key_padding_mask: torch.Tensor | None, k: torch.Tensor) -> torch.Tensor | None:
        """The key padding mask (batch, keys) as (batch, 1, 1, keys), checked against the keys."""
        if key_padding_mask is None:
            return None
        if key_padding_mask.shape[-1] != k.shape[-2]:
            raise ValueError(
                f"key padding mask covers {key_padding_mask.shape[-1]} positions but there are "
                f"{k.shape[-2]} keys"
            )
        return key_padding_mask.to(torch.bool)[..., None, None, :]  # (batch, 1, 1, keys)

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor | None,
                causal: bool) -> torch.Tensor:
        """q (batch..., heads, n, d_head), k and v (batch..., kv_heads, m, d_head) -> the heads' outputs
        (batch..., heads, n, d_head)."""
        padding = self._padding(key_padding_mask, k)
        backend = attention_backend(self.attention, q, has_mask=padding is not None)
        if backend == "sdpa":
            return sdpa_attention(q, k, v, padding, causal=causal)
        if backend == "flash":  # never with a mask (attention_backend falls back)
            return flash_attention(q, k, v, padding, causal=causal)
        grouped = self.num_kv_heads != self.num_heads
        if grouped:  # query groups: (batch..., kv_heads, group, n, d_head) against (batch..., kv_heads, 1, m, d_head)
            q = q.unflatten(-3, (self.num_kv_heads, self.num_heads // self.num_kv_heads))
            k, v = k.unsqueeze(-3), v.unsqueeze(-3)
            if padding is not None:
                padding = padding.unsqueeze(-3)  # (batch, 1, 1, 1, keys)
        attend = chunked_attention if backend == "chunked" else scaled_dot_product_attention
        out = attend(q, k, v, padding, causal=causal)
        return out.flatten(-4, -3) if grouped else out

    def _attend_visibly(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        key_padding_mask: torch.Tensor | None, causal: bool, taps) -> torch.Tensor:
        """_attend by the reference formula, its scores and weights offered to the taps (as
        (batch..., heads, n, m), the query groups of grouped-query attention side by side)."""
        padding = self._padding(key_padding_mask, k)
        group = self.num_heads // self.num_kv_heads
        # query groups against their key/value head: (batch..., kv_heads, group, n, d_head) vs (.., kv_heads, 1, m, d_head)
        q = q.unflatten(-3, (self.num_kv_heads, group))
        k, v = k.unsqueeze(-3), v.unsqueeze(-3)
        if padding is not None:
            padding = padding.unsqueeze(-3)
        scores = taps.tap("scores", attention_scores(q, k, padding, causal=causal).flatten(-4, -3))
        weights = taps.tap("pattern", weights_of(scores))
        return (weights.unflatten(-3, (self.num_kv_heads, group)).to(v.dtype) @ v).flatten(-4, -3)

    def forward(self, x: torch.Tensor, token_positions: torch.Tensor | None = None, *,
                memory: torch.Tensor | None = None, memory_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
                kv_cache: KVCache | None = None, layer_index: int = 0,
                key_padding_mask: torch.Tensor | None = None, taps=None) -> torch.Tensor:
        """x (batch..., seq, d_model) -> (batch..., seq, d_model).

        Self-attention (no memory): token_positions (seq,) or (batch, seq), default 0..seq-1 after
        any cached positions; kv_cache: new keys/values are appended to layer `layer_index` and
        queries attend to all cached + new keys. Cross-attention: memory (batch..., S, d_model) or
        memory_kv = keys_values(memory). key_padding_mask: (batch, all keys) bool, True = real
        token. taps: a Taps scope for this module's points (class docstring); an edit of q may keep
        fewer queries (the last ones), and the output then has as many positions.
        """
        taps = or_none(taps)
        if memory is None and memory_kv is None:
            q, k, v = self._self_qkv(x, token_positions, kv_cache, layer_index, taps)
            causal = self.causal
        else:
            q, k, v = self._cross_q(x, memory, memory_kv, token_positions is not None or kv_cache is not None, taps)
            causal = False
        if taps.wants("scores") or taps.wants("pattern"):
            z = self._attend_visibly(q, k, v, key_padding_mask, causal, taps)
        else:
            z = self._attend(q, k, v, key_padding_mask, causal)
        z = taps.tap("z", z)  # (batch..., heads, n, d_head)
        batch, n = x.shape[:-2], z.shape[-2]
        if taps.wants("head_out"):  # head h's output: its slice of z through its columns of the output projection
            w_o = self.output_proj.weight.view(self.d_model, self.num_heads, self.d_head)
            head_out = taps.tap("head_out", torch.einsum("...hnk,dhk->...nhd", z, w_o))
            return head_out.sum(-2)
        return self.output_proj(z.transpose(-3, -2).reshape(*batch, n, self.d_model))
