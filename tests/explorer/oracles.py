"""Independent oracles shared by the model-panel tests (torch.softmax, complex-number RoPE, a sort-based filter)."""

from __future__ import annotations


def rope_oracle(x, theta: float):
    """(..., T, d) -> rotated: pair (2k, 2k+1) at position t as a complex number times e^{i t theta^(-2k/d)}."""
    import torch

    T, d = x.shape[-2:]
    angle = torch.arange(T, dtype=torch.float64)[:, None] * theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).reshape(x.shape)


def kv_head_of_query_heads(num_heads: int, num_kv_heads: int):
    """The key/value head each query head reads (Llama convention): h // (num_heads / num_kv_heads)."""
    import torch

    return torch.tensor([h * num_kv_heads // num_heads for h in range(num_heads)])


def attention_oracle(model, ids: list[int]):
    """Per layer: (attention input h, attention output, oracle weights (H, T, T)), all float64.

    h and the output are taken by hooks from the model's own forward; the weights are recomputed
    from the raw q/k projection matrices, the complex-number RoPE above and torch.softmax."""
    import torch

    seen = []
    hooks = [layer.attn.register_forward_hook(lambda m, args, out: seen.append((args[0][0].double(), out[0].double())))
             for layer in model.layers]
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        for hook in hooks:
            hook.remove()
    T, H, d_head = len(ids), model.config.num_heads, model.config.d_head
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    results = []
    for layer, (h, out) in zip(model.layers, seen):
        split = lambda w: (h @ w.weight.double().T).view(T, -1, d_head).transpose(0, 1)  # (heads, T, d_head)
        q, k = split(layer.attn.q_proj), split(layer.attn.k_proj)
        k = k[kv_head_of_query_heads(H, k.shape[0])]  # grouped-query attention: each query head's key head
        if model.config.positional == "rope":
            q, k = rope_oracle(q, model.config.rope_theta), rope_oracle(k, model.config.rope_theta)
        scores = q @ k.transpose(1, 2) / (q.shape[-1] ** 0.5)
        results.append((h, out, torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)))
    return results


def sorted_filter(logits, temperature: float, top_k, top_p: float):
    """Sort, keep the first k, renormalise, keep while the mass before a token is < p, renormalise."""
    import torch

    probs = torch.softmax(logits.double() / temperature, dim=-1)
    order = torch.sort(probs, descending=True).indices.tolist()
    kept = order[: top_k or len(order)]
    mass = sum(probs[i].item() for i in kept)
    nucleus, before = [], 0.0
    for i in kept:
        if nucleus and before >= top_p:
            break
        nucleus.append(i)
        before += probs[i].item() / mass
    out = torch.zeros_like(probs)
    out[nucleus] = probs[nucleus] / probs[nucleus].sum()
    return out
