"""Common mistakes in the LM components, each written as the PyTorch implementation a student would
write with that mistake (no torch.nn.functional, like seqlab's own). Names: EXERCISE__MISTAKE.
A failed check runs them on the same inputs as the student's code; the diagnosis names the one whose
outputs match (seqlab.learn.torch_exercises also recognises their families from the structure)."""

from __future__ import annotations

import math

import torch

from seqlab.model.activations import log_softmax
from seqlab.model.rope import rope_angles


def _softmax(x, dim=-1):
    e = (x - x.amax(dim, keepdim=True)).exp()
    return e / e.sum(dim, keepdim=True)


# --- softmax ---------------------------------------------------------------------------------------------
def softmax__wrong_axis(x, dim=-1):
    return _softmax(x, 0)


def softmax__max_not_subtracted(x, dim=-1):
    e = x.exp()
    return e / e.sum(dim, keepdim=True)


def softmax__max_of_the_whole_tensor(x, dim=-1):
    e = (x - x.max()).exp()                                # one maximum for every row: small rows underflow to 0/0
    return e / e.sum(dim, keepdim=True)


def softmax__normalised_over_everything(x, dim=-1):
    e = (x - x.max()).exp()
    return e / e.sum()                                     # right only for a single row


# --- RMSNorm ----------------------------------------------------------------------------------------------
def rms_norm__eps_outside_the_root(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight


def rms_norm__mean_subtracted(x, weight, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)                 # that is LayerNorm's first step
    return centred / (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def rms_norm__weight_missing(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def rms_norm__mean_over_every_dimension(x, weight, eps=1e-5):
    return x / (x.pow(2).mean() + eps).sqrt() * weight     # one root mean square for the whole tensor


def rms_norm__eps_ignored(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt() * weight


# --- RoPE's rotation ----------------------------------------------------------------------------------------
def rotate_pairs__half_split_pairs(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]                    # pairs (k, k + d/2), the GPT-NeoX layout
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def rotate_pairs__rotated_backwards(x, cos, sin):
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos + odd * sin, -even * sin + odd * cos), dim=-1).flatten(-2)


def rotate_pairs__cos_and_sin_swapped(x, cos, sin):
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * sin - odd * cos, even * cos + odd * sin), dim=-1).flatten(-2)


def rotate_pairs__pairs_not_interleaved(x, cos, sin):
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.cat((even * cos - odd * sin, even * sin + odd * cos), dim=-1)   # rotated evens, then odds


# --- scaled dot-product attention ---------------------------------------------------------------------------
def _sdpa(Q, K, V, mask, causal, *, scale=None, dim=-1, shift=0, invert=False, combine="and", top_left=False,
          nan_rows=False):
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale(d_k))
    n, m = Q.shape[-2], K.shape[-2]
    causal_visible = torch.arange(m)[None, :] <= torch.arange(n)[:, None] + (0 if top_left else m - n) + shift
    if mask is None:
        visible = causal_visible if causal else torch.ones(n, m, dtype=torch.bool)
    else:
        given = ~mask if invert else mask
        if causal and combine == "and":
            visible = given & causal_visible
        elif causal and combine == "causal":
            visible = causal_visible & torch.ones_like(given)
        else:
            visible = given
    scores = scores.masked_fill(~visible, float("-inf"))
    if nan_rows:                                           # the plain softmax: a row of -inf gives 0/0
        return _softmax(scores, dim) @ V
    top = scores.amax(dim, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = (scores - top).exp()
    total = e.sum(dim, keepdim=True)
    weights = torch.where(total > 0, e / total.clamp_min(1e-300), torch.zeros_like(e))
    return weights @ V


def scaled_dot_product_attention__missing_scale(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, scale=lambda d: 1.0)


def scaled_dot_product_attention__scaled_by_d_k(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, scale=lambda d: d)


def scaled_dot_product_attention__softmax_over_queries(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, dim=-2)


def scaled_dot_product_attention__causal_mask_excludes_current(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, shift=-1)


def scaled_dot_product_attention__causal_mask_includes_next(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, shift=1)


def scaled_dot_product_attention__mask_inverted(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, invert=True)


def scaled_dot_product_attention__causal_ignored_with_a_mask(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, combine="mask")


def scaled_dot_product_attention__mask_ignored_when_causal(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, combine="causal")


def scaled_dot_product_attention__causal_from_the_first_key(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, top_left=True)     # query i sees keys 0..i even when m > n


def scaled_dot_product_attention__nan_on_fully_masked_rows(Q, K, V, mask=None, *, causal=False):
    return _sdpa(Q, K, V, mask, causal, nan_rows=True)


# --- cross-entropy ----------------------------------------------------------------------------------------
def _nll(logits, targets):
    logp = log_softmax(logits.reshape(-1, logits.shape[-1]))
    return -logp.gather(-1, targets.reshape(-1, 1).long())


def cross_entropy__summed_not_averaged(logits, targets):
    return _nll(logits, targets).sum()


def cross_entropy__log_softmax_over_wrong_axis(logits, targets):
    flat = logits.reshape(-1, logits.shape[-1])
    logp = log_softmax(flat, 0)
    return -logp.gather(-1, targets.reshape(-1, 1).long()).mean()


def cross_entropy__max_not_subtracted(logits, targets):
    flat = logits.reshape(-1, logits.shape[-1])
    logp = flat - flat.exp().sum(-1, keepdim=True).log()
    return -logp.gather(-1, targets.reshape(-1, 1).long()).mean()


def cross_entropy__probabilities_not_log(logits, targets):
    probs = _softmax(logits.reshape(-1, logits.shape[-1]))
    return -probs.gather(-1, targets.reshape(-1, 1).long()).mean()


def cross_entropy__averaged_over_the_vocabulary_too(logits, targets):
    return _nll(logits, targets).mean() / logits.shape[-1]


# --- the learning-rate schedule -----------------------------------------------------------------------------
def _schedule(it, high, low, warmup, cycle, *, warm=lambda it, w: it / w, progress=None, period=1.0,
              floor=True, swapped=False, warm_from_min=False):
    if it < warmup:
        if warm_from_min:
            return low + (high - low) * it / warmup
        return high * warm(it, warmup)
    if it > cycle and floor:
        return low
    p = (it - warmup) / (cycle - warmup) if progress is None else progress(it, warmup, cycle)
    top, bottom = (low, high) if swapped else (high, low)
    return bottom + 0.5 * (1 + math.cos(period * math.pi * p)) * (top - bottom)


def lr_cosine_schedule__warmup_off_by_one(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters,
                     warm=lambda it, w: (it + 1) / w)


def lr_cosine_schedule__warmup_from_min(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, warm_from_min=True)


def lr_cosine_schedule__cosine_over_the_whole_run(it, max_learning_rate, min_learning_rate, warmup_iters,
                                                  cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters,
                     progress=lambda it, w, c: it / c)    # the warm-up steps are counted in the cosine


def lr_cosine_schedule__full_cosine_period(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, period=2.0)


def lr_cosine_schedule__no_floor_after_the_cycle(it, max_learning_rate, min_learning_rate, warmup_iters,
                                                 cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, floor=False)


def lr_cosine_schedule__max_and_min_swapped(it, max_learning_rate, min_learning_rate, warmup_iters,
                                            cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, swapped=True)


# --- AdamW -------------------------------------------------------------------------------------------------
def _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, *, decay="parameter", correct=True, eps_inside=False,
           decay_after=False, eps_folded=False, decay_lr=True, step_shift=0, return_hats=False):
    beta1, beta2 = betas
    step = step + step_shift
    if decay == "moment":
        grad = grad + weight_decay * p                     # L2 in the gradient: it reaches m and v
    rate = lr * weight_decay if decay_lr else weight_decay
    new_p = p * (1 - rate) if decay == "parameter" and not decay_after else p.clone()
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat, v_hat = (m / (1 - beta1 ** step), v / (1 - beta2 ** step)) if correct else (m, v)
    if eps_folded:                                         # alpha_t = lr sqrt(1 - beta2^t) / (1 - beta1^t), eps beside sqrt(v)
        new_p = new_p - lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step) * m / (v.sqrt() + eps)
    else:
        denom = (v_hat + eps).sqrt() if eps_inside else v_hat.sqrt() + eps
        new_p = new_p - lr * m_hat / denom
    if decay_after:                                        # CS336's order: the decay on the updated parameter
        new_p = new_p - rate * new_p
    return (new_p, m_hat, v_hat) if return_hats else (new_p, m, v)


def adamw_step__decay_after_the_update(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay_after=True)


def adamw_step__cs336_algorithm(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay_after=True, eps_folded=True)


def adamw_step__eps_beside_the_uncorrected_root(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8,
                                                weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, eps_folded=True)


def adamw_step__eps_inside_the_root(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, eps_inside=True)


def adamw_step__decay_on_the_moment(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay="moment")


def adamw_step__no_bias_correction(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, correct=False)


def adamw_step__no_weight_decay(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, 0.0)


def adamw_step__decay_without_the_learning_rate(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8,
                                                weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay_lr=False)


def adamw_step__bias_correction_one_step_late(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8,
                                              weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, step_shift=1)


def adamw_step__corrected_moments_returned(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, return_hats=True)


def adamw_step__default_betas_and_eps(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, (0.9, 0.999), 1e-8, weight_decay)


# --- training batches -------------------------------------------------------------------------------------
def _windows(dataset, batch_size, context_length, generator, *, extra_start=0, shift=1, same=False):
    import numpy as np
    starts = generator.integers(0, len(dataset) - context_length + extra_start, size=batch_size)
    if same:
        starts = starts[:1].repeat(batch_size)             # one window for every row
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


def get_batch__one_window_for_every_row(dataset, batch_size, context_length, device, *, generator=None):
    return _windows(dataset, batch_size, context_length, generator, same=True)


# --- causal multi-head self-attention -------------------------------------------------------------------------
def _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, *, interleaved=False, scale_width=True, shift=0,
          project=True, transposed=False, merge_interleaved=False, causal=True):
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
    weights = torch.nan_to_num(_softmax(scores, -1), nan=0.0)
    out = weights @ v                                      # (..., heads, seq, width)
    if interleaved or merge_interleaved:
        merged = out.transpose(-3, -2).transpose(-1, -2).reshape(*batch, seq, d_model)
    else:
        merged = out.transpose(-3, -2).reshape(*batch, seq, d_model)
    return merged @ (o_weight if transposed else o_weight.T) if project else merged


def causal_multihead_self_attention__heads_split_interleaved(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, interleaved=True)


def causal_multihead_self_attention__heads_merged_interleaved(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, merge_interleaved=True)


def causal_multihead_self_attention__scaled_by_d_model(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, scale_width=False)


def causal_multihead_self_attention__causal_mask_excludes_current(x, q_weight, k_weight, v_weight, o_weight,
                                                                   num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, shift=-1)


def causal_multihead_self_attention__causal_mask_includes_next(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, shift=1)


def causal_multihead_self_attention__no_causal_mask(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, causal=False)


def causal_multihead_self_attention__no_output_projection(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, project=False)


def causal_multihead_self_attention__weights_not_transposed(x, q_weight, k_weight, v_weight, o_weight, num_heads):
    return _mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads, transposed=True)


# --- SwiGLU ------------------------------------------------------------------------------------------------
def swiglu__sigmoid_instead_of_silu(x, w1_weight, w2_weight, w3_weight):
    a, b = x @ w1_weight.T, x @ w3_weight.T
    return (torch.sigmoid(a) * b) @ w2_weight.T            # GLU's gate, not SiLU(a) = a * sigmoid(a)


def swiglu__gate_on_the_other_branch(x, w1_weight, w2_weight, w3_weight):
    a, b = x @ w1_weight.T, x @ w3_weight.T
    return (a * (b * torch.sigmoid(b))) @ w2_weight.T


def swiglu__no_gate(x, w1_weight, w2_weight, w3_weight):
    a = x @ w1_weight.T
    return (a * torch.sigmoid(a)) @ w2_weight.T


def swiglu__silu_after_the_product(x, w1_weight, w2_weight, w3_weight):
    h = (x @ w1_weight.T) * (x @ w3_weight.T)
    return (h * torch.sigmoid(h)) @ w2_weight.T


# --- the Transformer block and LM ----------------------------------------------------------------------------
def _rms(x, weight, eps, *, outside=False):
    if outside:
        return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def _rope(t, theta, *, half_split=False):
    """t (..., heads, seq, w): pair (2k, 2k+1) at position i rotated by i * theta^(-2k/w)."""
    seq, width = t.shape[-2], t.shape[-1]
    angles = rope_angles(theta, width, seq, dtype=t.dtype)
    cos, sin = angles.cos(), angles.sin()
    if half_split:
        a, b = t[..., :width // 2], t[..., width // 2:]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    even, odd = t[..., 0::2], t[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def _block(x, weights, num_heads, theta, eps, prefix="", *, post_norm=False, attention_residual=True,
           ffn_residual=True, shift=0, rope=True, half_split=False, scale_width=True,
           eps_outside=False, norms_swapped=False):
    w = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
    *batch, seq, d_model = x.shape
    width = d_model // num_heads
    ln1, ln2 = (w["ln2.weight"], w["ln1.weight"]) if norms_swapped else (w["ln1.weight"], w["ln2.weight"])

    def norm(h, gain):
        return _rms(h, gain, eps, outside=eps_outside)

    def attend(h):
        def heads(t):
            return t.view(*batch, seq, num_heads, width).transpose(-3, -2)
        q, k, v = (heads(h @ w[f"attn.{n}_proj.weight"].T) for n in "qkv")
        if rope:
            q, k = (_rope(t, theta, half_split=half_split) for t in (q, k))
        scores = q @ k.transpose(-2, -1) / math.sqrt(width if scale_width else d_model)
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(shift), float("-inf"))
        probs = torch.nan_to_num(_softmax(scores, -1), nan=0.0)   # a row with no visible key: 0
        out = (probs @ v).transpose(-3, -2).reshape(*batch, seq, d_model)
        return out @ w["attn.output_proj.weight"].T

    def ffn(h):
        a = h @ w["ffn.w1.weight"].T
        return ((a * torch.sigmoid(a)) * (h @ w["ffn.w3.weight"].T)) @ w["ffn.w2.weight"].T

    if post_norm:                                          # norm(x + sublayer(x)), the 2017 Transformer's order
        z = norm(x + attend(x), ln1)
        return norm(z + ffn(z), ln2)
    a = attend(norm(x, ln1))
    z = x + a if attention_residual else a
    f = ffn(norm(z, ln2))
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


def transformer_block__rope_half_split(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, half_split=True)


def transformer_block__scaled_by_d_model(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, scale_width=False)


def transformer_block__norm_gains_swapped(x, weights, num_heads, theta=10000.0, eps=1e-5):
    return _block(x, weights, num_heads, theta, eps, norms_swapped=True)


def _lm(ids, weights, num_layers, num_heads, theta, eps, *, final_norm=True, tied=False, rope=True, probs=False,
        order=None, log_probs=False):
    h = weights["token_embeddings.weight"][ids]
    for i in (range(num_layers) if order is None else order(num_layers)):   # layers in sequence: a loop over depth
        h = _block(h, weights, num_heads, theta, eps, f"layers.{i}.", rope=rope)
    if final_norm:
        h = _rms(h, weights["ln_final.weight"], eps)
    out = weights["token_embeddings.weight" if tied else "lm_head.weight"]
    logits = h @ out.T
    if log_probs:
        return log_softmax(logits, -1)
    return _softmax(logits, -1) if probs else logits


def transformer_lm__no_final_norm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, final_norm=False)


def transformer_lm__tied_output(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, tied=True)


def transformer_lm__rope_not_applied(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, rope=False)


def transformer_lm__softmax_applied(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, probs=True)


def transformer_lm__log_probabilities_returned(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, log_probs=True)


def transformer_lm__layers_in_reverse_order(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, order=lambda n: reversed(range(n)))


def transformer_lm__only_the_first_layer(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    return _lm(ids, weights, num_layers, num_heads, theta, eps, order=lambda n: range(1))
