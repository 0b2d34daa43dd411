"""Attention knockout: cut attention edges and measure what the prediction loses.

An edge is cut through the model's taps: its attention score (``...attn.scores``) is set to -inf
before the softmax, as the causal mask hides a future key, so the other weights renormalise. A
language model: the edge from each source token into the predicted position, one layer at a time.
An encoder-decoder with attention: the decoder's cross-attention to each source position, for every
step at once, in one decoder layer (or the RNN's one attention) at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.families import family
from seqlab.interpret.inputs import SATURATED
from seqlab.interpret.notes import Note, collect, resolution_note, saturation_note
from seqlab.model.activations import log_softmax


@dataclass
class Knockout:
    """drops: the fall in log p(target) when an attention may not read a source position; a language
    model's (L, seq), entry (l, s) for layer l's edge from s into ``position`` (0 for s after it);
    an encoder-decoder's (layers, T, S), entry (l, t, s) at step t when attention l may not read
    source position s. ``layers`` label the attentions; target and p: the scored token and its
    probability (an encoder-decoder's: predicted, and p (T,) per step)."""

    drops: torch.Tensor
    target: int | None
    position: int | None
    p: float | torch.Tensor
    layers: list[str] = field(default_factory=list)
    predicted: list[int] | None = None
    notes: list[Note] = field(default_factory=list)


def knockout(model, ids, *, position: int | None = None, target=None) -> Knockout:
    """Cut, in one attention at a time, the edge from each source into the prediction (a language
    model's at ``position``, default the last, target default its top token there; an
    encoder-decoder's at every step, scoring its target tokens) and measure the drop in log p.

    A language model runs the prompt up to ``position`` only (later tokens cannot change that
    prediction), and a cut edge into ``position`` changes only that position's residual (earlier
    positions never read it), so each of the L * (position + 1) cuts is one row of one token that
    joins the batch at its layer, over the clean run's cache of the earlier positions, as a decoding
    step does. An encoder-decoder runs every cut as a row of one batch. Read a language model's
    answer as the information-flow graph of one prediction: layers as columns, positions as rows.
    """
    f = family(model, ids, target)
    layers = f.attentions
    if not layers:
        raise ValueError("the plain RNN has no attention to cut: its decoder reads the source only through the "
                         "encoder's final state; patch that instead (seqlab interpret patch --where context)")
    if f.seq2seq and position is not None:
        raise ValueError("position: an encoder-decoder's knockout shows every output step")
    pos = None if f.seq2seq else f.position(position, -1)
    base = f.base(upto=pos)
    sources = f.ids.shape[-1] if f.seq2seq else pos + 1
    with torch.no_grad():
        logits = base.logits if f.seq2seq else base.logits[-1:]  # (measured positions, vocab)
        targets = f.predicted if f.seq2seq else torch.tensor([f.target_at(pos, logits[0])], device=logits.device)
        picked = log_softmax(logits).gather(-1, targets[:, None])[:, 0]
        every = torch.arange(sources, device=logits.device)
        edits = {f.scores.format(layer): _cut(layer, every) for layer in range(len(layers))}
        rows = f.run_rows(base, len(layers), sources, pos or 0, edits)  # (rows, measured positions, vocab)
        after = log_softmax(rows).gather(-1, targets[None, :, None].expand(rows.shape[0], -1, 1))[..., 0]
        drops = (picked - after).reshape(len(layers), sources, -1).transpose(1, 2)  # (layers, measured, sources)
    p = picked.exp()
    if f.seq2seq:
        saturated = None
        if bool((p > SATURATED).all()):
            saturated = Note("saturated", f"every step's prediction is saturated (p >= {float(p.min()):.6f}): a cut "
                                          "cannot lower log p measurably.", "Give a target the model is less sure of "
                                          "(--target), or a longer or unusual source.", {"p": float(p.min())})
        notes = collect(saturated, resolution_note(drops, float(logits.abs().max())))
        return Knockout(drops, None, None, p, layers, f.predicted.tolist(), notes)
    out = torch.zeros(len(layers), f.positions, dtype=drops.dtype, device=drops.device)
    out[:, :sources] = drops[:, 0]
    target = int(targets[0])
    notes = collect(saturation_note(float(p[0]), f"the target ({target})"),
                    resolution_note(out, float(logits.abs().max())))
    return Knockout(out, target, pos, float(p[0]), layers, None, notes)


def _cut(layer: int, sources: torch.Tensor):
    """The edit of attention ``layer``'s scores: its rows (``layer * len(sources) + s``) may not read source s."""
    rows = layer * len(sources) + sources

    def cut(value: torch.Tensor, point) -> torch.Tensor:
        value = value.clone()
        value[rows, :, :, sources] = float("-inf")
        return value
    return cut
