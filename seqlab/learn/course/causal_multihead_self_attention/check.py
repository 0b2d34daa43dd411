"""causal_multihead_self_attention: the reference (seqlab.model.MultiHeadAttention with the given weights), the
cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import math

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, numbered_cases
from seqlab.learn.kit_torch import (counted, dtype, f32, grown, leading_dims, matches_where_finite, ops_do_not_grow,
                                    plain_softmax, randn, same_dtype_and_values)
from seqlab.learn.words import speaker

say = speaker(__file__)


def reference(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    """seqlab.model.MultiHeadAttention (causal, no RoPE) with the given (out, in) weights, on x (..., seq, d_model)."""
    import torch

    from seqlab.model import MultiHeadAttention
    d_model = x.shape[-1]
    # made without initialising its weights (they are replaced): the random init redraws a data-dependent
    # number of times, which would make the check's op count vary between calls
    layer = torch.nn.utils.skip_init(MultiHeadAttention, d_model, num_heads, causal=True, attention="reference",
                                     dtype=x.dtype)
    with torch.no_grad():
        for linear, weight in ((layer.q_proj, q_weight), (layer.k_proj, k_weight), (layer.v_proj, v_weight),
                               (layer.output_proj, o_weight)):
            linear.weight.copy_(weight)
        return layer(x)


def _args(shape, heads, seed):
    d = shape[-1]
    weights = tuple(randn(d, d, seed=seed * 10 + i, scale=d ** -0.5) for i in range(4))
    return (randn(*shape, seed=seed + 100), *weights, heads)


def cases() -> list[Case]:
    return numbered_cases(lambda k, seed, shape, heads: (_args(shape, heads, seed), {}),
                          ((0, (1, 3, 4), 2), (1, (2, 5, 8), 2), (2, (2, 4, 12), 3)))


CHECKS = {
    "leading dims": Check(lambda: [Case(say("case_no_batch"), _args((5, 8), 2, 140)),
                                   Case("x (batch, group, seq, d_model)", _args((2, 2, 4, 8), 2, 141))]),
    "projection": Check(lambda: [Case(say("case_4_heads"), _args((2, 5, 16), 4, 142))]),
    "dtype": Check(lambda: [Case(say("case_f32"), f32(*_args((2, 4, 8), 2, 143)))], same_dtype_and_values),
    "batched": Check(lambda: [Case(counted(2, "heads"), _args((2, 5, 16), 2, 144)),
                              grown(8, "heads", _args((2, 5, 16), 8, 144)),
                              Case(counted(4, "positions"), _args((2, 4, 8), 2, 145)),
                              grown(16, "positions", _args((2, 16, 8), 2, 145))],
                     ops_do_not_grow),
}
axes = {"": ("sequence", "position")}


# --- mistakes -----------------------------------------------------------------------------------------
def _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, *, interleaved=False, scale_width=True, shift=0,
          project=True, transposed=False, merge_interleaved=False, causal=True):
    import torch
    *batch, seq, d_model = x.shape
    width = d_model // num_heads

    def heads(t):
        if interleaved:                                    # column h, h + H, h + 2H, ... for head h
            return t.view(*batch, seq, width, num_heads).transpose(-1, -2).transpose(-3, -2)
        return t.view(*batch, seq, num_heads, width).transpose(-3, -2)

    def project_by(w):
        return x @ (w if transposed else w.T)

    q, k, v = heads(project_by(q_weight)), heads(project_by(k_weight)), heads(project_by(v_weight))
    scores = q @ k.transpose(-2, -1) / math.sqrt(width if scale_width else d_model)
    if causal:
        visible = torch.ones(seq, seq, dtype=torch.bool).tril(shift)
        scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.nan_to_num(plain_softmax(scores, -1), nan=0.0)
    out = weights @ v                                      # (..., heads, seq, width)
    if interleaved or merge_interleaved:
        merged = out.transpose(-3, -2).transpose(-1, -2).reshape(*batch, seq, d_model)
    else:
        merged = out.transpose(-3, -2).reshape(*batch, seq, d_model)
    return merged @ (o_weight if transposed else o_weight.T) if project else merged


def heads_split_interleaved(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, interleaved=True)


def heads_merged_interleaved(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, merge_interleaved=True)


def scaled_by_d_model(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, scale_width=False)


def causal_mask_excludes_current(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, shift=-1)


def causal_mask_includes_next(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, shift=1)


def no_causal_mask(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, causal=False)


def no_output_projection(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, project=False)


def weights_not_transposed(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, transposed=True)


MUTANTS = {"heads_split_interleaved": heads_split_interleaved, "heads_merged_interleaved": heads_merged_interleaved,
           "scaled_by_d_model": scaled_by_d_model, "causal_mask_excludes_current": causal_mask_excludes_current,
           "causal_mask_includes_next": causal_mask_includes_next, "no_causal_mask": no_causal_mask,
           "no_output_projection": no_output_projection, "weights_not_transposed": weights_not_transposed}
RECOGNISERS = {"causal_mask_excludes_current": matches_where_finite(causal_mask_excludes_current),
               "batched": D.failed_check("batched", raises=True), "leading_dims": leading_dims(), "dtype": dtype()}
