"""Common mistakes in the LM components, each written as the PyTorch implementation a student would
write with that mistake (no torch.nn.functional, like seqlab's own). Names: EXERCISE__MISTAKE."""

from __future__ import annotations

import math

import torch

from seqlab.model.activations import log_softmax
from seqlab.model.rope import rope_angles


def _softmax(x, dim=-1):
    e = (x - x.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


def softmax__wrong_axis(x, dim=-1):
    return _softmax(x, 0)


def softmax__max_not_subtracted(x, dim=-1):
    e = x.exp()
    return e / e.sum(dim, keepdim=True)


def rms_norm__eps_outside_the_root(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight


def rms_norm__mean_subtracted(x, weight, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)                 # that is LayerNorm's first step
    return centred / (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def rms_norm__weight_missing(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def rotate_pairs__half_split_pairs(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]                    # pairs (k, k + d/2), the GPT-NeoX layout
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def rotate_pairs__rotated_backwards(x, cos, sin):
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos + odd * sin, -even * sin + odd * cos), dim=-1).flatten(-2)


def _sdpa(Q, K, V, mask, causal, *, scale=True, dim=-1, shift=0, invert=False):
    scores = Q @ K.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(Q.shape[-1])
    n, m = Q.shape[-2], K.shape[-2]
    visible = torch.ones(n, m, dtype=torch.bool)
    if mask is not None:
        visible = visible & (~mask if invert else mask)
    if causal:
        rows = torch.arange(n)[:, None] + (m - n)
        visible = visible & (torch.arange(m)[None, :] <= rows + shift)
    scores = scores.masked_fill(~visible, float("-inf"))
    top = scores.amax(dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = (scores - top).exp()
    total = e.sum(dim, keepdim=True)
    weights = torch.where(total > 0, e / total.clamp_min(1e-300), torch.zeros_like(e))
    return weights @ V


def scaled_dot_product_attention__missing_scale(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, scale=False)


def scaled_dot_product_attention__softmax_over_queries(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, dim=-2)


def scaled_dot_product_attention__causal_mask_excludes_current(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, shift=-1)


def scaled_dot_product_attention__causal_mask_includes_next(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, shift=1)


def scaled_dot_product_attention__mask_inverted(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, invert=True)


def cross_entropy__summed_not_averaged(logits, targets):
    logp = log_softmax(logits.reshape(-1, logits.shape[-1]))
    return -logp.gather(-1, targets.reshape(-1, 1).long()).sum()


def cross_entropy__log_softmax_over_wrong_axis(logits, targets):
    flat = logits.reshape(-1, logits.shape[-1])
    logp = log_softmax(flat, 0)
    return -logp.gather(-1, targets.reshape(-1, 1).long()).mean()


def lr_cosine_schedule__warmup_off_by_one(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    if it < warmup_iters:
        return max_learning_rate * (it + 1) / warmup_iters
    from seqlab.learn.references import reference
    return reference("lr_cosine_schedule")(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters)


def lr_cosine_schedule__cosine_over_the_whole_run(it, max_learning_rate, min_learning_rate, warmup_iters,
                                                  cosine_cycle_iters):
    if it < warmup_iters:
        return max_learning_rate * it / warmup_iters
    if it > cosine_cycle_iters:
        return min_learning_rate
    progress = it / cosine_cycle_iters                     # the warm-up steps are counted in the cosine
    return min_learning_rate + 0.5 * (1 + math.cos(math.pi * progress)) * (max_learning_rate - min_learning_rate)


def lr_cosine_schedule__full_cosine_period(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    if it < warmup_iters:
        return max_learning_rate * it / warmup_iters
    if it > cosine_cycle_iters:
        return min_learning_rate
    progress = (it - warmup_iters) / max(1, cosine_cycle_iters - warmup_iters)
    return min_learning_rate + 0.5 * (1 + math.cos(2 * math.pi * progress)) * (max_learning_rate - min_learning_rate)


def _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, *, decay="parameter", correct=True, eps_inside=False):
    beta1, beta2 = betas
    if decay == "moment":
        grad = grad + weight_decay * p                     # L2 in the gradient: it reaches m and v
    new_p = p * (1 - lr * weight_decay) if decay == "parameter" else p.clone()
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat, v_hat = (m / (1 - beta1 ** step), v / (1 - beta2 ** step)) if correct else (m, v)
    denom = (v_hat + eps).sqrt() if eps_inside else v_hat.sqrt() + eps
    return new_p - lr * m_hat / denom, m, v


def adamw_step__decay_on_the_moment(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay="moment")


def adamw_step__no_bias_correction(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, correct=False)


def adamw_step__no_weight_decay(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, 0.0)


def _windows(dataset, batch_size, context_length, generator, *, extra_start=0, shift=1):
    import numpy as np
    starts = generator.integers(0, len(dataset) - context_length + extra_start, size=batch_size)
    rows = np.stack([np.asarray(dataset[s:s + context_length + 1], dtype=np.int64) for s in starts])
    rows = torch.from_numpy(rows)
    return rows[:, :context_length], rows[:, shift:shift + context_length]


def get_batch__targets_not_shifted(dataset, batch_size, context_length, device, *, generator=None):
    return _windows(dataset, batch_size, context_length, generator, shift=0)


def get_batch__one_start_too_many(dataset, batch_size, context_length, device, *, generator=None):
    return _windows(dataset, batch_size, context_length, generator, extra_start=1)


def get_batch__inputs_and_targets_swapped(dataset, batch_size, context_length, device, *, generator=None):
    inputs, targets = _windows(dataset, batch_size, context_length, generator)
    return targets, inputs


def _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, *, interleaved=False, scale_width=True, shift=0,
          project=True):
    *batch, seq, d_model = x.shape
    width = d_model // num_heads

    def heads(t):
        if interleaved:                                    # column h, h + H, h + 2H, ... for head h
            return t.view(*batch, seq, width, num_heads).transpose(-1, -2).transpose(-3, -2)
        return t.view(*batch, seq, num_heads, width).transpose(-3, -2)

    q, k, v = heads(x @ q_weight.T), heads(x @ k_weight.T), heads(x @ v_weight.T)
    scores = q @ k.transpose(-2, -1) / math.sqrt(width if scale_width else d_model)
    visible = torch.ones(seq, seq, dtype=torch.bool).tril(shift)
    scores = scores.masked_fill(~visible, float("-inf"))
    weights = _softmax(scores, -1)
    weights = torch.nan_to_num(weights, nan=0.0)
    out = weights @ v                                      # (..., heads, seq, width)
    if interleaved:
        merged = out.transpose(-3, -2).transpose(-1, -2).reshape(*batch, seq, d_model)
    else:
        merged = out.transpose(-3, -2).reshape(*batch, seq, d_model)
    return merged @ o_weight.T if project else merged


def causal_multihead_self_attention__heads_split_interleaved(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, interleaved=True)


def causal_multihead_self_attention__scaled_by_d_model(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, scale_width=False)


def causal_multihead_self_attention__causal_mask_excludes_current(x, q_weight, k_weight, v_weight, o_weight,
                                                                   num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, shift=-1)


def causal_multihead_self_attention__causal_mask_includes_next(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, shift=1)


def causal_multihead_self_attention__no_output_projection(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, project=False)


def swiglu__sigmoid_instead_of_silu(x, w1_weight, w2_weight, w3_weight):
    a, b = x @ w1_weight.T, x @ w3_weight.T
    return (torch.sigmoid(a) * b) @ w2_weight.T            # GLU's gate, not SiLU(a) = a * sigmoid(a)


def swiglu__gate_on_the_other_branch(x, w1_weight, w2_weight, w3_weight):
    a, b = x @ w1_weight.T, x @ w3_weight.T
    return (a * (b * torch.sigmoid(b))) @ w2_weight.T


def swiglu__no_gate(x, w1_weight, w2_weight, w3_weight):
    a = x @ w1_weight.T
    return (a * torch.sigmoid(a)) @ w2_weight.T


def _rms(x, weight, eps):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def _rope(t, theta):
    """t (..., heads, seq, w): pair (2k, 2k+1) at position i rotated by i * theta^(-2k/w)."""
    seq, width = t.shape[-2], t.shape[-1]
    angles = rope_angles(theta, width, seq, dtype=t.dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = t[..., 0::2], t[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def _block(x, weights, num_heads, theta, eps, prefix="", *, post_norm=False, attention_residual=True,
           ffn_residual=True, shift=0, rope=True):
    w = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
    *batch, seq, d_model = x.shape
    width = d_model // num_heads

    def attend(h):
        def heads(t):
            return t.view(*batch, seq, num_heads, width).transpose(-3, -2)
        q, k, v = (heads(h @ w[f"attn.{n}_proj.weight"].T) for n in "qkv")
        if rope:
            q, k = _rope(q, theta), _rope(k, theta)
        scores = q @ k.transpose(-2, -1) / math.sqrt(width)
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(shift), float("-inf"))
        probs = torch.nan_to_num(_softmax(scores, -1), nan=0.0)   # a row with no visible key: 0
        out = (probs @ v).transpose(-3, -2).reshape(*batch, seq, d_model)
        return out @ w["attn.output_proj.weight"].T

    def ffn(h):
        a = h @ w["ffn.w1.weight"].T
        return ((a * torch.sigmoid(a)) * (h @ w["ffn.w3.weight"].T)) @ w["ffn.w2.weight"].T

    if post_norm:                                          # norm(x + sublayer(x)), the 2017 Transformer's order
        z = _rms(x + attend(x), w["ln1.weight"], eps)
        return _rms(z + ffn(z), w["ln2.weight"], eps)
    a = attend(_rms(x, w["ln1.weight"], eps))
    z = x + a if attention_residual else a
    f = ffn(_rms(z, w["ln2.weight"], eps))
    return z + f if ffn_residual else f


def transformer_block__post_norm(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, post_norm=True)


def transformer_block__no_attention_residual(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, attention_residual=False)


def transformer_block__no_ffn_residual(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, ffn_residual=False)


def transformer_block__causal_mask_excludes_current(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, shift=-1)


def transformer_block__causal_mask_includes_next(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, shift=1)


def _lm(ids, weights, num_layers, num_heads, theta, eps, *, final_norm=True, tied=False, rope=True, probs=False):
    h = weights["token_embeddings.weight"][ids]
    for i in range(num_layers):                            # layers run in sequence: a loop over depth
        h = _block(h, weights, num_heads, theta, eps, f"layers.{i}.", rope=rope)
    if final_norm:
        h = _rms(h, weights["ln_final.weight"], eps)
    out = weights["token_embeddings.weight" if tied else "lm_head.weight"]
    logits = h @ out.T
    return _softmax(logits, -1) if probs else logits


def transformer_lm__no_final_norm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, final_norm=False)


def transformer_lm__tied_output(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, tied=True)


def transformer_lm__rope_not_applied(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, rope=False)


def transformer_lm__softmax_applied(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, probs=True)
