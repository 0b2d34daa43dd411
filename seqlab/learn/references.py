"""Every reference implementation the exercises are checked against, imported in one place.

An exercise's name is its reference function's name; ``seqlab learn solution NAME`` shows that
function's source. If a module moves, only this file changes.
"""

from __future__ import annotations

import importlib

# exercise name -> module that defines the function of that name
REFERENCE_MODULES: dict[str, str] = {
    "scalar_recurrence": "seqlab.labs.recurrence",
    "scalar_recurrence_backward": "seqlab.labs.recurrence",
    "rnn_step": "seqlab.labs.rnn",
    "rnn_forward": "seqlab.labs.rnn",
    "rnn_bptt": "seqlab.labs.rnn",
    "softmax_cross_entropy": "seqlab.labs.rnn",
    "truncated_bptt": "seqlab.labs.rnn",
    "clip_global_norm": "seqlab.labs.clipping",
    "lstm_cell_forward": "seqlab.labs.lstm",
    "lstm_bptt": "seqlab.labs.lstm",
    "gru_cell_forward": "seqlab.labs.gru",
    "gru_bptt": "seqlab.labs.gru",
    "causal_mask": "seqlab.labs.attention",
    "attention": "seqlab.labs.attention",
    "attention_backward": "seqlab.labs.attention",
    "multihead_attention": "seqlab.labs.attention",
    "choose_merge": "seqlab.tokenizer.merges",
    "train_bpe": "seqlab.tokenizer",
    # the LM components in PyTorch: seqlab.model's own functions and modules
    "softmax": "seqlab.model",
    "rms_norm": "seqlab.model.rmsnorm",
    "rotate_pairs": "seqlab.model.rope",
    "scaled_dot_product_attention": "seqlab.model",
    "cross_entropy": "seqlab.training",
    "lr_cosine_schedule": "seqlab.training",
    "adamw_step": "seqlab.learn.references",
    "get_batch": "seqlab.lm",
    "causal_multihead_self_attention": "seqlab.learn.references",
    "swiglu": "seqlab.learn.references",
    "transformer_block": "seqlab.learn.references",
    "transformer_lm": "seqlab.learn.references",
}

# exercises whose reference is a wrapper: `seqlab learn solution` shows this (module, name) too
SOLUTION_SOURCES: dict[str, tuple[str, str]] = {
    "adamw_step": ("seqlab.training", "AdamW"),
    "causal_multihead_self_attention": ("seqlab.model", "MultiHeadAttention"),
    "swiglu": ("seqlab.model", "SwiGLU"),
    "transformer_block": ("seqlab.model", "TransformerBlock"),
    "transformer_lm": ("seqlab.model", "TransformerLM"),
}


def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    """One update of seqlab.training.AdamW (its per-parameter form) on the tensor p from the state (m, v)
    after step - 1 steps. Returns the new (p, m, v); the arguments are not changed.

    The optimizer is made without torch.optim.Optimizer.__init__, whose add_param_group imports
    torch._dynamo (about 1.6 s) on first use; the update itself is AdamW's own code."""
    import torch

    from seqlab.training import AdamW
    param = p.detach().clone()
    optimizer = AdamW.__new__(AdamW)
    optimizer.state = {param: {"step": step - 1, "exp_avg": m.clone(), "exp_avg_sq": v.clone()}}
    param.grad = grad.clone()
    with torch.no_grad():
        optimizer._update_one({"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}, param)
    state = optimizer.state[param]
    return param.clone(), state["exp_avg"].clone(), state["exp_avg_sq"].clone()


def reference(name: str):
    """The reference function (or class) of the exercise ``name``."""
    return getattr(importlib.import_module(REFERENCE_MODULES[name]), name)


def helper(module: str, name: str):
    """A lab helper the mutants and checks reuse (rnn_forward, lstm_forward, ...)."""
    return getattr(importlib.import_module(module), name)



def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
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


def swiglu(x, w1_weight, w2_weight, w3_weight):
    """seqlab.model.SwiGLU with the given (out, in) weights: w1, w3 (d_ff, d_model), w2 (d_model, d_ff)."""
    import torch

    from seqlab.model import SwiGLU
    layer = SwiGLU(x.shape[-1], w1_weight.shape[0], dtype=x.dtype)
    with torch.no_grad():
        for linear, weight in ((layer.w1, w1_weight), (layer.w2, w2_weight), (layer.w3, w3_weight)):
            linear.weight.copy_(weight)
        return layer(x)


def _exact_rope(model) -> None:
    """Rebuild every RoPE table of ``model`` in float64: seqlab.model stores them in float32 (ample for
    training), which would put the reference 1e-8 away from a student's float64 angles."""
    import torch

    from seqlab.model import RotaryPositionalEmbedding
    from seqlab.model.rope import rope_angles
    for rope in (m for m in model.modules() if isinstance(m, RotaryPositionalEmbedding)):
        angles = rope_angles(rope.theta, rope.d_k, rope.max_seq_len, dtype=torch.float64)
        rope.cos, rope.sin = angles.cos(), angles.sin()


def transformer_block(x, weights, num_heads, theta=10000.0, eps=1e-5):
    """seqlab.model.TransformerBlock (pre-norm RMSNorm, causal attention with RoPE, SwiGLU) with the
    given weights, named as in its state dict, on x (batch, seq, d_model)."""
    import torch

    from seqlab.model import TransformerBlock
    seq, d_model = x.shape[-2], x.shape[-1]
    block = TransformerBlock(d_model, num_heads, weights["ffn.w1.weight"].shape[0], seq, theta, norm_eps=eps,
                             attention="reference", dtype=x.dtype)
    block.load_state_dict(weights)
    _exact_rope(block)
    with torch.no_grad():
        return block(x)


def transformer_lm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
    """seqlab.model.TransformerLM (untied output, final RMSNorm) with the given weights, named as in its
    state dict, on ids (batch, seq) -> logits (batch, seq, vocab)."""
    import torch

    from seqlab.model import TransformerLM
    vocab, d_model = weights["token_embeddings.weight"].shape
    model = TransformerLM(vocab, ids.shape[-1], d_model, num_layers, num_heads,
                          weights["layers.0.ffn.w1.weight"].shape[0], rope_theta=theta, norm_eps=eps,
                          attention="reference", dtype=weights["token_embeddings.weight"].dtype)
    model.load_state_dict(weights)
    _exact_rope(model)
    with torch.no_grad():
        return model(ids)
