"""Attention knockout: cut one attention edge and measure what the prediction loses."""

from __future__ import annotations

import torch

from seqlab.interpret.cache import as_batch, check_model, check_position, check_token, run_stages, run_with_cache, unembed
from seqlab.model import TransformerLM


def log_probs(logits: torch.Tensor) -> torch.Tensor:
    """log softmax over the last dimension."""
    logits = logits.float()
    return logits - logits.logsumexp(-1, keepdim=True)


def knockout(model: TransformerLM, ids, *, position: int = -1, target: int | None = None) -> torch.Tensor:
    """(L, seq): entry (l, s) is the drop in log p(target) at ``position`` when every head of layer l
    is stopped from attending from ``position`` to source s (its score is masked before the
    softmax, as the causal mask does). Sources after ``position`` are already invisible: 0.

    The default target is the model's own top token at ``position``. Only the prompt up to
    ``position`` is run (later tokens cannot change that prediction), and all L * (position + 1)
    knockouts run as one batch, each row starting at its layer from the clean run's cache.
    Read it as the information-flow graph of one prediction: layers as columns, positions as rows
    (transpose it).
    """
    model = check_model(model)
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"knockout reads one prompt, got a batch of {ids.shape[0]}")
    seq = ids.shape[1]
    pos = check_position(position, seq)
    ids = ids[:, :pos + 1]
    n = pos + 1
    cache = run_with_cache(model, ids, head_out=False)
    with torch.no_grad():
        base = log_probs(cache.logits[0, pos])
        target = int(base.argmax()) if target is None else check_token(model, target, "target")
        blocked = torch.zeros(n, n, n, dtype=torch.bool, device=ids.device)
        sources = torch.arange(n, device=ids.device)
        blocked[sources, pos, sources] = True  # row s: query `pos` may not read key s
        entries = {2 * layer: (cache.resid_pre[layer].expand(n, -1, -1), blocked)
                   for layer in range(len(model.layers))}
        final = run_stages(model, entries, pos)
        drops = base[target] - log_probs(unembed(model, final))[:, target]
        out = torch.zeros(len(model.layers), seq, dtype=drops.dtype, device=ids.device)
        out[:, :n] = drops.reshape(len(model.layers), n)
    return out
