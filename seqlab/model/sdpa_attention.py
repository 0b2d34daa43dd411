"""The `sdpa` attention backend: PyTorch's fused torch.nn.functional.scaled_dot_product_attention.

The one place where seqlab's model path calls a fused torch kernel. `sdpa_attention(Q, K, V, mask,
causal=...)` keeps the reference's convention where torch's differs: causal is aligned
bottom-right (the n queries are the last n of m positions; ``is_causal=True`` is passed only for
n == m, so CUDA's flash kernel can run), and a query row with no visible key gives zeros (and no
NaN gradient) whatever torch's kernel does with an empty row. Grouped-query K/V use
``enable_gqa=True`` on torch >= 2.5 and are expanded to Q's heads on older torch.

    >>> q = k = torch.eye(2)[None]; v = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    >>> sdpa_attention(q, k, v, causal=True)
    tensor([[[1.0000, 2.0000],
             [2.3395, 3.3395]]])
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seqlab.model.attention_inputs import causal_mask, check_attention_inputs
from seqlab.model.broadcast import broadcast_shapes

TORCH_HAS_GQA = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 5)


def group_size(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> int:
    """heads // kv_heads for Q (..., heads, n, d), K and V (..., kv_heads, m, d); a ValueError if
    K and V disagree or heads is not a multiple of kv_heads."""
    heads, kv_heads = q.shape[-3], k.shape[-3]
    if v.shape[-3] != kv_heads:
        raise ValueError(f"K has {kv_heads} heads but V has {v.shape[-3]} (shapes {tuple(k.shape)}, {tuple(v.shape)})")
    if kv_heads == 0 or heads % kv_heads != 0:
        raise ValueError(f"Q has {heads} heads and K/V {kv_heads}: the query heads must be a multiple of the "
                         f"key/value heads (grouped-query attention), shapes {tuple(q.shape)}, {tuple(k.shape)}")
    return heads // kv_heads


def sdpa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, *,
                   causal: bool = False) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d)) V by torch's fused scaled_dot_product_attention; the `sdpa` backend.

    Q (..., heads, n, d), K (..., kv_heads, m, d), V (..., kv_heads, m, d_v) with leading dims that
    broadcast and heads a multiple of kv_heads; mask bool broadcastable to (..., heads, n, m), True =
    the query may attend to the key; causal as in the reference (queries are the last n of m
    positions). Returns (..., heads, n, d_v) in Q's dtype; rows with no visible key are 0.
    """
    check_attention_inputs(q, k, v, mask)
    if min(q.dim(), k.dim(), v.dim()) < 3:
        raise ValueError(f"sdpa attention takes Q (..., heads, n, d) and K, V (..., kv_heads, m, d) with a heads "
                         f"dimension; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)} (add one with unsqueeze(-3))")
    group = group_size(q, k, v)
    n, m = q.shape[-2], k.shape[-2]
    is_causal = False
    if causal and n == m and mask is None:
        is_causal = True  # torch's top-left alignment is seqlab's bottom-right one when n == m
    elif causal and n > 1:
        visible = causal_mask(n, m, device=q.device)
        mask = visible if mask is None else mask & visible
    empty = None
    if mask is not None:
        # a row that sees no key would be -inf everywhere: give it every key, zero its output after
        empty = ~mask.any(-1, keepdim=True)
        mask = mask | empty
    # one batch dimension in front of the heads, as the fused kernels want (views where possible)
    leading = broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3],
                                     *(() if mask is None or mask.dim() < 4 else (mask.shape[:-3],)))
    q4, k4, v4 = (t.expand(*leading, *t.shape[-3:]).reshape(-1, *t.shape[-3:]) for t in (q, k, v))
    if mask is not None:
        mask = mask.reshape((1,) * max(0, 3 - mask.dim()) + tuple(mask.shape))  # at least (h, n, m)
        mask = mask.expand(*leading, *mask.shape[-3:]).reshape(-1, *mask.shape[-3:])
    gqa = {}
    if group > 1:
        if TORCH_HAS_GQA:
            gqa = dict(enable_gqa=True)
        else:  # kv head j serves query heads j*group .. (j+1)*group - 1
            k4, v4 = (t[:, :, None].expand(t.shape[0], t.shape[1], group, *t.shape[2:]).reshape(
                t.shape[0], t.shape[1] * group, *t.shape[2:]) for t in (k4, v4))
    out = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask, is_causal=is_causal, **gqa)
    out = out.reshape(*leading, *out.shape[-3:])
    if empty is not None:
        out = out.masked_fill(empty, 0.0)
    return out
