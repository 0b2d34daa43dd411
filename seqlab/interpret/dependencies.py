"""Token-to-token dependencies of one prediction: gradient x input saliency, layer by layer.

    S[l, s] = sum_k  d log p(target at position) / d r_l[s, k]  *  r_l[s, k]

with r_l the residual stream after layer l (r_0 the embedding): a first-order estimate of how much
of the prediction rests on what position s holds at that depth. The LM counterpart of the seq2seq
Jacobian dependency map (seqlab.seq2seq.inspection), which measures a different quantity (the norm of
the whole output-by-source Jacobian, over every vocabulary entry) and so shares no code with it:
here one scalar is differentiated, so a single backward pass gives every layer at once.
"""

from __future__ import annotations

import torch

from seqlab.interpret.cache import (
    after_attention,
    after_mlp,
    as_batch,
    attention,
    attention_input,
    check_model,
    check_position,
    check_token,
    mlp,
    unembed,
)
from seqlab.interpret.edge_knockout import log_probs
from seqlab.model import TransformerLM


def token_dependencies(model: TransformerLM, ids, *, position: int = -1, target: int | None = None) -> torch.Tensor:
    """(L + 1, seq): S[l, s] above for the prediction at ``position`` (default target: the model's
    top token there). Columns after ``position`` are 0 (causality). One forward, one backward."""
    model = check_model(model)
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"token_dependencies reads one prompt, got a batch of {ids.shape[0]}")
    pos = check_position(position, ids.shape[1])
    with torch.enable_grad():
        x = model.token_embeddings(ids).detach().requires_grad_(True)
        resids = [x]
        for block in model.layers:
            mid = after_attention(block, x, attention(block, attention_input(block, x)).out)
            x = after_mlp(block, mid, mlp(block, mid))
            resids.append(x)
        logp = log_probs(unembed(model, x[0, pos]))
        target = int(logp.argmax()) if target is None else check_token(model, target, "target")
        grads = torch.autograd.grad(logp[target], resids)
    with torch.no_grad():
        return torch.stack([(g * r).sum(-1)[0] for g, r in zip(grads, resids)]).detach()
