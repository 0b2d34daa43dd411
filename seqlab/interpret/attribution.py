"""Direct logit attribution: how much each head, each MLP and the embedding write, directly, into
one logit (or a logit difference) through the final norm and the unembedding."""

from __future__ import annotations

import torch

from seqlab.interpret.cache import (
    as_batch,
    check_model,
    check_position,
    check_token,
    norm_gain,
    run_with_cache,
)
from seqlab.model import TransformerLM


def direct_logit_attribution(model: TransformerLM, ids, *, position: int = -1, target: int,
                             baseline: int | None = None) -> dict:
    """Per-component contributions to logit[target] (minus logit[baseline]) at ``position``.

    In a pre-norm model the final residual is a sum: embed + sum over (layer, head) of head_out +
    sum over layers of mlp_out. With the final norm's scale s frozen at that residual (its own
    1 / rms), logit = (resid * s * gain) @ u with u = W_U[target] (- W_U[baseline]) is linear in
    the residual, so each part's (part * s * gain) @ u adds up to the logit exactly, up to rounding.

    Returns {"embed": float, "heads": (L, H) tensor, "mlps": (L,) tensor, "total": float (the
    model's own logit, or logit difference)}. A post-norm model's residual is renormalised inside
    every block, so it is not a sum of parts: ValueError.
    """
    model = check_model(model)
    if model.config.norm_position != "pre":
        raise ValueError("direct logit attribution needs a pre-norm model: with norm_position='post' the "
                         "residual stream is renormalised in every block and is not a sum of the parts")
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"direct_logit_attribution reads one prompt, got a batch of {ids.shape[0]}")
    pos = check_position(position, ids.shape[1])
    target = check_token(model, target, "target")
    weight = model.lm_head.weight
    direction = weight[target]
    if baseline is not None:
        direction = direction - weight[check_token(model, baseline, "baseline")]
    cache = run_with_cache(model, ids)
    with torch.no_grad():
        scale = cache.final_norm_scale[0, pos]
        u = direction * norm_gain(model.ln_final, model.config.d_model, direction) * scale  # (d,)
        heads = cache.head_out[:, 0, pos] @ u   # (L, H)
        mlps = cache.mlp_out[:, 0, pos] @ u     # (L,)
        embed = cache.embed[0, pos] @ u
        logits = cache.logits[0, pos]
        total = logits[target] - (logits[baseline] if baseline is not None else 0)
    return {"embed": float(embed), "heads": heads, "mlps": mlps, "total": float(total)}
