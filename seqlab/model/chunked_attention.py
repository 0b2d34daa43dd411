"""Cache-blocked attention for CPUs: the reference formula, computed a few (batch, head) slices at a time.

`chunked_attention(Q, K, V, mask, causal=...)` returns what the reference returns (tested equal in
values and gradients); only the order of work differs. Scores for ~SCORES_PER_CHUNK pairs (~1 MB)
are formed at a time so each block stays in cache. The backward recomputes P = exp(Q K^T s - lse)
chunk by chunk, except for a small call (at most KEEP_PROBS_SCORES scores) which keeps P: fwd+bwd
of (32 x 8 heads, 40 x 40) took 6.6 ms recomputing, 5.3 ms keeping P; at 8 x 16 x 256 x 256
recomputing wins, 56 vs 96 ms. With `causal`, query blocks multiply only the keys they can see and
mask only their diagonal; grouped-query heads share one bmm per key/value head. The Python loop over chunks suits a CPU,
not a GPU, where "auto" picks the reference.

Backward (s = 1/sqrt(d_k)): dV = P^T dO, dS = P * (dO V^T - rowsum(dO * O)), dQ = dS K s, dK = dS^T Q s.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import torch

from seqlab.model.activations import stable_softmax
from seqlab.model.attention_inputs import causal_mask, check_attention_inputs
from seqlab.model.broadcast import broadcast_shapes, sum_to_shape

SCORES_PER_CHUNK = 1 << 18
CAUSAL_MIN_QUERIES, CAUSAL_BLOCKS = 128, 4
# a call with at most this many scores in all (4 MB of float32) keeps P for the backward
KEEP_PROBS_SCORES = 1 << 20


class QueryBlock(NamedTuple):
    """Queries query_start:query_end, which see (at most) keys 0:key_end."""
    query_start: int
    query_end: int
    key_end: int


class Chunk(NamedTuple):
    """One unit of work: a query block for the (batch * head) slices in `slices`."""
    block: QueryBlock
    slices: slice


def query_blocks(num_queries: int, num_keys: int, causal: bool) -> list[QueryBlock]:
    """Blocks covering all queries; causal ones stop at the last key their last query can see.

    Example: query_blocks(256, 256, causal=True) -> (0, 64, 64), (64, 128, 128), (128, 192, 192),
    (192, 256, 256): the first block multiplies with a quarter of the keys only.
    """
    if not causal or num_queries < CAUSAL_MIN_QUERIES:
        return [QueryBlock(0, num_queries, num_keys)]
    size = -(-num_queries // CAUSAL_BLOCKS)
    offset = num_keys - num_queries  # query i sits at absolute position i + offset
    blocks = []
    for start in range(0, num_queries, size):
        end = min(num_queries, start + size)
        blocks.append(QueryBlock(start, end, max(1, min(num_keys, end + offset))))
    return blocks


def chunks(blocks: list[QueryBlock], num_slices: int, group: int = 1) -> Iterator[Chunk]:
    """Cut every query block into runs of slices with about SCORES_PER_CHUNK scores each (a slice
    holds `group` query rows per query position, see query_group)."""
    for block in blocks:
        scores_per_slice = max(1, group * (block.query_end - block.query_start) * block.key_end)
        step = max(1, SCORES_PER_CHUNK // scores_per_slice)
        for first in range(0, num_slices, step):
            yield Chunk(block, slice(first, first + step))


def query_group(batch_shape: torch.Size, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None) -> int:
    """How many queries share each key: the size of the last batch dimension when K, V (and the mask)
    are broadcast along it, else 1.

    Grouped-query attention passes Q (batch, kv_heads, group, n, d) with K, V (batch, kv_heads, 1, m, d):
    the group's queries then become extra query rows of one slice, multiplied with that slice's keys
    in one bmm, and K, V are never copied per query head.
    """
    if not batch_shape or batch_shape[-1] == 1:
        return 1
    shared = (K, V) if mask is None else (K, V, mask)
    return batch_shape[-1] if all(t.dim() < 3 or t.shape[-3] == 1 for t in shared) else 1


def first_hidden_key(block: QueryBlock, num_queries: int, num_keys: int) -> int:
    """The first key a causal mask can hide from a query of ``block``: every key before it is visible
    to all of the block's queries (query i sits at absolute position i + num_keys - num_queries).

    Example: first_hidden_key(QueryBlock(192, 256, 256), 256, 256) -> 193: of the block's 256 keys,
    only the last 63 need the mask (the diagonal square), not all 256.
    """
    return max(0, min(block.key_end, block.query_start + num_keys - num_queries + 1))


def _chunk_scores(q_rows: torch.Tensor, k_keys: torch.Tensor, hidden: torch.Tensor | None, chunk: Chunk,
                  dtype: torch.dtype, masked_from: int = 0) -> torch.Tensor:
    """Scores of one chunk in `dtype`, hidden keys at -inf: q_rows (slices, group * queries, d_k),
    pre-scaled and group-major, times k_keys (slices, keys, d_k) -> (slices, group, queries, keys).
    ``masked_from``: keys before it are visible to every query of the chunk (only the causal mask's
    diagonal needs -inf), so the mask is applied from there on.

    The forward and the backward form them the same way.
    """
    block = chunk.block
    rows, keys = slice(block.query_start, block.query_end), slice(masked_from, block.key_end)
    scores = torch.bmm(q_rows, k_keys.transpose(1, 2)).to(dtype)
    scores = scores.unflatten(1, (-1, block.query_end - block.query_start))
    if hidden is not None and masked_from < block.key_end:
        # (queries, keys) shared by all slices, or one per slice; the same for the group
        hidden_block = hidden[rows, keys] if hidden.dim() == 2 else hidden[chunk.slices, None, rows, keys]
        scores[..., masked_from:].masked_fill_(hidden_block, float("-inf"))
    return scores


class ChunkedAttentionFunction(torch.autograd.Function):
    """softmax(Q K^T s + mask) V with the chunked forward and recomputing backward described above."""

    @staticmethod
    def forward(ctx, Q, K, V, mask, causal):
        n, m, d_k, d_v = Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]
        batch_shape = broadcast_shapes(
            Q.shape[:-2], K.shape[:-2], V.shape[:-2], *(() if mask is None else (mask.shape[:-2],))
        )
        group = query_group(batch_shape, K, V, mask)
        kv_shape = (*batch_shape[:-1], 1) if group > 1 else tuple(batch_shape)
        scale = 1.0 / math.sqrt(d_k)
        # every (batch..., head) pair of K and V becomes one slice of a 3-d tensor: (slices, positions,
        # features); Q has `group` queries per position and slice: (slices, group, positions, features)
        k = K.expand(*kv_shape, m, d_k).reshape(-1, m, d_k)
        v = V.expand(*kv_shape, m, d_v).reshape(-1, m, d_v)
        num_slices = k.shape[0]
        q = (Q * scale).expand(*batch_shape, n, d_k).reshape(num_slices, group, n, d_k)
        hidden = None  # True where a key is NOT visible: (n, m) shared by all slices, or (slices, n, m)
        if causal:
            hidden = ~causal_mask(n, m, device=Q.device)
        causal_only = causal and mask is None  # then a block's keys before its diagonal need no mask
        if mask is not None:
            user_hidden = ~mask.expand(*mask.shape[:-2], n, m)
            if user_hidden.dim() > 2:
                user_hidden = user_hidden.expand(*kv_shape, n, m).reshape(-1, n, m)
            hidden = user_hidden if hidden is None else hidden | user_hidden
        out = q.new_empty(num_slices, group, n, d_v)
        stats_dtype = torch.promote_types(q.dtype, torch.float32)  # float32 statistics for bf16/fp16
        log_sum_exp = q.new_empty(num_slices, group, n, 1, dtype=stats_dtype)
        blocks = query_blocks(n, m, causal)
        keep = num_slices * group * n * m <= KEEP_PROBS_SCORES
        kept = []
        for chunk in chunks(blocks, num_slices, group):
            s, rows = chunk.slices, slice(chunk.block.query_start, chunk.block.query_end)
            keys = slice(0, chunk.block.key_end)
            masked_from = first_hidden_key(chunk.block, n, m) if causal_only else 0
            scores = _chunk_scores(q[s, :, rows].flatten(1, 2), k[s, keys], hidden, chunk, stats_dtype, masked_from)
            probs, row_max, row_sum = stable_softmax(scores, -1, inplace=True)
            # a row with nothing visible gets lse = +inf, so the recomputed P is exp(-inf) = 0, not NaN
            log_sum_exp[s, :, rows] = torch.where(row_sum > 0, row_max + row_sum.log(), float("inf"))
            out[s, :, rows] = torch.bmm(probs.flatten(1, 2).to(v.dtype), v[s, keys]).unflatten(1, (group, -1))
            if keep:
                kept.append(probs)
        ctx.save_for_backward(q, k, v, out, log_sum_exp, None if keep else hidden, *kept)
        ctx.scale, ctx.blocks, ctx.causal_only = scale, blocks, causal_only
        ctx.shapes = (Q.shape, K.shape, V.shape, batch_shape, kv_shape)
        return out.view(*batch_shape, n, d_v)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, log_sum_exp, hidden, *kept = ctx.saved_tensors
        Q_shape, K_shape, V_shape, batch_shape, kv_shape = ctx.shapes
        num_slices, group, n, d_v = out.shape
        m = k.shape[1]
        grad_o = grad_out.reshape(num_slices, group, n, d_v).to(v.dtype)
        # rowsum(P * dP) = dO . O, one number per query row
        row_dot = (grad_o.to(log_sum_exp.dtype) * out).sum(-1, keepdim=True)
        grad_q = torch.empty_like(q)
        grad_k, grad_v = torch.zeros_like(k), torch.zeros_like(v)
        for index, chunk in enumerate(chunks(ctx.blocks, num_slices, group)):
            s, rows = chunk.slices, slice(chunk.block.query_start, chunk.block.query_end)
            keys = slice(0, chunk.block.key_end)
            # the group's query rows are rows of the same slice: (slices, group * queries, features)
            q_chunk, grad_o_chunk = q[s, :, rows].flatten(1, 2), grad_o[s, :, rows].flatten(1, 2)
            k_chunk, v_chunk = k[s, keys], v[s, keys]
            if kept:
                probs = kept[index].flatten(1, 2)
            else:
                masked_from = first_hidden_key(chunk.block, n, m) if ctx.causal_only else 0
                probs = _chunk_scores(q_chunk, k_chunk, hidden, chunk, log_sum_exp.dtype, masked_from)
                probs = probs.sub_(log_sum_exp[s, :, rows]).exp_().flatten(1, 2)
            # bmm into a new block, then one add: a baddbmm_ into the strided grad_v[s, keys] runs as a
            # loop of small GEMMs, 40% slower than the batched one
            grad_v[s, keys].add_(torch.bmm(probs.to(grad_o_chunk.dtype).transpose(1, 2), grad_o_chunk))
            grad_scores = torch.bmm(grad_o_chunk, v_chunk.transpose(1, 2)).to(log_sum_exp.dtype)
            grad_scores = grad_scores.sub_(row_dot[s, :, rows].flatten(1, 2)).mul_(probs).to(k.dtype)
            grad_q[s, :, rows] = torch.bmm(grad_scores, k_chunk).unflatten(1, (group, -1))
            grad_k[s, keys].add_(torch.bmm(grad_scores.transpose(1, 2), q_chunk))  # q is pre-scaled
        grad_q.mul_(ctx.scale)
        return (
            sum_to_shape(grad_q.view(*batch_shape, n, q.shape[-1]), Q_shape),
            sum_to_shape(grad_k.view(*kv_shape, m, k.shape[-1]), K_shape),
            sum_to_shape(grad_v.view(*kv_shape, m, d_v), V_shape),
            None,
            None,
        )


def chunked_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None, *,
                      causal: bool = False) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) V, cache-blocked; same arguments and result as the reference
    `seqlab.model.attention.scaled_dot_product_attention` (True = may attend; a query with no
    visible key gets a zero output)."""
    check_attention_inputs(Q, K, V, mask)
    return ChunkedAttentionFunction.apply(Q, K, V, mask, causal)
