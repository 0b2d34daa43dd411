"""The Triton kernels of seqlab's FlashAttention-2 (seqlab.model.flash_attention calls them).

Importing this module imports triton; with TRITON_INTERPRET=1 set before triton is imported the
kernels run on CPU tensors in Triton's interpreter (float32 only; how tests check them without a
GPU). INTERPRETED records which it was. Tensors are (batch, heads, positions, head_dim) by
strides, head_dim padded to a power of two BLOCK_D >= 16. Softmax is float32 in base 2 (exp2).
Causal: query i sits at position i + m - n; tiles above the diagonal are never loaded, and a query
that sees no key gets output 0 and log-sum-exp +inf. Grouped-query: the dK/dV kernel runs once per
key/value head over the query heads sharing it, so no atomics are needed.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"
# (inside the kernels log2(e) = 1.4426950408889634 and ln(2) = 0.6931471805599453 are written out:
# a jitted function reads no Python globals)


@triton.jit
def _visible(rows, cols, n, m, CAUSAL: tl.constexpr):
    """(rows, cols) bool: key col exists and, if CAUSAL, is at or before query row's position."""
    visible = (cols[None, :] < m) & (rows[:, None] < n)
    if CAUSAL:
        visible = visible & (cols[None, :] <= rows[:, None] + (m - n))
    return visible


@triton.jit
def _load_tile(base, positions, dims, stride_pos, stride_dim, count, head_dim):
    """(len(positions), BLOCK_D) tile of a (count, head_dim) matrix; 0 outside it."""
    return tl.load(base + positions[:, None] * stride_pos + dims[None, :] * stride_dim,
                   mask=(positions[:, None] < count) & (dims[None, :] < head_dim), other=0.0)


@triton.jit
def _store_tile(base, positions, dims, stride_pos, stride_dim, count, head_dim, values):
    tl.store(base + positions[:, None] * stride_pos + dims[None, :] * stride_dim, values.to(base.dtype.element_ty),
             mask=(positions[:, None] < count) & (dims[None, :] < head_dim))


@triton.jit
def _query_program(num_heads, group, BLOCK_M: tl.constexpr):
    """(first query, batch, head, kv head) of a program of the grid (query tiles, batch * heads)."""
    head = tl.program_id(1) % num_heads
    return tl.program_id(0) * BLOCK_M, tl.program_id(1) // num_heads, head, head // group


@triton.jit
def _key_end(start_m, n, m, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """Keys 0..end-1 are all a query tile starting at start_m can see (the causal tile skip)."""
    end = m
    if CAUSAL:  # the tile's last row sits at position start_m + BLOCK_M - 1 + m - n
        end = tl.minimum(m, start_m + BLOCK_M + (m - n))
    return end


@triton.jit
def _probabilities(q, k, lse2, rows, cols, n, m, qk_scale, CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    """P = exp(Q K^T s - lse) of one (query tile, key tile), recomputed from the saved log-sum-exp
    (lse2 = lse * log2(e)); 0 where hidden."""
    scores = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
    p = tl.exp2(scores - lse2[:, None])
    return tl.where(_visible(rows, cols, n, m, CAUSAL), p, 0.0)


@triton.jit
def flash_forward_kernel(
    Q, K, V, O, LSE,
    sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, son, sod, slb, slh, sln,
    num_heads, group, n, m, head_dim, qk_scale,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One (query tile, batch * head) per program: O = softmax(Q K^T s) V by online softmax, and the
    per-row log-sum-exp (base e). qk_scale = s * log2(e)."""
    start_m, batch, head, kv_head = _query_program(num_heads, group, BLOCK_M)
    rows = start_m + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    q = _load_tile(Q + batch * sqb + head * sqh, rows, dims, sqn, sqd, n, head_dim)
    k_base = K + batch * skb + kv_head * skh
    v_base = V + batch * svb + kv_head * svh

    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max of the scores (base 2)
    row_sum = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(score - row_max)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)  # running sum of exp2(score - row_max) * v
    for start_n in range(0, _key_end(start_m, n, m, BLOCK_M, CAUSAL), BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        k = _load_tile(k_base, cols, dims, skn, skd, m, head_dim)
        v = _load_tile(v_base, cols, dims, svn, svd, m, head_dim)
        scores = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
        scores = tl.where(_visible(rows, cols, n, m, CAUSAL), scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        # a row with nothing visible yet keeps max -inf; subtracting 0 instead avoids -inf - -inf = nan
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        p = tl.exp2(scores - safe_max[:, None])
        correction = tl.exp2(row_max - safe_max)
        row_sum = row_sum * correction + tl.sum(p, 1)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        row_max = new_max
    seen = row_sum > 0
    out = acc / tl.where(seen, row_sum, 1.0)[:, None]
    lse = tl.where(seen, (row_max + tl.log2(tl.where(seen, row_sum, 1.0))) * 0.6931471805599453, float("inf"))
    _store_tile(O + batch * sob + head * soh, rows, dims, son, sod, n, head_dim, out)
    tl.store(LSE + batch * slb + head * slh + rows * sln, lse, mask=rows < n)


@triton.jit
def flash_backward_dkdv_kernel(
    Q, K, V, DO, LSE, DELTA, DK, DV,
    sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sdob, sdoh, sdon, sdod,
    slb, slh, sln, sdkb, sdkh, sdkn, sdkd, sdvb, sdvh, sdvn, sdvd,
    num_kv_heads, group, n, m, head_dim, sm_scale,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One (key tile, batch * kv head) per program: dV = sum P^T dO, dK = sum dS^T Q s over the
    query tiles (and the `group` query heads) that see this key tile.

    P = exp(Q K^T s - lse), dS = P * (dO V^T - delta) with delta = rowsum(dO * O).
    """
    start_n = tl.program_id(0) * BLOCK_N
    batch = tl.program_id(1) // num_kv_heads
    kv_head = tl.program_id(1) % num_kv_heads
    cols = start_n + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, BLOCK_D)
    k = _load_tile(K + batch * skb + kv_head * skh, cols, dims, skn, skd, m, head_dim)
    v = _load_tile(V + batch * svb + kv_head * svh, cols, dims, svn, svd, m, head_dim)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    begin = 0
    if CAUSAL:  # the first query that sees key start_n is start_n - (m - n)
        begin = tl.maximum(0, start_n - (m - n)) // BLOCK_M * BLOCK_M
    for g in range(0, group):
        head = kv_head * group + g
        q_base = Q + batch * sqb + head * sqh
        do_base = DO + batch * sdob + head * sdoh
        l_base = LSE + batch * slb + head * slh
        d_base = DELTA + batch * slb + head * slh
        for start_m in range(begin, n, BLOCK_M):
            rows = start_m + tl.arange(0, BLOCK_M)
            q = _load_tile(q_base, rows, dims, sqn, sqd, n, head_dim)
            do = _load_tile(do_base, rows, dims, sdon, sdod, n, head_dim)
            # rows past the end read lse = +inf: their probabilities are exp2(-inf) = 0
            lse2 = tl.load(l_base + rows * sln, mask=rows < n, other=float("inf")) * 1.4426950408889634
            delta = tl.load(d_base + rows * sln, mask=rows < n, other=0.0)
            p = _probabilities(q, k, lse2, rows, cols, n, m, qk_scale, CAUSAL, PRECISION)
            dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PRECISION)
            dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
    _store_tile(DK + batch * sdkb + kv_head * sdkh, cols, dims, sdkn, sdkd, m, head_dim, dk * sm_scale)
    _store_tile(DV + batch * sdvb + kv_head * sdvh, cols, dims, sdvn, sdvd, m, head_dim, dv)


@triton.jit
def flash_backward_dq_kernel(
    Q, K, V, DO, LSE, DELTA, DQ,
    sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sdob, sdoh, sdon, sdod,
    slb, slh, sln, sdqb, sdqh, sdqn, sdqd,
    num_heads, group, n, m, head_dim, sm_scale,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One (query tile, batch * head) per program: dQ = sum dS K s over the key tiles it sees."""
    start_m, batch, head, kv_head = _query_program(num_heads, group, BLOCK_M)
    rows = start_m + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    q = _load_tile(Q + batch * sqb + head * sqh, rows, dims, sqn, sqd, n, head_dim)
    do = _load_tile(DO + batch * sdob + head * sdoh, rows, dims, sdon, sdod, n, head_dim)
    lse2 = tl.load(LSE + batch * slb + head * slh + rows * sln, mask=rows < n, other=float("inf")) * 1.4426950408889634
    delta = tl.load(DELTA + batch * slb + head * slh + rows * sln, mask=rows < n, other=0.0)
    k_base = K + batch * skb + kv_head * skh
    v_base = V + batch * svb + kv_head * svh
    qk_scale = sm_scale * 1.4426950408889634
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for start_n in range(0, _key_end(start_m, n, m, BLOCK_M, CAUSAL), BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        k = _load_tile(k_base, cols, dims, skn, skd, m, head_dim)
        v = _load_tile(v_base, cols, dims, svn, svd, m, head_dim)
        p = _probabilities(q, k, lse2, rows, cols, n, m, qk_scale, CAUSAL, PRECISION)
        dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
    _store_tile(DQ + batch * sdqb + head * sdqh, rows, dims, sdqn, sdqd, n, head_dim, dq * sm_scale)
