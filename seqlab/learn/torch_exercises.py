"""The Implement exercises of the Transformer LM's components, in PyTorch, checked against seqlab's own.

The same rule as seqlab's code: no torch.nn.functional, no torch.nn layers, no torch.optim. Inputs are
float64, so the reference and the student's code agree to 1e-6 unless one of them is wrong.
"""

from __future__ import annotations

from seqlab.learn.exercise import Case, Exercise, Mistake, numbered_cases
from seqlab.learn.references import reference

_IMPORTS = "import math\n\nimport torch"
_RULE = "\n    Write it with tensor operations only: no torch.nn.functional, no torch.nn layers."


def _ref(name):
    return lambda: reference(name)


def _mistake(name, title, explanation):
    """A mistake of seqlab.learn.torch_mistakes, imported (with torch) only when it is run: the
    command's own process imports torch while the child runs the student's code, not before."""
    def implementation(*args, **kwargs):
        from seqlab.learn import torch_mistakes
        return getattr(torch_mistakes, name)(*args, **kwargs)
    return Mistake(name.split("__", 1)[1], title, explanation, implementation)


def _torch_exercise(*fields, imports=_IMPORTS, **options):
    """An Exercise on tensors: its stub imports torch, and its check may take 30 s (the child imports torch)."""
    return Exercise(*fields, imports=imports, kind="torch", time_limit=30.0, **options)


def _gen(seed):
    import torch
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed, scale=1.0):
    import torch
    return torch.randn(*shape, generator=_gen(seed), dtype=torch.float64) * scale


def _softmax_cases():
    import torch
    return [Case("the worked example", (torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1001.0]], dtype=torch.float64),)),
            Case("random inputs 1", (_randn(2, 3, 5, seed=1, scale=3),), {"dim": 1}),
            Case("random inputs 2", (_randn(4, 6, seed=2, scale=50),), {"dim": -1})]


def _softmax_invariants(case, out):
    import torch
    dim = case.kwargs.get("dim", -1)
    sums = out.sum(dim)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-9):
        return f"the probabilities along dim {dim} sum to {sums.flatten()[0].item():.6g}, not 1"
    return None


SOFTMAX = _torch_exercise(
    "softmax", "Softmax (PyTorch)", "softmax（PyTorch）", "softmax(x, dim=-1)",
    """exp(x - max) / sum(exp(x - max)) along `dim`; x any shape -> the same shape.
    Subtract the maximum along `dim` first, so logits of 1000 give no inf or NaN.""" + _RULE,
    _ref("softmax"), _softmax_cases,
    (_mistake("softmax__wrong_axis", "softmax over the wrong axis",
              "normalize along the `dim` argument (the last axis by default), not axis 0"),
     _mistake("softmax__max_not_subtracted", "the maximum is not subtracted",
              "exp(1000) overflows to inf and inf/inf is NaN: subtract x.amax(dim, keepdim=True) first")),
    returns="a tensor of x's shape", invariants=_softmax_invariants)


def _rms_cases():
    import torch
    return [Case("the worked example", (torch.tensor([[3.0, 4.0], [1e-3, -1e-3]], dtype=torch.float64),
                                        torch.tensor([1.0, 2.0], dtype=torch.float64)), {"eps": 1e-5}),
            Case("random inputs 1", (_randn(2, 3, 8, seed=3), _randn(8, seed=4) + 1)),
            Case("random inputs 2 (small inputs)", (_randn(4, 6, seed=5, scale=1e-2), _randn(6, seed=6) + 1),
                 {"eps": 1e-3})]


RMS_NORM = _torch_exercise(
    "rms_norm", "RMSNorm (PyTorch)", "RMSNorm（PyTorch）", "rms_norm(x, weight, eps=1e-5)",
    """x / sqrt(mean(x^2 over the last dim) + eps) * weight; x (..., d), weight (d,) -> (..., d).
    eps goes INSIDE the square root. [3, 4] with weight 1 -> [3, 4] / sqrt(12.5 + eps).""" + _RULE,
    _ref("rms_norm"), _rms_cases,
    (_mistake("rms_norm__eps_outside_the_root", "RMSNorm without the epsilon inside the root",
              "the formula is x / sqrt(mean(x^2) + eps); sqrt(mean(x^2)) + eps differs for small inputs"),
     _mistake("rms_norm__mean_subtracted", "the mean is subtracted (that is LayerNorm)",
              "RMSNorm does not centre: divide x itself by its root mean square"),
     _mistake("rms_norm__weight_missing", "the gain is not applied", "multiply the normalized x by weight (d,)")),
    returns="a tensor of x's shape")


def _rope_tables(seq, half, theta=10000.0):
    from seqlab.model.rope import rope_angles
    angles = rope_angles(theta, 2 * half, seq)  # float64
    return angles.cos(), angles.sin()


def _rope_cases():
    import torch
    cos, sin = _rope_tables(3, 2)
    cases = [Case("the worked example", (torch.tensor([[1.0, 0.0, 0.0, 1.0]] * 3, dtype=torch.float64), cos, sin))]
    cos, sin = _rope_tables(5, 4)
    cases.append(Case("random inputs 1", (_randn(2, 5, 8, seed=7), cos, sin)))
    cases.append(Case("random inputs 2", (_randn(3, 2, 5, 8, seed=8), cos, sin)))
    return cases


ROTATE_PAIRS = _torch_exercise(
    "rotate_pairs", "RoPE: rotating pairs (PyTorch)", "旋转位置编码：旋转分量对（PyTorch）", "rotate_pairs(x, cos, sin)",
    """Rotate each ADJACENT pair (x[..., 2k], x[..., 2k+1]) of x (..., seq, d) by the angle whose cos/sin are given:
    (a, b) -> (a cos - b sin, a sin + b cos). cos, sin: (seq, d/2), broadcast over x's leading dims.
    Returns a tensor of x's shape, the pairs interleaved as in x.""" + _RULE,
    _ref("rotate_pairs"), _rope_cases,
    (_mistake("rotate_pairs__half_split_pairs", "RoPE on half-split instead of interleaved pairs",
              "the pairs are (2k, 2k+1), adjacent entries, as in the paper and in seqlab; (k, k + d/2) is another layout "
              "whose weights need a permutation"),
     _mistake("rotate_pairs__rotated_backwards", "the rotation goes the other way",
              "(a, b) -> (a cos - b sin, a sin + b cos): the minus sign is on b in the first component")),
    returns="a tensor of x's shape")


def _sdpa_cases():
    import torch
    eye = torch.eye(2, dtype=torch.float64)
    V = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
    cases = [Case("the worked example", (eye, eye, V), {"causal": True})]
    cases.append(Case("random inputs 1", (_randn(2, 3, 4, 8, seed=9), _randn(2, 3, 4, 8, seed=10), _randn(2, 3, 4, 5, seed=11))))
    cases.append(Case("random inputs 2 (causal)", (_randn(2, 5, 4, seed=12, scale=2), _randn(2, 5, 4, seed=13, scale=2),
                                                   _randn(2, 5, 3, seed=14)), {"causal": True}))
    mask = torch.tensor([[True, False, True, True, False]] * 3)
    cases.append(Case("random inputs 3 (mask)", (_randn(3, 6, seed=15), _randn(5, 6, seed=16), _randn(5, 2, seed=17)),
                      {"mask": mask}))
    return cases


SDPA = _torch_exercise(
    "scaled_dot_product_attention", "Scaled dot-product attention (PyTorch)", "缩放点积注意力（PyTorch）",
    "scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False)",
    """softmax(Q K^T / sqrt(d_k)) V. Q (..., n, d_k), K (..., m, d_k), V (..., m, d_v) -> (..., n, d_v).
    mask: bool (n, m) or broadcastable, True = the query may attend the key. causal=True also hides
    keys after each query (query i sees keys 0..i when n == m). A row with no visible key outputs 0.
    Worked example: Q = K = I, V = [[1, 2], [3, 4]], causal -> [[1, 2], [2.34, 3.34]].""" + _RULE,
    _ref("scaled_dot_product_attention"), _sdpa_cases,
    (_mistake("scaled_dot_product_attention__missing_scale", "a missing 1/sqrt(d_k)",
              "divide the scores Q K^T by sqrt(d_k) before the softmax"),
     _mistake("scaled_dot_product_attention__softmax_over_queries", "softmax over the wrong axis",
              "normalize each query's row over the keys (dim=-1), not over the queries (dim=-2)"),
     _mistake("scaled_dot_product_attention__causal_mask_excludes_current",
              "causal mask off by one: the current position excluded",
              "query i may attend key i itself: keep j <= i (torch.tril with diagonal=0)"),
     _mistake("scaled_dot_product_attention__causal_mask_includes_next",
              "causal mask off by one: the next (future) position included",
              "query i must not see key i+1: j <= i, not j <= i + 1"),
     _mistake("scaled_dot_product_attention__mask_inverted", "the mask read inverted",
              "True means MAY attend: fill -inf where the mask is False")),
    returns="a tensor (..., n, d_v)")


def _ce_cases():
    import torch
    gen = _gen(18)
    return [Case("the worked example", (torch.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]], dtype=torch.float64),
                                        torch.tensor([0, 1]))),
            Case("random inputs 1", (_randn(2, 4, 7, seed=19, scale=3), torch.randint(0, 7, (2, 4), generator=gen))),
            Case("random inputs 2 (large logits)", (_randn(5, 6, seed=20, scale=300), torch.randint(0, 6, (5,), generator=gen)))]


CROSS_ENTROPY = _torch_exercise(
    "cross_entropy", "Cross-entropy (PyTorch)", "交叉熵（PyTorch）", "cross_entropy(logits, targets)",
    """Mean over every position of -log softmax(logits)[target]. logits (..., vocab) float, targets (...)
    ints -> a 0-d tensor. Use log-sum-exp with the maximum subtracted, so logits of 1000 stay finite.""" + _RULE,
    _ref("cross_entropy"), _ce_cases,
    (_mistake("cross_entropy__summed_not_averaged", "the loss is summed, not averaged",
              "divide by the number of positions (the mean over every leading dimension)"),
     _mistake("cross_entropy__log_softmax_over_wrong_axis", "log-softmax over the wrong axis",
              "normalize over the vocabulary (the last dimension), not over the positions")),
    returns="a 0-d tensor")


def _schedule_cases():
    worked = [Case("the worked example" if it == 0 else f"the worked example, step {it}", (it, 1.0, 0.1, 4, 12))
              for it in (0, 2, 4, 8, 12, 20)]
    return worked[:1] + [Case(f"random inputs, step {c.args[0]}", c.args) for c in worked[1:]] + [
        Case("random inputs, step 37", (37, 3e-4, 3e-5, 10, 100))]


LR_COSINE_SCHEDULE = _torch_exercise(
    "lr_cosine_schedule", "The cosine learning-rate schedule", "余弦学习率调度",
    "lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters)",
    """Learning rate at iteration `it` (0-based), a float.
    it < warmup_iters: max * it / warmup_iters (linear warm-up from 0);
    warmup_iters <= it <= cosine_cycle_iters: min + (max - min) * (1 + cos(pi * progress)) / 2 with
    progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters);
    it > cosine_cycle_iters: min.""",
    _ref("lr_cosine_schedule"), _schedule_cases,
    (_mistake("lr_cosine_schedule__warmup_off_by_one", "the warm-up is off by one",
              "step 0 has learning rate 0: max * it / warmup_iters, not max * (it + 1) / warmup_iters"),
     _mistake("lr_cosine_schedule__cosine_over_the_whole_run", "the cosine counts the warm-up steps",
              "progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters): the cosine starts after the warm-up"),
     _mistake("lr_cosine_schedule__full_cosine_period", "a full cosine period instead of half",
              "cos(pi * progress) goes from max down to min once; cos(2 pi progress) comes back up")),
    returns="a float", imports="import math")


def _adamw_cases():
    import torch

    def make(k, seed, step, wd):
        p, g = _randn(3, 4, seed=seed), _randn(3, 4, seed=seed + 10)
        m = torch.zeros(3, 4, dtype=torch.float64) if step == 1 else _randn(3, 4, seed=seed + 20, scale=0.1)
        v = torch.zeros(3, 4, dtype=torch.float64) if step == 1 else _randn(3, 4, seed=seed + 30, scale=0.1) ** 2
        return (p, g, m, v, step, 0.01), {"weight_decay": wd}
    return numbered_cases(make, ((0, 1, 0.1), (1, 5, 0.01), (2, 40, 0.3)))


ADAMW_STEP = _torch_exercise(
    "adamw_step", "One AdamW step", "AdamW 的一步",
    "adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)",
    """One AdamW update of the tensor p, as seqlab.training.AdamW does it. step: this update's number, 1-based.
    p <- p - lr * weight_decay * p           (decoupled weight decay: on the PARAMETER, not in the gradient)
    m <- beta1 m + (1 - beta1) grad;  v <- beta2 v + (1 - beta2) grad^2
    p <- p - lr * m_hat / (sqrt(v_hat) + eps), m_hat = m / (1 - beta1^step), v_hat = v / (1 - beta2^step)
    Returns new tensors (p, m, v); do not change the arguments.""" + _RULE + " No torch.optim.",
    _ref("adamw_step"), _adamw_cases,
    (_mistake("adamw_step__decay_on_the_moment", "AdamW weight decay applied to the moment instead of the parameter",
              "adding weight_decay * p to the gradient is L2 regularisation (Adam), and it is rescaled by v; AdamW "
              "decays the parameter itself: p <- p - lr * weight_decay * p"),
     _mistake("adamw_step__no_bias_correction", "no bias correction",
              "divide m by 1 - beta1^step and v by 1 - beta2^step: early steps are otherwise far too small"),
     _mistake("adamw_step__no_weight_decay", "the weight decay is missing", "apply p <- p - lr * weight_decay * p")),
    returns="a tuple (p, m, v) of tensors")


def _batch_cases():
    import numpy as np
    worked = np.arange(10, 20, dtype=np.int64)
    return [Case("the worked example", (worked, 4, 3, "cpu"), {"generator": np.random.default_rng(0)}),
            Case("random inputs 1", (np.random.default_rng(1).integers(0, 50, 40), 8, 5, "cpu"),
                 {"generator": np.random.default_rng(2)}),
            Case("random inputs 2", (np.arange(60, dtype=np.int64) * 7 % 23, 6, 4, "cpu"),
                 {"generator": np.random.default_rng(3)})]


GET_BATCH = _torch_exercise(
    "get_batch", "Training batches", "训练批次", "get_batch(dataset, batch_size, context_length, device, *, generator=None)",
    """batch_size windows at random starts of the 1-D token array dataset -> (inputs, targets), both int64
    tensors (batch_size, context_length) on device, with targets[i, j] = dataset[start_i + j + 1] (the
    next token). Draw the starts as generator.integers(0, len(dataset) - context_length, size=batch_size)
    (a window needs context_length + 1 tokens), so your batch is the reference's.""",
    _ref("get_batch"), _batch_cases,
    (_mistake("get_batch__targets_not_shifted", "the targets are not shifted",
              "a language model predicts the NEXT token: targets = dataset[start + 1 : start + context_length + 1]"),
     _mistake("get_batch__one_start_too_many", "one start too many",
              "the last window would need a token after the end: draw starts from 0 to len(dataset) - context_length (exclusive)"),
     _mistake("get_batch__inputs_and_targets_swapped", "inputs and targets swapped",
              "return (inputs, targets): the inputs start at start, the targets one token later")),
    returns="a tuple (inputs, targets) of int64 tensors", imports="import numpy as np\nimport torch",
    may_change=("generator",))


def _mhsa_cases():
    def make(k, seed, shape, heads):
        d = shape[-1]
        weights = tuple(_randn(d, d, seed=seed * 10 + i, scale=d ** -0.5) for i in range(4))
        return (_randn(*shape, seed=seed + 100), *weights, heads), {}
    return numbered_cases(make, ((0, (1, 3, 4), 2), (1, (2, 5, 8), 2), (2, (2, 4, 12), 3)))


CAUSAL_MHSA = _torch_exercise(
    "causal_multihead_self_attention", "Causal multi-head self-attention (PyTorch)", "因果多头自注意力（PyTorch）",
    "causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads)",
    """x (batch..., seq, d_model); each weight (d_model, d_model) in torch's (out, in) layout: Q = x @ q_weight.T, ...
    Head h takes the contiguous columns h*w:(h+1)*w (w = d_model / num_heads: a view as (..., seq, heads, w));
    each head: causal scaled dot-product attention with scale 1/sqrt(w); concatenate the heads in order;
    output = concat @ o_weight.T -> (batch..., seq, d_model). No loop over heads or positions: batched ops.""" + _RULE,
    _ref("causal_multihead_self_attention"), _mhsa_cases,
    (_mistake("causal_multihead_self_attention__heads_split_interleaved", "heads split as interleaved columns",
              "view the projection as (..., seq, heads, w): head h is columns h*w:(h+1)*w, not every heads-th column"),
     _mistake("causal_multihead_self_attention__scaled_by_d_model", "scores scaled by 1/sqrt(d_model)",
              "each head's d_k is its width w = d_model / num_heads"),
     _mistake("causal_multihead_self_attention__causal_mask_excludes_current",
              "causal mask off by one: the current position excluded", "position i attends to 0..i, itself included"),
     _mistake("causal_multihead_self_attention__causal_mask_includes_next",
              "causal mask off by one: the next (future) position included", "position i must not see i+1"),
     _mistake("causal_multihead_self_attention__no_output_projection", "the output projection is missing",
              "after concatenating the heads, multiply by o_weight.T")),
    returns="a tensor of x's shape")


def _swiglu_cases():
    def make(k, seed, shape, d_ff):
        d = shape[-1]
        return (_randn(*shape, seed=seed), _randn(d_ff, d, seed=seed + 10, scale=d ** -0.5),
                _randn(d, d_ff, seed=seed + 20, scale=d_ff ** -0.5), _randn(d_ff, d, seed=seed + 30, scale=d ** -0.5)), {}
    return numbered_cases(make, ((0, (2, 4), 6), (1, (2, 3, 8), 16), (2, (5, 6), 12)))


SWIGLU = _torch_exercise(
    "swiglu", "SwiGLU feed-forward (PyTorch)", "SwiGLU 前馈网络（PyTorch）", "swiglu(x, w1_weight, w2_weight, w3_weight)",
    """w2(silu(w1 x) * w3 x), silu(a) = a * sigmoid(a); weights in torch's (out, in) layout: w1, w3 (d_ff, d_model),
    w2 (d_model, d_ff), so w1 x = x @ w1_weight.T. x (..., d_model) -> (..., d_model).""" + _RULE,
    _ref("swiglu"), _swiglu_cases,
    (_mistake("swiglu__sigmoid_instead_of_silu", "sigmoid instead of SiLU",
              "SiLU(a) = a * sigmoid(a); sigmoid(a) alone is GLU's gate"),
     _mistake("swiglu__gate_on_the_other_branch", "the SiLU on the w3 branch",
              "the SiLU goes on w1 x; w3 x is the linear branch it multiplies"),
     _mistake("swiglu__no_gate", "the w3 branch is missing", "multiply SiLU(w1 x) elementwise by w3 x before w2")),
    returns="a tensor of x's shape")


CHANGED = " (its last position changed)"


def _block_weights(d_model, d_ff, seed, prefix=""):
    shapes = {"ln1.weight": (d_model,), "attn.q_proj.weight": (d_model, d_model), "attn.k_proj.weight": (d_model, d_model),
              "attn.v_proj.weight": (d_model, d_model), "attn.output_proj.weight": (d_model, d_model),
              "ln2.weight": (d_model,), "ffn.w1.weight": (d_ff, d_model), "ffn.w2.weight": (d_model, d_ff),
              "ffn.w3.weight": (d_ff, d_model)}
    weights = {}
    for i, (name, shape) in enumerate(shapes.items()):
        if len(shape) == 1:                                # a norm's gain: near 1, not 1, so a missing one shows
            weights[prefix + name] = 1 + _randn(*shape, seed=seed + i, scale=0.2)
        else:
            weights[prefix + name] = _randn(*shape, seed=seed + i, scale=shape[1] ** -0.5)
    return weights


def _changed_last(case, change):
    """The case again with its last position changed: a causal model's earlier outputs stay the same."""
    args = list(case.args)
    args[0] = change(args[0].clone())
    return Case(case.label + CHANGED, tuple(args), dict(case.kwargs))


def _block_cases():
    cases = numbered_cases(
        lambda k, seed, shape, heads, d_ff, theta: (
            (_randn(*shape, seed=seed + 100), _block_weights(shape[-1], d_ff, seed * 20), heads),
            {} if theta == 10000.0 else {"theta": theta}),
        ((0, (1, 3, 4), 2, 8, 10000.0), (1, (2, 5, 8), 2, 16, 100.0), (2, (2, 6, 12), 3, 20, 10000.0)))

    def change(x):
        x[..., -1, :] = x[..., -1, :] * -2 + 1
        return x
    cases.append(_changed_last(cases[-1], change))
    return cases


def _causality(cases, outputs):
    """Changing the last position of the input changes no earlier position of the output."""
    import torch
    by_label = dict(zip((c.label for c in cases), outputs))
    for case, out in zip(cases, outputs):
        if not case.label.endswith(CHANGED) or case.label[:-len(CHANGED)] not in by_label:
            continue
        before = by_label[case.label[:-len(CHANGED)]]
        earlier = (before[..., :-1, :] - out[..., :-1, :]).abs().amax(dim=(0, -1))
        moved = torch.nonzero(earlier > 1e-9).flatten().tolist()
        if moved:
            return (f"on {case.label}: changing only the last position changed the output at position {moved[0]}: "
                    "a position must not see later ones (keep keys j <= i in the causal mask)")
    return None


_BLOCK_KEYS = """weights, seqlab.model.TransformerBlock's state-dict names, torch's (out, in) layout (Q = h @ W.T):
      "ln1.weight", "ln2.weight" (d_model,): the RMSNorm gains;
      "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight", "attn.output_proj.weight" (d_model, d_model);
      "ffn.w1.weight", "ffn.w3.weight" (d_ff, d_model), "ffn.w2.weight" (d_model, d_ff): SwiGLU."""

TRANSFORMER_BLOCK = _torch_exercise(
    "transformer_block", "The Transformer block (PyTorch)", "Transformer 块（PyTorch）",
    "transformer_block(x, weights, num_heads, theta=10000.0, eps=1e-5)",
    """One pre-norm block, x (batch, seq, d_model) -> (batch, seq, d_model):
        z = x + attn(rms_norm(x, ln1));  y = z + swiglu(rms_norm(z, ln2))   (rms_norm with eps inside the root)
    attn: causal multi-head self-attention (heads = contiguous column blocks of width w = d_model / num_heads),
    with RoPE on each head's queries and keys: pair (2k, 2k+1) at position i rotated by i * theta^(-2k/w),
    positions 0..seq-1; scale 1/sqrt(w); then the output projection.
    """ + _BLOCK_KEYS + "\n    Your rms_norm, rotate_pairs and swiglu are its parts, and causal_multihead_self_attention with RoPE added"
                    "\n    (import them from your other files: from rms_norm import rms_norm)." + _RULE,
    _ref("transformer_block"), _block_cases,
    (_mistake("transformer_block__post_norm", "the norm after the sublayer (post-norm) instead of before",
              "this block is pre-norm: z = x + attn(norm(x)), not z = norm(x + attn(x)); the residual path stays un-normalised"),
     _mistake("transformer_block__no_attention_residual", "the residual around the attention is missing",
              "add the input back: z = x + attn(rms_norm(x))"),
     _mistake("transformer_block__no_ffn_residual", "the residual around the feed-forward is missing",
              "add z back: y = z + swiglu(rms_norm(z))"),
     _mistake("transformer_block__causal_mask_excludes_current", "causal mask off by one: the current position excluded",
              "position i attends to 0..i, itself included (tril with diagonal 0)"),
     _mistake("transformer_block__causal_mask_includes_next", "causal mask off by one: the next (future) position included",
              "position i must not see i+1: keep j <= i")),
    returns="a tensor of x's shape", relations=_causality)


def _lm_weights(vocab, d_model, d_ff, num_layers, seed):
    weights = {"token_embeddings.weight": _randn(vocab, d_model, seed=seed)}
    for i in range(num_layers):
        weights.update(_block_weights(d_model, d_ff, seed + 50 * (i + 1), prefix=f"layers.{i}."))
    weights["ln_final.weight"] = 1 + _randn(d_model, seed=seed + 1, scale=0.2)
    weights["lm_head.weight"] = _randn(vocab, d_model, seed=seed + 2, scale=d_model ** -0.5)
    return weights


def _lm_cases():
    import torch
    cases = numbered_cases(
        lambda k, seed, batch, seq, vocab, d_model, layers, heads, d_ff: (
            (torch.randint(0, vocab, (batch, seq), generator=_gen(seed + 200)),
             _lm_weights(vocab, d_model, d_ff, layers, seed * 1000), layers, heads), {}),
        ((0, 1, 4, 7, 4, 1, 2, 8), (1, 2, 6, 11, 8, 2, 2, 12), (2, 2, 5, 13, 12, 2, 3, 16)))
    vocab = cases[-1].args[1]["token_embeddings.weight"].shape[0]

    def change(ids):
        ids[..., -1] = (ids[..., -1] + 1) % vocab
        return ids
    cases.append(_changed_last(cases[-1], change))
    return cases


TRANSFORMER_LM = _torch_exercise(
    "transformer_lm", "The Transformer language model (PyTorch)", "Transformer 语言模型（PyTorch）",
    "transformer_lm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5)",
    """ids (batch, seq) int64 -> logits (batch, seq, vocab), seqlab.model.TransformerLM's forward:
        h = token_embeddings[ids]; h = block_i(h) for i = 0..num_layers-1 (your transformer_block);
        logits = rms_norm(h, ln_final) @ lm_head.T     (the final norm; the output layer is NOT tied)
    weights, the state-dict names: "token_embeddings.weight" (vocab, d_model); "layers.{i}." + each key of
    transformer_block's weights; "ln_final.weight" (d_model,); "lm_head.weight" (vocab, d_model).
    Return the logits, not probabilities.""" + _RULE,
    _ref("transformer_lm"), _lm_cases,
    (_mistake("transformer_lm__no_final_norm", "no final norm",
              "a pre-norm stack ends with one more RMSNorm (ln_final) before the output layer"),
     _mistake("transformer_lm__tied_output", "the output layer tied to the embedding",
              "this model's output layer is its own matrix: logits = h @ lm_head.weight.T, not the embedding's"),
     _mistake("transformer_lm__rope_not_applied", "positions (RoPE) not applied",
              "rotate each head's queries and keys by RoPE before the scores: without it the model cannot tell positions apart"),
     _mistake("transformer_lm__softmax_applied", "probabilities returned instead of logits",
              "return the logits: the loss (cross-entropy) applies the log-softmax itself")),
    returns="a tensor (batch, seq, vocab)", relations=_causality)


EXERCISES: tuple[Exercise, ...] = (SOFTMAX, RMS_NORM, ROTATE_PAIRS, SDPA, CROSS_ENTROPY, LR_COSINE_SCHEDULE, ADAMW_STEP,
                                   GET_BATCH, CAUSAL_MHSA, SWIGLU, TRANSFORMER_BLOCK, TRANSFORMER_LM)
