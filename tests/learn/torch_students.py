"""Student files for the PyTorch exercises, written here from the stubs' docstrings, not from seqlab's code:
correct ones in other styles than seqlab's (loops, float64 then cast, einsum, another valid formula, each
convention the text allows) and wrong ones, each with the mistake its diagnosis must name.

CORRECT: {style: {exercise: source}}; every source passes (CONVENTIONS pass with a note).
WRONG: {exercise: {version: (source, the diagnosis's mistake id)}}: each fails, and its diagnosis names
that mistake (a catalogued one of the exercise, or a generic one: rule_broken, inputs_changed_in_place).
The issue's escaped cases are among them (marked "escaped").
"""

from __future__ import annotations

# A block position by position and head by head, with math on Python floats for the RoPE angles and the softmax.
BLOCK_LOOPS = """
    import math
    import torch

    def norm(v, gain, eps):
        ms = sum(float(t) ** 2 for t in v) / len(v)
        return v / math.sqrt(ms + eps) * gain

    def rotate(v, position, theta):
        out = v.clone()
        for k in range(len(v) // 2):
            angle = position * theta ** (-2 * k / len(v))
            a, b = float(v[2 * k]), float(v[2 * k + 1])
            out[2 * k], out[2 * k + 1] = a * math.cos(angle) - b * math.sin(angle), a * math.sin(angle) + b * math.cos(angle)
        return out

    def transformer_block(x, weights, num_heads, theta=10000.0, eps=1e-5):
        batch, seq, d = x.shape
        w = d // num_heads
        out = torch.zeros_like(x)
        for b in range(batch):
            normed = [norm(x[b, i], weights["ln1.weight"], eps) for i in range(seq)]
            q = [weights["attn.q_proj.weight"] @ n for n in normed]
            k = [weights["attn.k_proj.weight"] @ n for n in normed]
            v = [weights["attn.v_proj.weight"] @ n for n in normed]
            for i in range(seq):
                heads = []
                for h in range(num_heads):
                    cols = slice(h * w, (h + 1) * w)
                    qi = rotate(q[i][cols], i, theta)
                    scores = [float(qi @ rotate(k[j][cols], j, theta)) / math.sqrt(w) for j in range(i + 1)]
                    top = max(scores)
                    e = [math.exp(s - top) for s in scores]
                    heads.append(sum(e[j] / sum(e) * v[j][cols] for j in range(i + 1)))
                z = x[b, i] + weights["attn.output_proj.weight"] @ torch.cat(heads)
                n = norm(z, weights["ln2.weight"], eps)
                a, g = weights["ffn.w1.weight"] @ n, weights["ffn.w3.weight"] @ n
                silu = torch.tensor([float(t) / (1 + math.exp(-float(t))) for t in a], dtype=x.dtype)
                out[b, i] = z + weights["ffn.w2.weight"] @ (silu * g)
        return out
"""

# Loop-style implementations (one row, position or head at a time; batched over heads and positions where
# the exercise forbids those loops), written from the exercises' docstrings, not from seqlab's vectorised code.
LOOPS = {
    "rms_norm": """
        import math
        import torch
        def rms_norm(x, weight, eps=1e-5):
            rows = x.reshape(-1, x.shape[-1])
            out = torch.empty_like(rows)
            for r in range(rows.shape[0]):
                ms = sum(float(v) ** 2 for v in rows[r]) / rows.shape[1]
                out[r] = rows[r] / math.sqrt(ms + eps) * weight
            return out.reshape(x.shape)
    """,
    "rotate_pairs": """
        import torch
        def rotate_pairs(x, cos, sin):
            out = x.clone()
            for k in range(x.shape[-1] // 2):
                a, b = x[..., 2 * k], x[..., 2 * k + 1]
                out[..., 2 * k] = a * cos[:, k] - b * sin[:, k]
                out[..., 2 * k + 1] = a * sin[:, k] + b * cos[:, k]
            return out
    """,
    "lr_cosine_schedule": """
        import math
        def lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
            if it < warmup_iters:
                return it / warmup_iters * max_learning_rate
            if it <= cosine_cycle_iters:
                angle = math.pi * (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
                return min_learning_rate + (max_learning_rate - min_learning_rate) * (math.cos(angle) + 1) / 2
            return min_learning_rate
    """,
    "adamw_step": """
        import math
        import torch
        def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
            b1, b2 = betas
            p, m, v = p.clone().flatten(), m.clone().flatten(), v.clone().flatten()
            g = grad.flatten()
            for i in range(p.numel()):
                p[i] = p[i] - lr * weight_decay * p[i]
                m[i] = b1 * m[i] + (1 - b1) * g[i]
                v[i] = b2 * v[i] + (1 - b2) * g[i] ** 2
                p[i] = p[i] - lr * (m[i] / (1 - b1 ** step)) / (math.sqrt(v[i] / (1 - b2 ** step)) + eps)
            shape = grad.shape
            return p.reshape(shape), m.reshape(shape), v.reshape(shape)
    """,
    "get_batch": """
        import torch
        def get_batch(dataset, batch_size, context_length, device, *, generator=None):
            starts = generator.integers(0, len(dataset) - context_length, size=batch_size)
            inputs = torch.zeros(batch_size, context_length, dtype=torch.int64)
            targets = torch.zeros(batch_size, context_length, dtype=torch.int64)
            for i, s in enumerate(starts):
                for j in range(context_length):
                    inputs[i, j] = int(dataset[s + j])
                    targets[i, j] = int(dataset[s + j + 1])
            return inputs.to(device), targets.to(device)
    """,
    "transformer_block": BLOCK_LOOPS,
    "transformer_lm": BLOCK_LOOPS + """
    def transformer_lm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
        batch, seq = ids.shape
        emb = weights["token_embeddings.weight"]
        h = torch.stack([torch.stack([emb[int(ids[b, i])] for i in range(seq)]) for b in range(batch)])
        for layer in range(num_layers):
            prefix = f"layers.{layer}."
            mine = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
            h = transformer_block(h, mine, num_heads, theta, eps)
        head = weights["lm_head.weight"]
        logits = torch.zeros(batch, seq, head.shape[0], dtype=h.dtype)
        for b in range(batch):
            for i in range(seq):
                n = norm(h[b, i], weights["ln_final.weight"], eps)
                for v in range(head.shape[0]):
                    logits[b, i, v] = sum(float(n[c]) * float(head[v, c]) for c in range(len(n)))
        return logits
    """,
    "softmax": """
        import math
        import torch
        def softmax(x, dim=-1):
            moved = x.movedim(dim, -1)
            rows = moved.reshape(-1, moved.shape[-1])
            out = torch.empty_like(rows)
            for r in range(rows.shape[0]):
                values = [float(v) for v in rows[r]]
                top = max(values)
                e = [math.exp(v - top) for v in values]
                for c in range(len(e)):
                    out[r, c] = e[c] / sum(e)
            return out.reshape(moved.shape).movedim(-1, dim)
    """,
    "scaled_dot_product_attention": """
        import math
        import torch
        def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
            n, m, d = Q.shape[-2], K.shape[-2], Q.shape[-1]
            batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
            if mask is not None:
                batch = torch.broadcast_shapes(batch, mask.shape[:-2])
            q = Q.expand(*batch, n, d).reshape(-1, n, d)
            k = K.expand(*batch, m, d).reshape(-1, m, d)
            v = V.expand(*batch, m, V.shape[-1]).reshape(-1, m, V.shape[-1])
            allowed = torch.ones(n, m, dtype=torch.bool) if mask is None else mask
            allowed = allowed.expand(*batch, n, m).reshape(-1, n, m)
            out = torch.zeros(q.shape[0], n, V.shape[-1], dtype=V.dtype)
            for b in range(q.shape[0]):
                for i in range(n):
                    seen = [j for j in range(m) if allowed[b, i, j] and (not causal or j <= i + m - n)]
                    if not seen:
                        continue
                    scores = [float(q[b, i] @ k[b, j]) / math.sqrt(d) for j in seen]
                    top = max(scores)
                    e = [math.exp(s - top) for s in scores]
                    for j, ej in zip(seen, e):
                        out[b, i] += ej / sum(e) * v[b, j]
            return out.reshape(*batch, n, V.shape[-1])
    """,
    "cross_entropy": """
        import math
        import torch
        def cross_entropy(logits, targets):
            rows, ids = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
            total = 0.0
            for r in range(rows.shape[0]):
                values = [float(v) for v in rows[r]]
                top = max(values)
                total += top + math.log(sum(math.exp(v - top) for v in values)) - values[int(ids[r])]
            return torch.tensor(total / rows.shape[0], dtype=logits.dtype)
    """,
    # no loop over heads or positions (the exercise's rule): a loop over the batch rows, each row batched
    "causal_multihead_self_attention": """
        import math
        import torch
        def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
            rows = x.reshape(-1, x.shape[-2], x.shape[-1])
            seq, d = rows.shape[1], rows.shape[2]
            w = d // num_heads
            hidden = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
            out = torch.empty_like(rows)
            for b in range(rows.shape[0]):
                q = (rows[b] @ q_weight.T).reshape(seq, num_heads, w).permute(1, 0, 2)
                k = (rows[b] @ k_weight.T).reshape(seq, num_heads, w).permute(1, 0, 2)
                v = (rows[b] @ v_weight.T).reshape(seq, num_heads, w).permute(1, 0, 2)
                scores = (q @ k.transpose(1, 2) / math.sqrt(w)).masked_fill(hidden, -math.inf)
                e = (scores - scores.max(dim=-1, keepdim=True).values).exp()
                heads = (e / e.sum(-1, keepdim=True)) @ v
                out[b] = heads.permute(1, 0, 2).reshape(seq, d) @ o_weight.T
            return out.reshape(x.shape)
    """,
    "swiglu": """
        import math
        import torch
        def swiglu(x, w1_weight, w2_weight, w3_weight):
            rows = x.reshape(-1, x.shape[-1])
            out = torch.zeros_like(rows)
            for r in range(rows.shape[0]):
                a, g = w1_weight @ rows[r], w3_weight @ rows[r]
                hidden = torch.tensor([float(a[u]) / (1 + math.exp(-float(a[u]))) * float(g[u]) for u in range(len(a))],
                                      dtype=x.dtype)
                out[r] = w2_weight @ hidden
            return out.reshape(x.shape)
    """,
}

# Vectorised in other ways than seqlab's: float64 then cast back, einsum, logsumexp, complex numbers.
VECTORISED = {
    "softmax": """
        import torch
        def softmax(x, dim=-1):
            wide = x.double()
            return (wide - torch.logsumexp(wide, dim, keepdim=True)).exp().to(x.dtype)
    """,
    "rms_norm": """
        import torch
        def rms_norm(x, weight, eps=1e-5):
            wide = x.double()
            inverse = torch.rsqrt(torch.einsum("...d,...d->...", wide, wide)[..., None] / x.shape[-1] + eps)
            return (wide * inverse * weight.double()).to(x.dtype)
    """,
    "rotate_pairs": """
        import torch
        def rotate_pairs(x, cos, sin):
            pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
            turned = pairs * torch.complex(cos.double(), sin.double())
            return torch.view_as_real(turned).reshape(x.shape).to(x.dtype)
    """,
    "scaled_dot_product_attention": """
        import math
        import torch
        def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
            n, m = Q.shape[-2], K.shape[-2]
            scores = torch.einsum("...nd,...md->...nm", Q.double(), K.double()) / math.sqrt(Q.shape[-1])
            visible = torch.ones(n, m, dtype=torch.bool)
            if causal:
                visible = torch.arange(m)[None, :] <= torch.arange(n)[:, None] + (m - n)
            if mask is not None:
                visible = visible & mask
            scores = torch.where(visible, scores, torch.tensor(-math.inf, dtype=scores.dtype))
            top = scores.amax(-1, keepdim=True).nan_to_num(neginf=0.0)
            e = (scores - top).exp()
            total = e.sum(-1, keepdim=True)
            weights = e / torch.where(total == 0, torch.ones_like(total), total)
            return torch.einsum("...nm,...mv->...nv", weights, V.double()).to(V.dtype)
    """,
    "cross_entropy": """
        import torch
        def cross_entropy(logits, targets):
            flat = logits.double().reshape(-1, logits.shape[-1])
            picked = flat.gather(1, targets.reshape(-1, 1).long())[:, 0]
            return (torch.logsumexp(flat, dim=1) - picked).mean().to(logits.dtype)
    """,
    "lr_cosine_schedule": """
        import math
        def lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
            if it >= warmup_iters:
                progress = min(1.0, (it - warmup_iters) / max(1, cosine_cycle_iters - warmup_iters))
                return float(max_learning_rate - (max_learning_rate - min_learning_rate) * math.sin(math.pi * progress / 2) ** 2)
            return float(max_learning_rate * it / warmup_iters)
    """,
    "adamw_step": """
        import torch
        def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
            beta1, beta2 = betas
            m = torch.lerp(m, grad, 1 - beta1)
            v = torch.addcmul(v * beta2, grad, grad, value=1 - beta2)
            m_hat = m / (1 - beta1 ** step)
            v_hat = v / (1 - beta2 ** step)
            p = p * (1 - lr * weight_decay)
            return torch.addcdiv(p, m_hat, v_hat.sqrt() + eps, value=-lr), m, v
    """,
    "get_batch": """
        import numpy as np
        import torch
        def get_batch(dataset, batch_size, context_length, device, *, generator=None):
            high = len(dataset) - context_length
            starts = [int(generator.integers(0, high)) for _ in range(batch_size)]   # one draw at a time: the same stream
            offsets = np.asarray(starts)[:, None] + np.arange(context_length + 1)
            windows = torch.as_tensor(np.asarray(dataset)[offsets].astype(np.int64), device=device)
            return windows[:, :-1], windows[:, 1:]
    """,
    "causal_multihead_self_attention": """
        import math
        import torch
        def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
            *lead, seq, d = x.shape
            w = d // num_heads
            q, k, v = (torch.einsum("...sd,ed->...se", x, W).unflatten(-1, (num_heads, w)) for W in (q_weight, k_weight, v_weight))
            scores = torch.einsum("...shw,...thw->...hst", q, k) / math.sqrt(w)
            scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), -math.inf)
            weights = (scores - scores.amax(-1, keepdim=True)).exp()
            weights = weights / weights.sum(-1, keepdim=True)
            heads = torch.einsum("...hst,...thw->...shw", weights, v).flatten(-2)
            return torch.einsum("...se,de->...sd", heads, o_weight)
    """,
    "swiglu": """
        import torch
        def swiglu(x, w1_weight, w2_weight, w3_weight):
            a = torch.einsum("...d,fd->...f", x.double(), w1_weight.double())
            gate = a / (1 + torch.exp(-a))
            hidden = gate * torch.einsum("...d,fd->...f", x.double(), w3_weight.double())
            return torch.einsum("...f,df->...d", hidden, w2_weight.double()).to(x.dtype)
    """,
    "transformer_block": """
        import math
        import torch

        def norm(h, gain, eps):
            return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * gain

        def rope(t, theta):
            seq, w = t.shape[-2], t.shape[-1]
            angles = torch.outer(torch.arange(seq, dtype=torch.float64), theta ** (-torch.arange(0, w, 2, dtype=torch.float64) / w))
            turned = torch.view_as_complex(t.double().unflatten(-1, (-1, 2)).contiguous()) * torch.polar(torch.ones_like(angles), angles)
            return torch.view_as_real(turned).flatten(-2).to(t.dtype)

        def transformer_block(x, weights, num_heads, theta=10000.0, eps=1e-5):
            *lead, seq, d = x.shape
            w = d // num_heads
            h = norm(x, weights["ln1.weight"], eps)
            q, k, v = (torch.einsum("...sd,ed->...se", h, weights[f"attn.{n}_proj.weight"]).unflatten(-1, (num_heads, w))
                       .transpose(-3, -2) for n in "qkv")
            q, k = rope(q, theta), rope(k, theta)
            scores = (q @ k.transpose(-2, -1) / math.sqrt(w)).masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), -math.inf)
            probs = (scores - scores.amax(-1, keepdim=True)).exp()
            probs = probs / probs.sum(-1, keepdim=True)
            z = x + (probs @ v).transpose(-3, -2).flatten(-2) @ weights["attn.output_proj.weight"].T
            g = norm(z, weights["ln2.weight"], eps)
            a = g @ weights["ffn.w1.weight"].T
            return z + (a * torch.sigmoid(a) * (g @ weights["ffn.w3.weight"].T)) @ weights["ffn.w2.weight"].T
    """,
}
VECTORISED["transformer_lm"] = VECTORISED["transformer_block"] + """
        def transformer_lm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
            h = weights["token_embeddings.weight"].index_select(0, ids.flatten()).unflatten(0, ids.shape)
            for i in range(num_layers):
                layer = {key.split(".", 2)[2]: value for key, value in weights.items() if key.startswith(f"layers.{i}.")}
                h = transformer_block(h, layer, num_heads, theta, eps)
            return norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T
"""

# Valid other conventions the text allows: they pass with a note naming both.
CONVENTIONS = {
    "adamw_step": """
        import math
        import torch
        def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
            beta1, beta2 = betas
            m = beta1 * m + (1 - beta1) * grad
            v = beta2 * v + (1 - beta2) * grad ** 2
            p = p - lr * (m / (1 - beta1 ** step)) / ((v / (1 - beta2 ** step)).sqrt() + eps)
            return p - lr * weight_decay * p, m, v        # CS336's order: the Adam update, then the decay
    """,
}

# attention as a student writes it (scores, a bool mask of visible keys, a guarded softmax): the base of the
# wrong versions below, each one edit away from it
_SDPA = """
            import math
            import torch
            def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
                n, m = Q.shape[-2], K.shape[-2]
                s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
                keep = torch.ones(n, m, dtype=torch.bool).tril(m - n) if causal else torch.ones(n, m, dtype=torch.bool)
                if mask is not None:
                    keep = keep & mask
                s = s.masked_fill(~keep, float("-inf"))
                e = (s - s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)).exp()
                return torch.nan_to_num(e / e.sum(-1, keepdim=True)) @ V
"""


def _edit(source: str, old: str, new: str) -> str:
    """``source`` with one edit: a student's version with one mistake."""
    assert old in source, old
    return source.replace(old, new)


def _sdpa(old: str, new: str) -> str:
    return _edit(_SDPA, old, new)


_SCHEDULE = """
            import math
            def lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
                if it < warmup_iters:
                    return max_learning_rate * it / warmup_iters
                if it > cosine_cycle_iters:
                    return min_learning_rate
                p = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
                return min_learning_rate + (max_learning_rate - min_learning_rate) * (1 + math.cos(math.pi * p)) / 2
"""


def _schedule(old: str, new: str) -> str:
    return _edit(_SCHEDULE, old, new)


WRONG = {
    "softmax": {
        "no max subtraction (escaped)": ("""
            import torch
            def softmax(x, dim=-1):
                e = torch.exp(x)
                return e / e.sum(dim=dim, keepdim=True)
        """, "max_not_subtracted"),
        "the mean subtracted instead of the maximum": ("""
            def softmax(x, dim=-1):
                e = (x - x.mean(dim, keepdim=True)).exp()
                return e / e.sum(dim, keepdim=True)
        """, "max_not_subtracted"),
        "one maximum for the whole tensor": ("""
            def softmax(x, dim=-1):
                e = (x - x.max()).exp()
                return e / e.sum(dim, keepdim=True)
        """, "max_of_the_whole_tensor"),
        "always the last axis": ("""
            def softmax(x, dim=-1):
                e = (x - x.max(-1, keepdim=True).values).exp()
                return e / e.sum(-1, keepdim=True)
        """, "wrong_axis"),
        "negative dims read as -1": ("""
            def softmax(x, dim=-1):
                dim = dim if dim > 0 else x.dim() - 1
                e = (x - x.amax(dim, keepdim=True)).exp()
                return e / e.sum(dim, keepdim=True)
        """, "wrong_axis"),
        "normalised over the whole tensor (right for one row)": ("""
            def softmax(x, dim=-1):
                e = (x - x.max()).exp()
                return e / e.sum()
        """, "normalised_over_everything"),
        "the maximum over axis 1 (right for 2-D)": ("""
            def softmax(x, dim=-1):
                e = (x - x.max(1, keepdim=True).values).exp()
                return e / e.sum(dim, keepdim=True)
        """, "any_shape"),
        "float32 in, float64 out (escaped)": ("""
            def softmax(x, dim=-1):
                x = x.double()
                e = (x - x.amax(dim, keepdim=True)).exp()
                return e / e.sum(dim, keepdim=True)
        """, "dtype"),
        "x changed in place": ("""
            def softmax(x, dim=-1):
                x -= x.amax(dim, keepdim=True)
                x.exp_()
                return x / x.sum(dim, keepdim=True)
        """, "inputs_changed_in_place"),
        "torch.nn.functional.softmax (escaped)": ("""
            import torch.nn.functional as F
            def softmax(x, dim=-1):
                return F.softmax(x, dim=dim)
        """, "rule_broken"),
        "Tensor.softmax": ("""
            def softmax(x, dim=-1):
                return x.softmax(dim)
        """, "rule_broken"),
        "softmax imported from torch.nn.functional": ("""
            from torch.nn.functional import softmax as library_softmax
            def softmax(x, dim=-1):
                return library_softmax(x, dim)
        """, "rule_broken"),
        "torch.softmax tried first, the error caught": ("""
            import torch
            def softmax(x, dim=-1):
                try:
                    return torch.softmax(x, dim)
                except Exception:
                    e = (x - x.amax(dim, keepdim=True)).exp()
                    return e / e.sum(dim, keepdim=True)
        """, "rule_broken"),
    },
    "rms_norm": {
        "eps outside the root": ("""
            import torch
            def rms_norm(x, weight, eps=1e-5):
                return x / (torch.sqrt((x * x).mean(-1, keepdim=True)) + eps) * weight
        """, "eps_outside_the_root"),
        "the mean subtracted": ("""
            def rms_norm(x, weight, eps=1e-5):
                c = x - x.mean(-1, keepdim=True)
                return c / ((c ** 2).mean(-1, keepdim=True) + eps) ** 0.5 * weight
        """, "mean_subtracted"),
        "no gain": ("""
            def rms_norm(x, weight, eps=1e-5):
                return x / ((x ** 2).mean(-1, keepdim=True) + eps) ** 0.5
        """, "weight_missing"),
        "one mean for the whole tensor (right for one row)": ("""
            def rms_norm(x, weight, eps=1e-5):
                return x / ((x ** 2).mean() + eps) ** 0.5 * weight
        """, "mean_over_every_dimension"),
        "the mean over axis 0": ("""
            def rms_norm(x, weight, eps=1e-5):
                return x / ((x ** 2).mean(0, keepdim=True) + eps) ** 0.5 * weight
        """, "wrong_axis"),
        "a fixed eps": ("""
            def rms_norm(x, weight, eps=1e-5):
                return x / ((x ** 2).mean(-1, keepdim=True) + 1e-5) ** 0.5 * weight
        """, "eps_ignored"),
        "written for 2-D and 3-D x only": ("""
            def rms_norm(x, weight, eps=1e-5):
                axis = 1 if x.dim() == 2 else 2
                return x / ((x ** 2).mean(axis, keepdim=True) + eps) ** 0.5 * weight
        """, "wrong_axis"),
        "float32 in, float64 out": ("""
            def rms_norm(x, weight, eps=1e-5):
                x = x.double()
                return x / ((x ** 2).mean(-1, keepdim=True) + eps) ** 0.5 * weight.double()
        """, "dtype"),
        "x changed in place": ("""
            def rms_norm(x, weight, eps=1e-5):
                x /= ((x ** 2).mean(-1, keepdim=True) + eps) ** 0.5
                return x * weight
        """, "inputs_changed_in_place"),
        "torch.rms_norm": ("""
            import torch
            def rms_norm(x, weight, eps=1e-5):
                return torch.rms_norm(x, (x.shape[-1],), weight, eps)
        """, "rule_broken"),
    },
    "rotate_pairs": {
        "half-split pairs (GPT-NeoX's convention)": ("""
            import torch
            def rotate_pairs(x, cos, sin):
                a, b = x.chunk(2, dim=-1)
                return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
        """, "half_split_pairs"),
        "rotated backwards": ("""
            import torch
            def rotate_pairs(x, cos, sin):
                a, b = x[..., ::2], x[..., 1::2]
                return torch.stack([a * cos + b * sin, b * cos - a * sin], -1).flatten(-2)
        """, "rotated_backwards"),
        "cos and sin swapped": ("""
            import torch
            def rotate_pairs(x, cos, sin):
                a, b = x[..., ::2], x[..., 1::2]
                return torch.stack([a * sin - b * cos, a * cos + b * sin], -1).flatten(-2)
        """, "cos_and_sin_swapped"),
        "rotated pairs concatenated, not interleaved": ("""
            import torch
            def rotate_pairs(x, cos, sin):
                a, b = x[..., ::2], x[..., 1::2]
                return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)
        """, "pairs_not_interleaved"),
        "float32 in, float64 out": ("""
            import torch
            def rotate_pairs(x, cos, sin):
                a, b = x[..., ::2].double(), x[..., 1::2].double()
                return torch.stack([a * cos.double() - b * sin.double(), a * sin.double() + b * cos.double()], -1).flatten(-2)
        """, "dtype"),
        "x changed in place": ("""
            def rotate_pairs(x, cos, sin):
                a, b = x[..., ::2].clone(), x[..., 1::2].clone()
                x[..., ::2] = a * cos - b * sin
                x[..., 1::2] = a * sin + b * cos
                return x
        """, "inputs_changed_in_place"),
        "torch.nn.Unflatten, a layer": ("""
            import torch
            def rotate_pairs(x, cos, sin):
                pairs = torch.nn.Unflatten(-1, (-1, 2))(x)
                a, b = pairs[..., 0], pairs[..., 1]
                return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)
        """, "rule_broken"),
    },
    "scaled_dot_product_attention": {
        "no 1/sqrt(d_k)": (_sdpa("s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])", "s = Q @ K.transpose(-2, -1)"),
                           "missing_scale"),
        "divided by sqrt(m), the number of keys": (_sdpa("/ math.sqrt(Q.shape[-1])", "/ math.sqrt(m)"), "wrong_scale"),
        "softmax over the queries": (_sdpa("e = (s - s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)).exp()\n"
                                           "                return torch.nan_to_num(e / e.sum(-1, keepdim=True)) @ V",
                                           "e = (s - s.amax(-2, keepdim=True).nan_to_num(neginf=0.0)).exp()\n"
                                           "                return torch.nan_to_num(e / e.sum(-2, keepdim=True)) @ V"),
                                     "softmax_over_queries"),
        "the causal mask hides the diagonal": (_sdpa(".tril(m - n)", ".tril(m - n - 1)"), "causal_mask_excludes_current"),
        "the causal mask lets the next key through": (_sdpa(".tril(m - n)", ".tril(m - n + 1)"), "causal_mask_includes_next"),
        "the mask read as True = hidden": (_sdpa("keep = keep & mask", "keep = keep & ~mask"), "mask_inverted"),
        "causal ignored when a mask is given (escaped)": (_sdpa(
            "keep = torch.ones(n, m, dtype=torch.bool).tril(m - n) if causal else torch.ones(n, m, dtype=torch.bool)\n"
            "                if mask is not None:\n                    keep = keep & mask",
            "keep = torch.ones(n, m, dtype=torch.bool).tril(m - n) if causal else torch.ones(n, m, dtype=torch.bool)\n"
            "                if mask is not None:\n                    keep = mask"), "causal_ignored_with_a_mask"),
        "the mask ignored when causal": (_sdpa("if mask is not None:", "if mask is not None and not causal:"),
                                         "mask_ignored_when_causal"),
        "a causal mask for n == m only": (_sdpa(".tril(m - n)", ".tril()"), "causal_from_the_first_key"),
        "NaN on fully masked rows (escaped)": (_sdpa("e = (s - s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)).exp()\n"
                                                     "                return torch.nan_to_num(e / e.sum(-1, keepdim=True)) @ V",
                                                     "e = (s - s.amax(-1, keepdim=True)).exp()\n"
                                                     "                return e / e.sum(-1, keepdim=True) @ V"),
                                               "nan_on_fully_masked_rows"),
        "no max subtraction (escaped)": (_sdpa("s = s.masked_fill(~keep, float(\"-inf\"))\n"
                                               "                e = (s - s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)).exp()\n"
                                               "                return torch.nan_to_num(e / e.sum(-1, keepdim=True)) @ V",
                                               "e = s.exp() * keep\n                total = e.sum(-1, keepdim=True)\n"
                                               "                return torch.where(total > 0, e / total, torch.zeros_like(e)) @ V"),
                                         "max_not_subtracted"),
        "flattened to (batch, n, d) for bmm: no broadcasting (escaped)": ("""
            import math
            import torch
            def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
                *lead, n, d = Q.shape
                m = K.shape[-2]
                q, k, v = Q.reshape(-1, n, d), K.reshape(-1, m, d), V.reshape(-1, m, V.shape[-1])
                s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)
                keep = torch.ones(n, m, dtype=torch.bool).tril(m - n) if causal else torch.ones(n, m, dtype=torch.bool)
                if mask is not None:
                    keep = keep & mask.reshape(-1, n, m)
                s = s.masked_fill(~keep, float("-inf"))
                e = (s - s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)).exp()
                out = torch.bmm(torch.nan_to_num(e / e.sum(-1, keepdim=True)), v)
                return out.reshape(*lead, n, V.shape[-1])
        """, "leading_dims"),
        "the mask taken as (n, m)": (_sdpa("keep = keep & mask", "keep = keep & mask.view(n, m)"), "mask_broadcast"),
        "float32 in, float64 out": (_sdpa("n, m = Q.shape[-2], K.shape[-2]",
                                          "Q, K, V = Q.double(), K.double(), V.double()\n                n, m = Q.shape[-2], K.shape[-2]"),
                                    "dtype"),
        "the caller's mask combined in place": ("""
            import math
            import torch
            def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
                n, m = Q.shape[-2], K.shape[-2]
                s = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
                if mask is None:
                    mask = torch.ones(n, m, dtype=torch.bool)
                if causal:
                    mask &= torch.ones(n, m, dtype=torch.bool).tril(m - n)
                s = s.masked_fill(~mask, float("-inf"))
                e = (s - s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)).exp()
                return torch.nan_to_num(e / e.sum(-1, keepdim=True)) @ V
        """, "inputs_changed_in_place"),
        "torch.nn.functional.scaled_dot_product_attention (escaped)": ("""
            import torch
            def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
                return torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask, is_causal=causal)
        """, "rule_broken"),
        "torch.softmax": (_sdpa("e = (s - s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)).exp()\n"
                                "                return torch.nan_to_num(e / e.sum(-1, keepdim=True)) @ V",
                                "return torch.nan_to_num(torch.softmax(s, -1)) @ V"), "rule_broken"),
    },
    "cross_entropy": {
        "summed, not averaged": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1])
                lse = flat.amax(-1) + (flat - flat.amax(-1, keepdim=True)).exp().sum(-1).log()
                return (lse - flat.gather(1, targets.reshape(-1, 1).long())[:, 0]).sum()
        """, "summed_not_averaged"),
        "log-softmax over the positions": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1])
                top = flat.amax(0, keepdim=True)
                logp = flat - top - (flat - top).exp().sum(0, keepdim=True).log()
                return -logp.gather(1, targets.reshape(-1, 1).long()).mean()
        """, "log_softmax_over_wrong_axis"),
        "no max subtraction (escaped)": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1])
                lse = flat.exp().sum(-1).log()
                return (lse - flat.gather(1, targets.reshape(-1, 1).long())[:, 0]).mean()
        """, "max_not_subtracted"),
        "probabilities, not log-probabilities": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1])
                e = (flat - flat.amax(-1, keepdim=True)).exp()
                return -(e / e.sum(-1, keepdim=True)).gather(1, targets.reshape(-1, 1).long()).mean()
        """, "probabilities_not_log"),
        "the mean of the masked (N, vocab) matrix": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1])
                top = flat.amax(-1, keepdim=True)
                logp = flat - top - (flat - top).exp().sum(-1, keepdim=True).log()
                picked = torch.zeros_like(logp).scatter(1, targets.reshape(-1, 1).long(), 1.0)
                return -(logp * picked).mean()
        """, "averaged_over_the_vocabulary_too"),
        "int32 targets given to take_along_dim": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1])
                lse = torch.logsumexp(flat, -1)
                return (lse - torch.take_along_dim(flat, targets.reshape(-1, 1), dim=1)[:, 0]).mean()
        """, "int32_targets"),
        "written for 2-D and 3-D logits only": ("""
            import torch
            def cross_entropy(logits, targets):
                if logits.dim() == 3:
                    logits, targets = logits.flatten(0, 1), targets.flatten()
                lse = torch.logsumexp(logits, 1)
                return (lse - logits.gather(1, targets[:, None].long())[:, 0]).mean()
        """, "leading_dims"),
        "a loss of shape (1,)": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1])
                loss = torch.logsumexp(flat, -1) - flat.gather(1, targets.reshape(-1, 1).long())[:, 0]
                return loss.mean().reshape(1)
        """, "shapes_and_types"),
        "float32 in, float64 out": ("""
            import torch
            def cross_entropy(logits, targets):
                flat = logits.reshape(-1, logits.shape[-1]).double()
                return (torch.logsumexp(flat, -1) - flat.gather(1, targets.reshape(-1, 1).long())[:, 0]).mean()
        """, "dtype"),
        "logits shifted in place": ("""
            import torch
            def cross_entropy(logits, targets):
                logits -= logits.amax(-1, keepdim=True)
                flat = logits.reshape(-1, logits.shape[-1])
                return (flat.exp().sum(-1).log() - flat.gather(1, targets.reshape(-1, 1).long())[:, 0]).mean()
        """, "inputs_changed_in_place"),
        "torch.nn.functional.cross_entropy (escaped)": ("""
            import torch
            def cross_entropy(logits, targets):
                return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long())
        """, "rule_broken"),
        "torch.log_softmax": ("""
            import torch
            def cross_entropy(logits, targets):
                logp = torch.log_softmax(logits, -1)
                return -logp.gather(-1, targets[..., None].long()).mean()
        """, "rule_broken"),
    },
    "lr_cosine_schedule": {
        "the warm-up one step ahead": (_schedule("max_learning_rate * it / warmup_iters", "max_learning_rate * (it + 1) / warmup_iters"),
                                       "warmup_off_by_one"),
        "the warm-up from min": (_schedule("max_learning_rate * it / warmup_iters",
                                           "min_learning_rate + (max_learning_rate - min_learning_rate) * it / warmup_iters"),
                                 "warmup_from_min"),
        "progress = it / cosine_cycle_iters": (_schedule("p = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)",
                                                         "p = it / cosine_cycle_iters"), "cosine_over_the_whole_run"),
        "a full cosine period": (_schedule("math.cos(math.pi * p)", "math.cos(2 * math.pi * p)"), "full_cosine_period"),
        "rising from min to max": (_schedule("return min_learning_rate + (max_learning_rate - min_learning_rate) * (1",
                                             "return max_learning_rate + (min_learning_rate - max_learning_rate) * (1"),
                                   "max_and_min_swapped"),
        "no floor after the cycle": (_schedule("if it > cosine_cycle_iters:\n                    return min_learning_rate\n                ", ""),
                                     "no_floor_after_the_cycle"),
        "progress = (it - warmup_iters) / cosine_cycle_iters": (_schedule(
            "p = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)", "p = (it - warmup_iters) / cosine_cycle_iters"),
            "one_phase"),
        "a tensor, not a float": ("""
            import math
            import torch
            def lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
                if it < warmup_iters:
                    return torch.tensor(max_learning_rate * it / warmup_iters)
                if it > cosine_cycle_iters:
                    return torch.tensor(min_learning_rate)
                p = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
                return torch.tensor(min_learning_rate + (max_learning_rate - min_learning_rate) * (1 + math.cos(math.pi * p)) / 2)
        """, "a_float"),
    },
}


def _variant(name: str, old: str, new: str) -> str:
    """The vectorised source of ``name`` with one edit."""
    return _edit(VECTORISED[name], old, new)


_ADAM = """
    import torch
    def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        b1, b2 = betas
        p = p - lr * weight_decay * p
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad * grad
        m_hat, v_hat = m / (1 - b1 ** step), v / (1 - b2 ** step)
        p = p - lr * m_hat / (v_hat.sqrt() + eps)
        return p, m, v
"""


def _adam(old: str, new: str) -> str:
    return _edit(_ADAM, old, new)


WRONG.update({
    "adamw_step": {
        "decay added to the gradient (Adam with L2)": (_adam(
            "p = p - lr * weight_decay * p\n        m = b1 * m + (1 - b1) * grad",
            "grad = grad + weight_decay * p\n        m = b1 * m + (1 - b1) * grad"), "decay_on_the_moment"),
        "no bias correction": (_adam("m / (1 - b1 ** step), v / (1 - b2 ** step)", "m, v"), "no_bias_correction"),
        "no weight decay": (_adam("p = p - lr * weight_decay * p\n        ", ""), "no_weight_decay"),
        "the decay without lr": (_adam("p = p - lr * weight_decay * p", "p = p * (1 - weight_decay)"),
                                 "decay_without_the_learning_rate"),
        "the bias correction with step + 1": (_adam("m / (1 - b1 ** step), v / (1 - b2 ** step)",
                                                    "m / (1 - b1 ** (step + 1)), v / (1 - b2 ** (step + 1))"),
                                              "bias_correction_one_step_late"),
        "m_hat and v_hat returned": (_adam("return p, m, v", "return p, m_hat, v_hat"), "corrected_moments_returned"),
        "the default betas and eps": (_adam("b1, b2 = betas", "b1, b2, eps = 0.9, 0.999, 1e-8"), "default_betas_and_eps"),
        "eps inside the root: tiny gradients (escaped)": (_adam("(v_hat.sqrt() + eps)", "(v_hat + eps).sqrt()"),
                                                          "eps_inside_the_root"),
        "eps beside the uncorrected root": (_adam(
            "m_hat, v_hat = m / (1 - b1 ** step), v / (1 - b2 ** step)\n        p = p - lr * m_hat / (v_hat.sqrt() + eps)",
            "alpha = lr * (1 - b2 ** step) ** 0.5 / (1 - b1 ** step)\n        p = p - alpha * m / (v.sqrt() + eps)"),
            "eps_beside_the_uncorrected_root"),
        "CS336's Algorithm 1 as written": ("""
            import math
            def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
                beta1, beta2 = betas
                m = beta1 * m + (1 - beta1) * grad
                v = beta2 * v + (1 - beta2) * grad ** 2
                alpha_t = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
                p = p - alpha_t * m / (v.sqrt() + eps)
                p = p - lr * weight_decay * p
                return p, m, v
        """, "cs336_algorithm"),
        "element by element over two dims": ("""
            import math
            def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
                p, m, v = p.clone(), m.clone(), v.clone()
                for i in range(p.shape[0]):
                    for j in range(p.shape[1]):
                        g = float(grad[i, j])
                        m[i, j] = betas[0] * m[i, j] + (1 - betas[0]) * g
                        v[i, j] = betas[1] * v[i, j] + (1 - betas[1]) * g * g
                        m_hat, v_hat = float(m[i, j]) / (1 - betas[0] ** step), float(v[i, j]) / (1 - betas[1] ** step)
                        p[i, j] = p[i, j] * (1 - lr * weight_decay) - lr * m_hat / (math.sqrt(v_hat) + eps)
                return p, m, v
        """, "any_shape"),
        "float32 in, float64 out": (_adam("b1, b2 = betas", "b1, b2 = betas\n        p, grad, m, v = p.double(), grad.double(), m.double(), v.double()"),
                                    "dtype"),
        "p, m and v updated in place": ("""
            def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
                b1, b2 = betas
                p.mul_(1 - lr * weight_decay)
                m.mul_(b1).add_(grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
                p.addcdiv_(m / (1 - b1 ** step), (v / (1 - b2 ** step)).sqrt() + eps, value=-lr)
                return p, m, v
        """, "inputs_changed_in_place"),
        "torch.optim.AdamW": ("""
            import torch
            def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
                param = torch.nn.Parameter(p.clone())
                opt = torch.optim.AdamW([param], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
                opt.state[param] = {"step": torch.tensor(float(step - 1)), "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
                param.grad = grad.clone()
                opt.step()
                return param.detach(), opt.state[param]["exp_avg"], opt.state[param]["exp_avg_sq"]
        """, "rule_broken"),
    },
    "get_batch": {
        "targets not shifted": (_variant("get_batch", "windows[:, 1:]", "windows[:, :-1]"), "targets_not_shifted"),
        "one start too many": (_variant("get_batch", "high = len(dataset) - context_length",
                                        "high = len(dataset) - context_length + 1"), "one_start_too_many"),
        "inputs and targets swapped": (_variant("get_batch", "return windows[:, :-1], windows[:, 1:]",
                                                "return windows[:, 1:], windows[:, :-1]"), "inputs_and_targets_swapped"),
        "one start for every row (right for batch 1)": (_variant(
            "get_batch", "starts = [int(generator.integers(0, high)) for _ in range(batch_size)]",
            "starts = [int(generator.integers(0, high))] * batch_size"), "one_window_for_every_row"),
        "distinct starts from a permutation": (_variant(
            "get_batch", "starts = [int(generator.integers(0, high)) for _ in range(batch_size)]",
            "starts = generator.permutation(high)[:batch_size]"), "starts_drawn_otherwise"),
        "int32 tensors (escaped)": (_variant("get_batch", "return windows[:, :-1], windows[:, 1:]",
                                             "return windows[:, :-1].int(), windows[:, 1:].int()"), "int64"),
        "the dataset's dtype kept": (_variant("get_batch", ".astype(np.int64)", ""), "int64"),
        "a dataset of context_length + 1 tokens refused": (_variant(
            "get_batch", "high = len(dataset) - context_length",
            "high = len(dataset) - context_length\n            if high < 2:\n                raise ValueError('dataset too short')"),
            "shortest_dataset"),
        "the dataset shuffled in place": (_variant(
            "get_batch", "high = len(dataset) - context_length", "generator.shuffle(dataset)\n            high = len(dataset) - context_length"),
            "inputs_changed_in_place"),
        "numpy arrays returned": (_variant("get_batch", "windows = torch.as_tensor(np.asarray(dataset)[offsets].astype(np.int64), device=device)",
                                           "windows = np.asarray(dataset)[offsets].astype(np.int64)"), "not_tensors"),
    },
})

_MHSA = "causal_multihead_self_attention"
_LOOP_OVER_HEADS = """
    import math
    import torch
    def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
        seq, d = x.shape[-2], x.shape[-1]
        w = d // num_heads
        q, k, v = x @ q_weight.T, x @ k_weight.T, x @ v_weight.T
        future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        heads = []
        for h in range(num_heads):
            cols = slice(h * w, (h + 1) * w)
            s = (q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(w)).masked_fill(future, -math.inf)
            e = (s - s.amax(-1, keepdim=True)).exp()
            heads.append(e / e.sum(-1, keepdim=True) @ v[..., cols])
        return torch.cat(heads, dim=-1) @ o_weight.T
"""

WRONG.update({
    _MHSA: {
        "heads as interleaved columns": (_variant(_MHSA, 'W).unflatten(-1, (num_heads, w))', 'W).unflatten(-1, (w, num_heads)).transpose(-1, -2)')
                                         .replace('heads = torch.einsum("...hst,...thw->...shw", weights, v).flatten(-2)',
                                                  'heads = torch.einsum("...hst,...thw->...shw", weights, v).transpose(-1, -2).flatten(-2)'),
                                         "heads_split_interleaved"),
        "heads concatenated interleaved": (_variant(_MHSA, 'weights, v).flatten(-2)', 'weights, v).transpose(-1, -2).flatten(-2)'),
                                           "heads_merged_interleaved"),
        "scaled by 1/sqrt(d_model)": (_variant(_MHSA, "/ math.sqrt(w)", "/ math.sqrt(d)"), "scaled_by_d_model"),
        "the diagonal hidden": (_variant(_MHSA, ".triu(1)", ".triu(0)"), "causal_mask_excludes_current"),
        "the next position visible": (_variant(_MHSA, ".triu(1)", ".triu(2)"), "causal_mask_includes_next"),
        "no causal mask": (_variant(_MHSA, "scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), -math.inf)\n            ", ""),
                           "no_causal_mask"),
        "no output projection": (_variant(_MHSA, 'return torch.einsum("...se,de->...sd", heads, o_weight)', "return heads"),
                                 "no_output_projection"),
        "the weights without .T": (_variant(_MHSA, '"...sd,ed->...se"', '"...sd,de->...se"')
                                   .replace('"...se,de->...sd"', '"...se,ed->...sd"'), "weights_not_transposed"),
        "a Python loop over heads (escaped)": (_LOOP_OVER_HEADS, "batched"),
        "a Python loop over positions": ("""
            import math
            import torch
            def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
                *lead, seq, d = x.shape
                w = d // num_heads
                split = lambda t: t.unflatten(-1, (num_heads, w)).transpose(-3, -2)
                q, k, v = split(x @ q_weight.T), split(x @ k_weight.T), split(x @ v_weight.T)
                rows = []
                for i in range(seq):
                    s = q[..., i:i + 1, :] @ k[..., :i + 1, :].transpose(-2, -1) / math.sqrt(w)
                    e = (s - s.amax(-1, keepdim=True)).exp()
                    rows.append(e / e.sum(-1, keepdim=True) @ v[..., :i + 1, :])
                return torch.cat(rows, dim=-2).transpose(-3, -2).flatten(-2) @ o_weight.T
        """, "batched"),
        "torch.nn.functional.scaled_dot_product_attention per head (escaped)": ("""
            import torch
            def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
                w = x.shape[-1] // num_heads
                q, k, v = x @ q_weight.T, x @ k_weight.T, x @ v_weight.T
                outs = [torch.nn.functional.scaled_dot_product_attention(q[..., h * w:(h + 1) * w], k[..., h * w:(h + 1) * w],
                                                                         v[..., h * w:(h + 1) * w], is_causal=True)
                        for h in range(num_heads)]
                return torch.cat(outs, dim=-1) @ o_weight.T
        """, "rule_broken"),
        "x unpacked as (batch, seq, d_model) (escaped)": (_variant(_MHSA, "*lead, seq, d = x.shape", "batch, seq, d = x.shape"),
                                                          "leading_dims"),
        "the scale folded into q_weight in place": (_variant(_MHSA, "w = d // num_heads", "w = d // num_heads\n            q_weight /= math.sqrt(w)")
                                                     .replace(") / math.sqrt(w)", ")"), "inputs_changed_in_place"),
        "float32 in, float64 out": (_variant(_MHSA, "*lead, seq, d = x.shape",
                                             "*lead, seq, d = x.shape\n            x = x.double()\n"
                                             "            q_weight, k_weight, v_weight, o_weight = (t.double() for t in (q_weight, k_weight, v_weight, o_weight))"),
                                    "dtype"),
    },
    "swiglu": {
        "sigmoid instead of SiLU": (_variant("swiglu", "gate = a / (1 + torch.exp(-a))", "gate = 1 / (1 + torch.exp(-a))"),
                                    "sigmoid_instead_of_silu"),
        "the SiLU on the w3 branch": (_variant("swiglu", 'a = torch.einsum("...d,fd->...f", x.double(), w1_weight.double())',
                                               'a = torch.einsum("...d,fd->...f", x.double(), w3_weight.double())')
                                      .replace('hidden = gate * torch.einsum("...d,fd->...f", x.double(), w3_weight.double())',
                                               'hidden = gate * torch.einsum("...d,fd->...f", x.double(), w1_weight.double())'),
                                      "gate_on_the_other_branch"),
        "no w3 branch": (_variant("swiglu", 'hidden = gate * torch.einsum("...d,fd->...f", x.double(), w3_weight.double())',
                                  "hidden = gate"), "no_gate"),
        "the SiLU after the product": ("""
            import torch
            def swiglu(x, w1_weight, w2_weight, w3_weight):
                h = (x @ w1_weight.T) * (x @ w3_weight.T)
                return (h * torch.sigmoid(h)) @ w2_weight.T
        """, "silu_after_the_product"),
        "torch.nn.functional.silu (escaped)": ("""
            import torch
            import torch.nn.functional as F
            def swiglu(x, w1_weight, w2_weight, w3_weight):
                return (F.silu(x @ w1_weight.T) * (x @ w3_weight.T)) @ w2_weight.T
        """, "rule_broken"),
        "written for (rows, d) and (batch, seq, d) only": ("""
            import torch
            def swiglu(x, w1_weight, w2_weight, w3_weight):
                rows = x.reshape(-1, x.shape[-1])
                a = rows @ w1_weight.T
                out = (a * torch.sigmoid(a) * (rows @ w3_weight.T)) @ w2_weight.T
                return out.reshape(x.shape[0], x.shape[1], -1) if x.dim() == 3 else out
        """, "leading_dims"),
        "float32 in, float64 out": (_variant("swiglu", ").to(x.dtype)", ")"), "dtype"),
        "the weights transposed in place with t_()": ("""
            import torch
            def swiglu(x, w1_weight, w2_weight, w3_weight):
                a = x @ w1_weight.t_()
                return (a * torch.sigmoid(a) * (x @ w3_weight.t_())) @ w2_weight.t_()
        """, "inputs_changed_in_place"),
    },
})

_BLOCK = "transformer_block"
_LM = "transformer_lm"
_RESIDUALS = ('z = x + (probs @ v).transpose(-3, -2).flatten(-2) @ weights["attn.output_proj.weight"].T',
              'return z + (a * torch.sigmoid(a) * (g @ weights["ffn.w3.weight"].T)) @ weights["ffn.w2.weight"].T')

WRONG.update({
    _BLOCK: {
        "post-norm": (_variant(_BLOCK, 'h = norm(x, weights["ln1.weight"], eps)', "h = x")
                      .replace('z = x + (probs @ v)', 'z = norm(x + (probs @ v)')
                      .replace('@ weights["attn.output_proj.weight"].T\n', '@ weights["attn.output_proj.weight"].T, weights["ln1.weight"], eps)\n')
                      .replace('g = norm(z, weights["ln2.weight"], eps)', "g = z")
                      .replace('return z + (a * torch.sigmoid(a) * (g @ weights["ffn.w3.weight"].T)) @ weights["ffn.w2.weight"].T',
                               'return norm(z + (a * torch.sigmoid(a) * (g @ weights["ffn.w3.weight"].T)) @ weights["ffn.w2.weight"].T, '
                               'weights["ln2.weight"], eps)'), "post_norm"),
        "no residual around the attention": (_variant(_BLOCK, "z = x + (probs @ v)", "z = (probs @ v)"), "no_attention_residual"),
        "no residual around the feed-forward": (_variant(_BLOCK, "return z + (a * torch.sigmoid(a)", "return (a * torch.sigmoid(a)"),
                                                "no_ffn_residual"),
        "the diagonal hidden": (_variant(_BLOCK, ".triu(1)", ".triu(0)"), "causal_mask_excludes_current"),
        "the next position visible": (_variant(_BLOCK, ".triu(1)", ".triu(2)"), "causal_mask_includes_next"),
        "RoPE on half-split pairs": (_variant(_BLOCK, "t.double().unflatten(-1, (-1, 2)).contiguous()",
                                              "t.double().unflatten(-1, (2, -1)).transpose(-1, -2).contiguous()")
                                     .replace("torch.view_as_real(turned).flatten(-2)",
                                              "torch.view_as_real(turned).transpose(-1, -2).flatten(-2)"), "rope_half_split"),
        "scaled by 1/sqrt(d_model)": (_variant(_BLOCK, "/ math.sqrt(w)", "/ math.sqrt(d)"), "scaled_by_d_model"),
        "ln1 and ln2 swapped": (_variant(_BLOCK, 'norm(x, weights["ln1.weight"], eps)', 'norm(x, weights["ln2.weight"], eps)')
                                .replace('norm(z, weights["ln2.weight"], eps)', 'norm(z, weights["ln1.weight"], eps)'),
                                "norm_gains_swapped"),
        "RoPE tables for 16 positions (right for short sequences)": (_variant(
            _BLOCK, "angles = torch.outer(torch.arange(seq, dtype=torch.float64), theta ** (-torch.arange(0, w, 2, dtype=torch.float64) / w))",
            "angles = torch.outer(torch.arange(16, dtype=torch.float64), theta ** (-torch.arange(0, w, 2, dtype=torch.float64) / w))"
            "\n            angles = angles[:seq] if seq <= 16 else angles.expand(seq, -1)"), "long_sequence"),
        "eps fixed at 1e-5": (_variant(_BLOCK, "h.pow(2).mean(-1, keepdim=True) + eps", "h.pow(2).mean(-1, keepdim=True) + 1e-5"),
                              "theta_and_eps"),
        "float32 in, float64 out": (_variant(_BLOCK, "*lead, seq, d = x.shape",
                                             "*lead, seq, d = x.shape\n            x, weights = x.double(), {k: t.double() for k, t in weights.items()}"),
                                    "dtype"),
        "the residual added into x in place": (_variant(_BLOCK, "z = x + (probs @ v)", "z = x\n            z += (probs @ v)"),
                                                "inputs_changed_in_place"),
        "torch.nn.functional.silu": (_variant(_BLOCK, "(a * torch.sigmoid(a)", "(torch.nn.functional.silu(a)"), "rule_broken"),
        "torch.softmax": (_variant(_BLOCK, "probs = (scores - scores.amax(-1, keepdim=True)).exp()\n            probs = probs / probs.sum(-1, keepdim=True)",
                                   "probs = torch.softmax(scores, dim=-1)"), "rule_broken"),
    },
    _LM: {
        "no final norm": (_variant(_LM, 'return norm(h, weights["ln_final.weight"], eps) @', "return h @"), "no_final_norm"),
        "the output tied to the embedding": (_variant(_LM, '@ weights["lm_head.weight"].T', '@ weights["token_embeddings.weight"].T'),
                                             "tied_output"),
        "no RoPE": (_variant(_LM, "q, k = rope(q, theta), rope(k, theta)", ""), "rope_not_applied"),
        "probabilities returned": (_variant(_LM, 'return norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T',
                                            'logits = norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T'
                                            '\n            e = (logits - logits.amax(-1, keepdim=True)).exp()\n            return e / e.sum(-1, keepdim=True)'),
                                   "softmax_applied"),
        "log-probabilities returned": (_variant(_LM, 'return norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T',
                                                'logits = norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T'
                                                '\n            return logits - torch.logsumexp(logits, -1, keepdim=True)'),
                                       "log_probabilities_returned"),
        "the layers in reverse order": (_variant(_LM, "for i in range(num_layers):", "for i in reversed(range(num_layers)):"),
                                        "layers_in_reverse_order"),
        "only layers.0": (_variant(_LM, "for i in range(num_layers):", "for i in range(1):"), "only_the_first_layer"),
        "eps fixed at 1e-5": (_variant(_LM, "h.pow(2).mean(-1, keepdim=True) + eps", "h.pow(2).mean(-1, keepdim=True) + 1e-5"),
                              "as_given"),
        "float32 in, float64 out": (_variant(_LM, 'return norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T',
                                             'return (norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T).double()'),
                                    "dtype"),
        "the scale folded into the q weights in place": (_variant(_LM, "for i in range(num_layers):",
                                                                  "for i in range(num_layers):\n                weights[f'layers.{i}.attn.q_proj.weight'] /= math.sqrt(h.shape[-1] // num_heads)")
                                                         .replace("scores = (q @ k.transpose(-2, -1) / math.sqrt(w))", "scores = (q @ k.transpose(-2, -1))"),
                                                         "inputs_changed_in_place"),
        "torch.nn.functional.embedding": (_variant(_LM, 'h = weights["token_embeddings.weight"].index_select(0, ids.flatten()).unflatten(0, ids.shape)',
                                                   'h = torch.nn.functional.embedding(ids, weights["token_embeddings.weight"])'),
                                          "rule_broken"),
    },
})

CORRECT = {"loops": LOOPS, "vectorised": VECTORISED}
