"""transformer_block: the reference (seqlab.model.TransformerBlock with the given weights), the cases, the checks
of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, numbered_cases
from seqlab.learn.kit_torch import (block, block_weights, causality, changed_last, dtype, exact_rope, f32,
                                    matches_where_finite, randn, same_dtype_and_values)
from seqlab.learn.words import speaker

say = speaker(__file__)


def reference(x, weights, num_heads, theta=10000.0, eps=1e-5):
    """seqlab.model.TransformerBlock (pre-norm RMSNorm, causal attention with RoPE, SwiGLU) with the
    given weights, named as in its state dict, on x (batch, seq, d_model)."""
    import torch

    from seqlab.model import TransformerBlock
    seq, d_model = x.shape[-2], x.shape[-1]
    layer = TransformerBlock(d_model, num_heads, weights["ffn.w1.weight"].shape[0], seq, theta, norm_eps=eps,
                             attention="reference", dtype=x.dtype)
    layer.load_state_dict(weights)
    exact_rope(layer)
    with torch.no_grad():
        return layer(x)


def _args(shape, heads, d_ff, seed, x_scale=1.0):
    return (randn(*shape, seed=seed + 100, scale=x_scale), block_weights(shape[-1], d_ff, seed * 20), heads)


def cases() -> list[Case]:
    made = numbered_cases(
        lambda k, seed, shape, heads, d_ff, theta: (_args(shape, heads, d_ff, seed),
                                                    {} if theta == 10000.0 else {"theta": theta}),
        ((0, (1, 3, 4), 2, 8, 10000.0), (1, (2, 5, 8), 2, 16, 100.0), (2, (2, 6, 12), 3, 20, 10000.0)))

    def change(x):
        x[..., -1, :] = x[..., -1, :] * -2 + 1
        return x
    made.append(changed_last(made[-1], change))
    return made


def _float32_case():
    x, weights, heads = _args((2, 4, 8), 2, 12, 162)
    return Case(say("case_f32"), (*f32(x), f32(weights), heads))


CHECKS = {
    "long sequence": Check(lambda: [Case("seq 24", _args((1, 24, 8), 2, 12, 160))]),
    "theta and eps": Check(lambda: [Case(say("case_theta_eps"), _args((2, 5, 8), 2, 12, 161, x_scale=0.1),
                                         {"theta": 500.0, "eps": 0.1})]),
    "dtype": Check(lambda: [_float32_case()], same_dtype_and_values),
}
relations = causality
axes = {"": ("sequence", "position")}


# --- mistakes -----------------------------------------------------------------------------------------
def post_norm(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, post_norm=True)


def no_attention_residual(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, attention_residual=False)


def no_ffn_residual(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, ffn_residual=False)


def causal_mask_excludes_current(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, shift=-1)


def causal_mask_includes_next(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, shift=1)


def rope_half_split(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, half_split=True)


def scaled_by_d_model(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, scale_width=False)


def norm_gains_swapped(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, norms_swapped=True)


def rope_not_applied(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, rope=False)


def relu_instead_of_silu(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return block(x, weights, num_heads, theta, eps, relu=True)


MUTANTS = {"post_norm": post_norm, "no_attention_residual": no_attention_residual, "no_ffn_residual": no_ffn_residual,
           "causal_mask_excludes_current": causal_mask_excludes_current,
           "causal_mask_includes_next": causal_mask_includes_next, "rope_half_split": rope_half_split,
           "scaled_by_d_model": scaled_by_d_model, "norm_gains_swapped": norm_gains_swapped,
           "rope_not_applied": rope_not_applied, "relu_instead_of_silu": relu_instead_of_silu}
RECOGNISERS = {"causal_mask_excludes_current": matches_where_finite(causal_mask_excludes_current),
               "long_sequence": D.failed_check("long sequence", raises=True),
               "theta_and_eps": D.failed_check("theta and eps", raises=True), "dtype": dtype()}
