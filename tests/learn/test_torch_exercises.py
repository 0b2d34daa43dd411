"""Every LM-component exercise (PyTorch): the stub fails with "not implemented yet", seqlab.model's
reference passes, every catalogued mistake fails with its own diagnosis, and implementations
written here pass: loops, and torch.nn.functional where it has the function."""

from __future__ import annotations

import pytest

from seqlab.learn.catalog import TORCH_NAMES, exercise
from seqlab.learn.torch_exercises import EXERCISES
from tests.learn.students import check_batch, mutant_test, mutants

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

# Loop-style implementations (one row, position or head at a time), written from the exercises'
# docstrings, not from seqlab's vectorised code.
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
    "causal_multihead_self_attention": """
        import math
        import torch
        def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
            rows = x.reshape(-1, x.shape[-2], x.shape[-1])
            seq, d = rows.shape[1], rows.shape[2]
            w = d // num_heads
            out = torch.zeros_like(rows)
            for b in range(rows.shape[0]):
                q = [q_weight @ rows[b, i] for i in range(seq)]
                k = [k_weight @ rows[b, i] for i in range(seq)]
                v = [v_weight @ rows[b, i] for i in range(seq)]
                for i in range(seq):
                    heads = []
                    for h in range(num_heads):
                        cols = slice(h * w, (h + 1) * w)
                        scores = [float(q[i][cols] @ k[j][cols]) / math.sqrt(w) for j in range(i + 1)]
                        top = max(scores)
                        e = [math.exp(s - top) for s in scores]
                        heads.append(sum(e[j] / sum(e) * v[j][cols] for j in range(i + 1)))
                    out[b, i] = o_weight @ torch.cat(heads)
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

# torch.nn.functional (which the library may not use) as a second oracle where it has the function
FUNCTIONAL = {
    "softmax": """
        import torch
        def softmax(x, dim=-1):
            return torch.nn.functional.softmax(x, dim=dim)
    """,
    "scaled_dot_product_attention": """
        import torch
        def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
            n, m = Q.shape[-2], K.shape[-2]
            allowed = torch.ones(n, m, dtype=torch.bool)
            if mask is not None:
                allowed = allowed & mask
            if causal:
                allowed = allowed & torch.ones(n, m, dtype=torch.bool).tril(m - n)
            return torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=allowed)
    """,
    "cross_entropy": """
        import torch
        def cross_entropy(logits, targets):
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    """,
    "causal_multihead_self_attention": """
        import torch
        def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
            d = x.shape[-1]
            w = d // num_heads
            q, k, v = x @ q_weight.T, x @ k_weight.T, x @ v_weight.T
            outs = []
            for h in range(num_heads):
                cols = slice(h * w, (h + 1) * w)
                outs.append(torch.nn.functional.scaled_dot_product_attention(
                    q[..., cols], k[..., cols], v[..., cols], is_causal=True))
            return torch.cat(outs, dim=-1) @ o_weight.T
    """,
    "swiglu": """
        import torch
        def swiglu(x, w1_weight, w2_weight, w3_weight):
            a = torch.nn.functional.linear(x, w1_weight)
            return torch.nn.functional.linear(torch.nn.functional.silu(a) * torch.nn.functional.linear(x, w3_weight),
                                              w2_weight)
    """,
}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    return check_batch(tmp_path_factory.mktemp("torch-batch"), EXERCISES, "seqlab.learn.torch_mistakes",
                       {"loops": LOOPS, "functional": FUNCTIONAL})


def test_the_catalog_names_every_torch_exercise():
    assert [e.name for e in EXERCISES] == list(TORCH_NAMES)


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_the_stub_fails_with_not_implemented_yet(batch, name):
    report = batch["stub", name]
    assert not report.passed and "not implemented yet" in report.checks[-1]["message"]
    assert f"def {exercise(name).signature}:" in open(report.file).read()


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_the_reference_and_an_independent_implementation_pass(batch, name):
    assert batch["reference", name].passed, batch["reference", name].checks
    assert batch["loops", name].passed, (batch["loops", name].checks, batch["loops", name].diagnosis)
    if name in FUNCTIONAL:
        assert batch["functional", name].passed, (batch["functional", name].checks, batch["functional", name].diagnosis)


MUTANTS = mutants(EXERCISES)
test_each_catalogued_mistake_fails_with_its_own_diagnosis = mutant_test(EXERCISES)


def test_the_issue_s_lm_mistakes_are_catalogued():
    ids = set(MUTANTS)
    assert ("rotate_pairs", "half_split_pairs") in ids and ("rms_norm", "eps_outside_the_root") in ids
    assert ("scaled_dot_product_attention", "causal_mask_excludes_current") in ids
    assert ("scaled_dot_product_attention", "causal_mask_includes_next") in ids
    assert ("adamw_step", "decay_on_the_moment") in ids


def test_adamw_step_s_reference_is_seqlab_s_adamw_against_torch_optim():
    import torch

    from seqlab.learn.references import adamw_step
    p, g = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    new_p, m, v = adamw_step(p, g, torch.zeros(5, dtype=torch.float64), torch.zeros(5, dtype=torch.float64), 1, 0.1,
                             weight_decay=0.2)
    oracle = torch.nn.Parameter(p.clone())
    opt = torch.optim.AdamW([oracle], lr=0.1, weight_decay=0.2)
    oracle.grad = g.clone()
    opt.step()
    assert torch.allclose(new_p, oracle.detach()) and torch.allclose(m, opt.state[oracle]["exp_avg"])


def test_the_block_and_lm_mistakes_are_catalogued():
    ids = set(MUTANTS)
    for expected in ("post_norm", "no_attention_residual", "causal_mask_excludes_current", "causal_mask_includes_next"):
        assert ("transformer_block", expected) in ids
    for expected in ("no_final_norm", "tied_output", "rope_not_applied"):
        assert ("transformer_lm", expected) in ids


@pytest.mark.parametrize("name", ["transformer_block", "transformer_lm"])
def test_causality_is_checked_by_changing_the_last_position(batch, name):
    passed = {c["name"]: c for c in batch["reference", name].checks}
    assert passed["invariants"]["passed"]
    if name == "transformer_block":
        seen = {c["name"]: c for c in batch["mutant", name, "causal_mask_includes_next"].checks}
        assert not seen["invariants"]["passed"]
        assert "changing only the last position changed the output at position" in seen["invariants"]["message"]
    # the reference's cases hold a pair that differs in the last position only
    cases = exercise(name).cases()
    changed = [c for c in cases if c.label.endswith("(its last position changed)")]
    assert changed and any(c.label == changed[0].label.split(" (its")[0] for c in cases)



def test_adamw_step_s_reference_is_a_step_of_seqlab_s_adamw_object():
    import torch

    from seqlab.learn.references import adamw_step
    from seqlab.training import AdamW
    gen = torch.Generator().manual_seed(3)
    p, g = torch.randn(3, 4, generator=gen, dtype=torch.float64), torch.randn(3, 4, generator=gen, dtype=torch.float64)
    m, v = torch.randn(3, 4, generator=gen, dtype=torch.float64) * 0.1, torch.rand(3, 4, generator=gen, dtype=torch.float64)
    new_p, new_m, new_v = adamw_step(p, g, m, v, 7, 0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.3)
    param = torch.nn.Parameter(p.clone())
    opt = AdamW([param], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.3, foreach=False)
    opt.state[param] = {"step": 6, "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    param.grad = g.clone()
    opt.step()
    assert torch.equal(new_p, param.detach()) and torch.equal(new_m, opt.state[param]["exp_avg"])
    assert torch.equal(new_v, opt.state[param]["exp_avg_sq"]) and opt.state[param]["step"] == 7
