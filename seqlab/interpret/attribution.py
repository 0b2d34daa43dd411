"""Direct logit attribution: how much each head, each MLP and the embedding write, directly, into
one logit (or a logit difference) through the final norm and the unembedding."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.families import family
from seqlab.interpret.inputs import check_token
from seqlab.interpret.notes import Note
from seqlab.model.taps import Taps


@dataclass
class Attribution:
    """Each part's direct contribution: embed (the residual the first layer reads), heads (L, H: an
    encoder-decoder's self-attention heads), cross_heads (L, H: its cross-attention heads; None for a
    language model), mlps (L,) and bias (the final LayerNorm's shift, 0 for RMSNorm); total, the
    model's own logit (or logit difference), which they sum to; target, baseline, position (an
    encoder-decoder's decoder step) and predicted (its scored tokens)."""

    embed: float
    heads: torch.Tensor
    mlps: torch.Tensor
    total: float
    target: int
    baseline: int | None
    position: int
    cross_heads: torch.Tensor | None = None
    bias: float = 0.0
    predicted: list[int] | None = None
    notes: list[Note] = field(default_factory=list)


def direct_logit_attribution(model, ids, *, position: int | None = None, target=None,
                             baseline: int | None = None) -> Attribution:
    """Per-part contributions to logit[target] (minus logit[baseline]) at ``position`` (a language
    model: default the last token, target default its top token there; an encoder-decoder: the
    decoder step, default 0, whose target token is scored; ``target`` its target tokens).

    In a pre-norm model the final residual is a sum: the embedding + every head's output + every
    MLP's. With the final norm's divisor frozen at that residual (the tap ``...ln_final.scale``),
    logit = norm(resid) @ u with u = W_U[target] (- W_U[baseline]) is linear in the residual, so the
    parts' frozen-norm readouts and the norm's bias add up to the logit exactly, up to rounding. A
    post-norm model's residual is renormalised inside every layer, and an RNN's is a recurrence:
    neither is a sum of parts (ValueError).
    """
    f = family(model, ids, target)
    points = f.attribution
    if isinstance(points, str):  # why this model's output is not a sum of parts
        raise ValueError(points)
    pos = f.position(position, f.default_position)
    baseline = None if baseline is None else check_token(f.vocab, baseline, "baseline")
    taps = Taps(read=[name for name in points.values() if name])
    with torch.no_grad():
        logits = f.run(taps)[0, pos]
        target = f.target_at(pos, logits)
        weight, cache = f.model.lm_head.weight, taps.cache
        direction = weight[target] - (weight[baseline] if baseline is not None else 0)
        readout, bias = f.frozen_readout(cache[points["scale"]][0, pos], direction)
        parts = {key: readout(cache.stack(points[key])[:, 0, pos]) if points[key] else None
                 for key in ("heads", "cross_heads", "mlps")}
        mlps = parts["mlps"] if parts["mlps"] is not None else parts["heads"].new_zeros(f.layers)
        embed = readout(cache[points["embed"]][0, pos])
        total = logits[target] - (logits[baseline] if baseline is not None else 0)
    predicted = None if f.predicted is None else f.predicted.tolist()
    return Attribution(float(embed), parts["heads"], mlps, float(total), target, baseline, pos, parts["cross_heads"],
                       bias, predicted)
