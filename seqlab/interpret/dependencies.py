"""How much a prediction depends on each input position, by one backward pass through the model's
own forward.

A language model (gradient x input saliency, layer by layer)::

    S[l, s] = sum_k  d log p(target at position) / d r_l[s, k]  *  r_l[s, k]

with r_l the residual stream after layer l (r_0 the embedding; taps ``embed`` and
``layers.{i}.resid_post``): a first-order estimate of how much of the prediction rests on what
position s holds at that depth. An encoder-decoder (how much the token predicted at step t depends
on source position s)::

    D[t, s] = || d log p(y_t) / d e_s ||_2

the norm over the embedding's dimensions of the gradient of the predicted token's log-probability
with respect to source position s's embedding (tap ``encoder.embed``); each step is a row of one
batch, so one backward pass gives every step's. ``measure="logits"`` gives instead the norm over
every vocabulary logit, ||d logits_t / d e_s||_F (seqlab.seq2seq.inspection.dependency_map, the map
the paths experiment draws), where tokens the model never predicts count too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.families import family
from seqlab.interpret.notes import Note, collect, resolution_note, saturation_note
from seqlab.model.activations import log_softmax
from seqlab.model.taps import Taps

MEASURES = {"log_p": "||d log p(y_t) / d e_s||_2", "logits": "||d logits_t / d e_s||_F"}
# how a point's gradient g and value x become one number per position
AGGREGATE = {"gradient x input of log p(target)": lambda g, x: (g * x).sum(-1),
             MEASURES["log_p"]: lambda g, x: g.norm(dim=-1)}


@dataclass
class Dependencies:
    """values: a language model's (L + 1, seq), S[l, s] above (0 after the position), with its
    target, position and p; an encoder-decoder's (T, S), D[t, s], with predicted and p (T,).
    measure names the formula; path the route of an RNN with attention ("all", "attention": through
    the attention only, "state": through the recurrent state only), paths the routes it has."""

    values: torch.Tensor
    measure: str
    target: int | None
    position: int | None
    p: float | torch.Tensor
    path: str = "all"
    paths: tuple[str, ...] = ("all",)
    predicted: list[int] | None = None
    notes: list[Note] = field(default_factory=list)


def token_dependencies(model, ids, *, position: int | None = None, target=None, path: str = "all",
                       measure: str = "log_p") -> Dependencies:
    """The dependencies above of one input (seqlab.interpret.families.family): a language model's
    prediction at ``position`` (default the last; target default its top token there); every step of
    an encoder-decoder (target: its target tokens, default the greedy output)."""
    f = family(model, ids, target)
    paths = f.paths
    if path not in paths:
        raise ValueError(f"path {path!r}: this model has the paths {paths}; 'attention' and 'state' separate the "
                         "two routes of an RNN with attention")
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {tuple(MEASURES)}, got {measure!r}")
    if f.seq2seq and position is not None:
        raise ValueError("position: an encoder-decoder's dependencies show every output step")
    if measure == "logits":
        if not f.seq2seq:
            raise ValueError("measure 'logits' is an encoder-decoder's (the paths experiment's map)")
        from seqlab.seq2seq.inspection import dependency_map

        values = dependency_map(f.model, f.ids, f.tgt_in, path=path).float()
        return Dependencies(values, MEASURES["logits"], None, None, _probabilities(f), path, paths,
                            f.predicted.tolist())
    steps = torch.arange(f.positions, device=f.ids.device) if f.seq2seq else \
        torch.tensor([f.position(position, -1)], device=f.ids.device)
    first, *later = f.depends_points  # the graph starts at the embedding, whether or not weights need gradients
    taps = Taps(read=f.depends_points, edit={first: lambda x, point: x.detach().requires_grad_(True),
                                             **f.depends_edits(path)})
    with torch.enable_grad():
        logits = f.run(taps, rows=len(steps))[torch.arange(len(steps)), steps]  # (rows, vocab): row r's own step
        targets = f.predicted if f.seq2seq else torch.tensor([f.target_at(int(steps[0]), logits[0].detach())])
        picked = log_softmax(logits).gather(-1, targets.to(logits.device)[:, None])[:, 0]
        points = [taps.cache[name] for name in f.depends_points]
        grads = torch.autograd.grad(picked.sum(), points)
    with torch.no_grad():
        values = torch.stack([AGGREGATE[f.depends_measure](g, x) for g, x in zip(grads, points)])  # (points, rows, S)
    p = picked.detach().exp()
    size = float(logits.detach().abs().max())
    if f.seq2seq:
        return Dependencies(values[0].float(), f.depends_measure, None, None, p, path, paths, f.predicted.tolist(),
                            collect(resolution_note(values, size)))
    target, pos = int(targets[0]), int(steps[0])
    notes = collect(saturation_note(float(p[0]), f"the target ({target})"), resolution_note(values, size))
    return Dependencies(values[:, 0], f.depends_measure, target, pos, float(p[0]), notes=notes)


def _probabilities(f) -> torch.Tensor:
    with torch.no_grad():
        return log_softmax(f.run()[0]).gather(-1, f.predicted[:, None])[:, 0].exp()
