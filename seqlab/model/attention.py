"""Scaled dot-product attention and causal multi-head self-attention."""

from __future__ import annotations

import math

import torch
from torch import nn

from seqlab.model.activations import stable_softmax
from seqlab.model.broadcast import sum_to_shape
from seqlab.model.kv_cache import KVCache
from seqlab.model.linear import Linear
from seqlab.model.rope import RotaryPositionalEmbedding, rotate_pairs


# scores for this many (query, key) pairs are formed at a time (~1 MB of float32): small enough to
# stay in the CPU cache while they are masked, exponentiated, normalised and multiplied by V
CHUNK_SCORES = 1 << 18
# causal attention over at least this many queries is cut into CAUSAL_BLOCKS query blocks, each
# multiplied only with the keys it can see (skips ~3/8 of the score matrix)
CAUSAL_MIN_QUERIES, CAUSAL_BLOCKS = 128, 4


def _query_blocks(n: int, m: int, causal: bool) -> list[tuple[int, int, int]]:
    """(first query, end query, end key) triples covering all n queries."""
    if not causal or n < CAUSAL_MIN_QUERIES:
        return [(0, n, m)]
    size = -(-n // CAUSAL_BLOCKS)
    offset = m - n  # query i sits at absolute position i + offset
    return [(a, min(n, a + size), max(1, min(m, min(n, a + size) + offset))) for a in range(0, n, size)]


class _ChunkedAttentionFunction(torch.autograd.Function):
    """softmax(Q K^T s + mask) V (s = 1/sqrt(d_k)), computed a few (batch, head) slices at a time.

    The (n, m) probabilities are never stored: the forward saves only the per-row log-sum-exp and
    the backward recomputes P = exp(Q K^T s - lse) slice by slice (the FlashAttention idea, blocked
    over heads and query blocks). Each (n, m) intermediate stays in cache and memory does not grow
    with batch * heads * n * m. With `causal`, keys after a query block's last query are skipped.
    Backward, using rowsum(P * dP) = dO . O:
        dV = P^T dO,  dS = P * (dO V^T - rowsum(dO * O)),  dQ = dS K s,  dK = dS^T Q s.
    """

    @staticmethod
    def forward(ctx, Q, K, V, mask, causal):
        n, m, d_k, d_v = Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]
        batch_shape = torch.broadcast_shapes(
            Q.shape[:-2], K.shape[:-2], V.shape[:-2], *(() if mask is None else (mask.shape[:-2],))
        )
        scale = 1.0 / math.sqrt(d_k)
        q = (Q * scale).expand(*batch_shape, n, d_k).reshape(-1, n, d_k)
        k = K.expand(*batch_shape, m, d_k).reshape(-1, m, d_k)
        v = V.expand(*batch_shape, m, d_v).reshape(-1, m, d_v)
        hidden = None  # True where a key is NOT visible: (n, m) shared by all slices, or (slices, n, m)
        if causal:
            hidden = ~causal_mask(n, m, device=Q.device)
        if mask is not None:
            user_hidden = ~mask.expand(*mask.shape[:-2], n, m)
            if user_hidden.dim() > 2:
                user_hidden = user_hidden.expand(*batch_shape, n, m).reshape(-1, n, m)
            hidden = user_hidden if hidden is None else hidden | user_hidden
        slices = q.shape[0]
        out = q.new_empty(slices, n, d_v)
        stats_dtype = torch.promote_types(q.dtype, torch.float32)
        log_sum_exp = q.new_empty(slices, n, 1, dtype=stats_dtype)
        blocks = _query_blocks(n, m, causal)
        for a, b, key_end, c in _chunks(blocks, slices):
            # softmax statistics in float32 even for bfloat16/float16 inputs (no-op for float32)
            scores = _masked_scores(q, k, hidden, c, a, b, key_end, stats_dtype)
            probs, row_max, total = stable_softmax(scores, -1, inplace=True)
            # rows with nothing visible: lse = +inf so the recomputed P is exp(-inf) = 0, not NaN
            log_sum_exp[c, a:b] = torch.where(total > 0, row_max + total.log(), float("inf"))
            out[c, a:b] = torch.bmm(probs.to(v.dtype), v[c, :key_end])
        ctx.save_for_backward(q, k, v, out, log_sum_exp, hidden)
        ctx.scale, ctx.blocks = scale, blocks
        ctx.shapes = (Q.shape, K.shape, V.shape, batch_shape)
        return out.view(*batch_shape, n, d_v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, stats, hidden = ctx.saved_tensors  # stats: per-row log-sum-exp
        Q_shape, K_shape, V_shape, batch_shape = ctx.shapes
        slices, n, d_v = out.shape
        m = k.shape[1]
        grad_o = grad_out.reshape(slices, n, d_v).to(v.dtype)
        row_dot = (grad_o.to(stats.dtype) * out).sum(-1, keepdim=True)  # rowsum(P * dP) = dO . O
        grad_q = torch.empty_like(q)
        grad_k, grad_v = torch.zeros_like(k), torch.zeros_like(v)
        for a, b, key_end, c in _chunks(ctx.blocks, slices):
            k_c, v_c, q_c, g_c = k[c, :key_end], v[c, :key_end], q[c, a:b], grad_o[c, a:b]
            scores = _masked_scores(q, k, hidden, c, a, b, key_end, stats.dtype)
            probs = scores.sub_(stats[c, a:b]).exp_()
            grad_v[c, :key_end].baddbmm_(probs.to(g_c.dtype).transpose(1, 2), g_c)
            grad_scores = torch.bmm(g_c, v_c.transpose(1, 2)).to(stats.dtype)
            grad_scores = grad_scores.sub_(row_dot[c, a:b]).mul_(probs).to(k.dtype)
            grad_q[c, a:b] = torch.bmm(grad_scores, k_c)
            grad_k[c, :key_end].baddbmm_(grad_scores.transpose(1, 2), q_c)  # q is pre-scaled
        grad_q.mul_(ctx.scale)
        return (
            sum_to_shape(grad_q.view(*batch_shape, n, q.shape[-1]), Q_shape),
            sum_to_shape(grad_k.view(*batch_shape, m, k.shape[-1]), K_shape),
            sum_to_shape(grad_v.view(*batch_shape, m, d_v), V_shape),
            None,
            None,
        )


def _chunks(blocks, slices):
    """Yield (query start, query end, key end, slice range) with ~CHUNK_SCORES scores each."""
    for a, b, key_end in blocks:
        step = max(1, CHUNK_SCORES // max(1, (b - a) * key_end))
        for start in range(0, slices, step):
            yield a, b, key_end, slice(start, start + step)


def _masked_scores(q, k, hidden, c: slice, a: int, b: int, key_end: int, dtype: torch.dtype) -> torch.Tensor:
    """Scores of queries a:b against keys :key_end for slices c: (slices, b - a, key_end) in `dtype`
    (q is pre-scaled), hidden keys at -inf. Forward and backward form them the same way."""
    scores = torch.bmm(q[c, a:b], k[c, :key_end].transpose(1, 2)).to(dtype)
    if hidden is not None:
        block = hidden[a:b, :key_end] if hidden.dim() == 2 else hidden[c, a:b, :key_end]
        scores.masked_fill_(block, float("-inf"))
    return scores


def scaled_dot_product_attention(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None, *,
    causal: bool = False,
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) V.

    Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v) -> (..., n, d_v).
    mask: bool, (n, m) or broadcastable to (..., n, m); True = the query may attend to the key.
    causal=True also hides keys after each query, the n queries being the last n of the m
    positions (so with cached keys, m > n, query i sits at position m - n + i).
    A query row with no visible key gets all-zero weights and therefore a zero output (not NaN).
    """
    d_k = Q.shape[-1]
    if K.shape[-1] != d_k:
        raise ValueError(f"Q has d_k={d_k} but K has {K.shape[-1]} (shapes {tuple(Q.shape)}, {tuple(K.shape)})")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has {K.shape[-2]} keys but V has {V.shape[-2]} values")
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError(f"attention mask must be bool (True = may attend), got {mask.dtype}")
    return _ChunkedAttentionFunction.apply(Q, K, V, mask, causal)


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
    separate. Heads are a batch dimension: (batch, heads, seq, d_head), and the attention itself is
    the cache-blocked scaled_dot_product_attention above.
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
        past = kv_cache.layer_length(layer_index) if kv_cache is not None else 0
        if self.rope is not None:
            if token_positions is None:
                token_positions = torch.arange(past, past + seq, device=x.device)
            cos, sin = self.rope.cos_sin(token_positions, x.dtype)  # (seq, d/2) or (batch, seq, d/2)
            # rotate queries and keys in one call; the same rotation for every head
            qk = rotate_pairs(qkv[..., :2, :, :], cos[..., None, None, :], sin[..., None, None, :])
            (q, k), v = qk.unbind(-3), qkv[..., 2, :, :]
        else:
            q, k, v = qkv.unbind(-3)
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
            padding = key_padding_mask[..., None, None, :].to(torch.bool)  # (batch, 1, 1, keys)
        # causal: each new query sees the cached keys and the new keys up to its own position
        out = scaled_dot_product_attention(q, k, v, padding, causal=True)  # (batch..., heads, seq, d_head)
        out = out.transpose(-3, -2).reshape(*batch, seq, self.d_model)
        return self.output_proj(out)
