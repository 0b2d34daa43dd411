"""The Triton kernels of seqlab's FlashAttention-2 (seqlab.model.flash_attention calls them).

Importing this module imports triton and defines the kernels; seqlab.model.flash_attention imports
it only when a flash kernel first runs, so ``import seqlab.model`` never needs triton. Triton reads
TRITON_INTERPRET when a kernel is defined, i.e. when this module is first imported: with
TRITON_INTERPRET=1 set before that, the kernels run on CPU tensors in Triton's interpreter (float32
only; how the tests check them on a machine without a GPU). INTERPRETED records which it was.

Every kernel works on (batch, heads, positions, head_dim) tensors given by their strides (the last
one need not be 1, but 1 is fastest), the head dimension padded to a power of two BLOCK_D >= 16 by
masked loads. Softmax arithmetic is float32 in base 2: scores are multiplied by
scale * log2(e) so exp2 replaces exp, and the saved log-sum-exp is converted back to base e.

Causal layout: the n queries are the last n of the m key positions, so query i sits at position
i + m - n and sees keys j <= i + m - n. A query tile stops at the last key its last row can see
(the tiles above the diagonal are never loaded), and a key tile starts at the first query tile
that can see it. A query that sees no key (i + m - n < 0) gets output 0 and log-sum-exp +inf, so
its recomputed probabilities exp(s - lse) are 0 in the backward pass.

Grouped-query attention: query head h reads key/value head h // group; the dK/dV kernel runs once
per key/value head and loops over the `group` query heads that share it, so no atomics are needed.
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
def flash_forward_kernel(
    Q, K, V, O, LSE,
    sqb, sqh, sqn, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, son, sod, slb, slh, sln,
    num_heads, group, n, m, head_dim, qk_scale,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """One (query tile, batch * head) per program: O = softmax(Q K^T s) V by online softmax, and the
    per-row log-sum-exp (base e). qk_scale = s * log2(e)."""
    start_m = tl.program_id(0) * BLOCK_M
    batch = tl.program_id(1) // num_heads
    head = tl.program_id(1) % num_heads
    kv_head = head // group
    rows = start_m + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    cols0 = tl.arange(0, BLOCK_N)
    row_ok = rows[:, None] < n
    dim_ok = dims[None, :] < head_dim
    q = tl.load(Q + batch * sqb + head * sqh + rows[:, None] * sqn + dims[None, :] * sqd,
                mask=row_ok & dim_ok, other=0.0)
    k_base = K + batch * skb + kv_head * skh
    v_base = V + batch * svb + kv_head * svh

    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max of the scores (base 2)
    row_sum = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(score - row_max)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)  # running sum of exp2(score - row_max) * v
    end = m
    if CAUSAL:  # the last row of this tile sees keys < start_m + BLOCK_M + m - n
        end = tl.minimum(m, start_m + BLOCK_M + (m - n))
    for start_n in range(0, end, BLOCK_N):
        cols = start_n + cols0
        col_ok = cols[:, None] < m
        k = tl.load(k_base + cols[:, None] * skn + dims[None, :] * skd, mask=col_ok & dim_ok, other=0.0)
        v = tl.load(v_base + cols[:, None] * svn + dims[None, :] * svd, mask=col_ok & dim_ok, other=0.0)
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
    tl.store(O + batch * sob + head * soh + rows[:, None] * son + dims[None, :] * sod,
             out.to(O.dtype.element_ty), mask=row_ok & dim_ok)
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
    rows0 = tl.arange(0, BLOCK_M)
    col_ok = cols[:, None] < m
    dim_ok = dims[None, :] < head_dim
    k = tl.load(K + batch * skb + kv_head * skh + cols[:, None] * skn + dims[None, :] * skd,
                mask=col_ok & dim_ok, other=0.0)
    v = tl.load(V + batch * svb + kv_head * svh + cols[:, None] * svn + dims[None, :] * svd,
                mask=col_ok & dim_ok, other=0.0)
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
            rows = start_m + rows0
            row_ok = rows[:, None] < n
            q = tl.load(q_base + rows[:, None] * sqn + dims[None, :] * sqd, mask=row_ok & dim_ok, other=0.0)
            do = tl.load(do_base + rows[:, None] * sdon + dims[None, :] * sdod, mask=row_ok & dim_ok, other=0.0)
            # rows past the end read lse = +inf: their probabilities are exp2(-inf) = 0
            lse = tl.load(l_base + rows * sln, mask=rows < n, other=float("inf")) * 1.4426950408889634
            delta = tl.load(d_base + rows * sln, mask=rows < n, other=0.0)
            scores = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
            p = tl.exp2(scores - lse[:, None])
            p = tl.where(_visible(rows, cols, n, m, CAUSAL), p, 0.0)
            dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PRECISION)
            dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PRECISION)
    dk = dk * sm_scale
    tl.store(DK + batch * sdkb + kv_head * sdkh + cols[:, None] * sdkn + dims[None, :] * sdkd,
             dk.to(DK.dtype.element_ty), mask=col_ok & dim_ok)
    tl.store(DV + batch * sdvb + kv_head * sdvh + cols[:, None] * sdvn + dims[None, :] * sdvd,
             dv.to(DV.dtype.element_ty), mask=col_ok & dim_ok)


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
    start_m = tl.program_id(0) * BLOCK_M
    batch = tl.program_id(1) // num_heads
    head = tl.program_id(1) % num_heads
    kv_head = head // group
    rows = start_m + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    cols0 = tl.arange(0, BLOCK_N)
    row_ok = rows[:, None] < n
    dim_ok = dims[None, :] < head_dim
    q = tl.load(Q + batch * sqb + head * sqh + rows[:, None] * sqn + dims[None, :] * sqd,
                mask=row_ok & dim_ok, other=0.0)
    do = tl.load(DO + batch * sdob + head * sdoh + rows[:, None] * sdon + dims[None, :] * sdod,
                 mask=row_ok & dim_ok, other=0.0)
    lse = tl.load(LSE + batch * slb + head * slh + rows * sln, mask=rows < n, other=float("inf")) * 1.4426950408889634
    delta = tl.load(DELTA + batch * slb + head * slh + rows * sln, mask=rows < n, other=0.0)
    k_base = K + batch * skb + kv_head * skh
    v_base = V + batch * svb + kv_head * svh
    qk_scale = sm_scale * 1.4426950408889634
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    end = m
    if CAUSAL:
        end = tl.minimum(m, start_m + BLOCK_M + (m - n))
    for start_n in range(0, end, BLOCK_N):
        cols = start_n + cols0
        col_ok = cols[:, None] < m
        k = tl.load(k_base + cols[:, None] * skn + dims[None, :] * skd, mask=col_ok & dim_ok, other=0.0)
        v = tl.load(v_base + cols[:, None] * svn + dims[None, :] * svd, mask=col_ok & dim_ok, other=0.0)
        scores = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
        p = tl.exp2(scores - lse[:, None])
        p = tl.where(_visible(rows, cols, n, m, CAUSAL), p, 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PRECISION)
    dq = dq * sm_scale
    tl.store(DQ + batch * sdqb + head * sdqh + rows[:, None] * sdqn + dims[None, :] * sdqd,
             dq.to(DQ.dtype.element_ty), mask=row_ok & dim_ok)
