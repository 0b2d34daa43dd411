"""Direct logit attribution: how much each head, each MLP and the embedding write, directly, into
one logit (or a logit difference) through the final norm and the unembedding."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.inputs import as_batch, check_lm, check_position, check_token, choose_target
from seqlab.interpret.notes import Note
from seqlab.model import TransformerLM
from seqlab.model.taps import Taps


@dataclass
class Attribution:
    """embed (float), heads (L, H), mlps (L,): each part's direct contribution; total: the model's
    own logit (or logit difference), which the parts sum to; target, baseline, position."""

    embed: float
    heads: torch.Tensor
    mlps: torch.Tensor
    total: float
    target: int
    baseline: int | None
    position: int
    notes: list[Note] = field(default_factory=list)


def direct_logit_attribution(model: TransformerLM, ids, *, position: int = -1, target: int | None = None,
                             baseline: int | None = None) -> Attribution:
    """Per-component contributions to logit[target] (minus logit[baseline]) at ``position``; the
    default target is the model's top token there.

    In a pre-norm model the final residual is a sum: embed + sum over (layer, head) of head_out +
    sum over layers of mlp_out. With the final norm's divisor frozen at that residual (the tap
    ``ln_final.scale``), logit = norm(resid) @ u with u = W_U[target] (- W_U[baseline]) is linear in
    the residual, so each part's frozen-norm readout adds up to the logit exactly, up to rounding.
    A post-norm model's residual is renormalised inside every block, so it is not a sum of parts:
    ValueError.
    """
    model = check_lm(model)
    if model.config.norm_position != "pre":
        raise ValueError("direct logit attribution needs a pre-norm model: with norm_position='post' the "
                         "residual stream is renormalised in every block and is not a sum of the parts")
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"direct_logit_attribution reads one prompt, got a batch of {ids.shape[0]}")
    pos = check_position(position, ids.shape[1])
    vocab = model.config.vocab_size
    if baseline is not None:
        baseline = check_token(vocab, baseline, "baseline")
    taps = Taps(read=["embed", "layers.*.attn.head_out", "layers.*.mlp_out", "ln_final.scale"])
    with torch.no_grad():
        logits = model(ids, taps=taps)[0, pos]
        target = choose_target(logits, target, vocab)
        cache, norm = taps.cache, model.ln_final
        weight = model.lm_head.weight
        direction = weight[target] - (weight[baseline] if baseline is not None else 0)
        scale = cache["ln_final.scale"][0, pos]
        readout = lambda part: norm.frozen(part, scale) @ direction
        heads = readout(cache.stack("layers.*.attn.head_out")[:, 0, pos])  # (L, H)
        mlps = (readout(cache.stack("layers.*.mlp_out")[:, 0, pos]) if not model.layers[0].attention_only
                else heads.new_zeros(len(model.layers)))
        embed = readout(cache["embed"][0, pos])
        total = logits[target] - (logits[baseline] if baseline is not None else 0)
    return Attribution(float(embed), heads, mlps, float(total), target, baseline, pos)
