"""Token-to-token dependencies of one prediction: gradient x input saliency, layer by layer.

    S[l, s] = sum_k  d log p(target at position) / d r_l[s, k]  *  r_l[s, k]

with r_l the residual stream after layer l (r_0 the embedding; taps ``embed`` and
``layers.{i}.resid_post``): a first-order estimate of how much of the prediction rests on what
position s holds at that depth. One scalar is differentiated, so a single backward pass through
the model's own forward gives every layer at once. The encoder-decoder counterpart, how much each
output step depends on each source position, is seqlab.interpret.seq2seq.connectivity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.inputs import as_batch, check_lm, check_position, choose_target, probability
from seqlab.interpret.notes import Note, collect, resolution_note, saturation_note
from seqlab.model import TransformerLM
from seqlab.model.activations import log_softmax
from seqlab.model.taps import Taps


@dataclass
class Dependencies:
    """saliency (L + 1, seq): S[l, s] above (0 after the position); target, its probability p."""

    saliency: torch.Tensor
    target: int
    position: int
    p: float
    notes: list[Note] = field(default_factory=list)


def token_dependencies(model: TransformerLM, ids, *, position: int = -1, target: int | None = None) -> Dependencies:
    """S above for the prediction at ``position`` (default target: the model's top token there).
    Columns after ``position`` are 0 (causality). One forward, one backward."""
    model = check_lm(model)
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"token_dependencies reads one prompt, got a batch of {ids.shape[0]}")
    pos = check_position(position, ids.shape[1])
    # the graph starts at the embedding, whether or not the weights require gradients
    taps = Taps(read=["embed", "layers.*.resid_post"], edit={"embed": lambda x, point: x.detach().requires_grad_(True)})
    with torch.enable_grad():
        logits = model(ids, taps=taps)[0, pos]
        target = choose_target(logits.detach(), target, model.config.vocab_size)
        resids = [taps.cache["embed"]] + [taps.cache[f"layers.{i}.resid_post"] for i in range(len(model.layers))]
        grads = torch.autograd.grad(log_softmax(logits)[target], resids)
    with torch.no_grad():
        saliency = torch.stack([(g * r).sum(-1)[0] for g, r in zip(grads, resids)]).detach()
    p = probability(logits.detach(), target)
    notes = collect(saturation_note(p, f"the target ({target})"),
                    resolution_note(saliency, float(logits.detach().abs().max())))
    return Dependencies(saliency, target, pos, p, notes)
