"""Attention knockout: cut attention edges and measure what the prediction loses.

For a language model, the edge from a source token into the predicted position, one layer at a
time (:func:`knockout`); for an encoder-decoder with attention, the decoder's cross-attention to a
source position (:func:`seqlab.interpret.seq2seq.cross_knockout`). An edge is cut through the
model's taps: its attention score (``...attn.scores``) is set to -inf before the softmax, as the
causal mask hides a future key, so the other weights renormalise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.inputs import as_batch, check_lm, check_position, choose_target, probability
from seqlab.interpret.notes import Note, collect, resolution_note, saturation_note
from seqlab.model import TransformerLM
from seqlab.model.activations import log_softmax
from seqlab.model.kv_cache import KVCache
from seqlab.model.taps import Taps


@dataclass
class Knockout:
    """drops (L, seq): entry (l, s) is the fall in log p(target) at ``position`` when layer l may
    not attend from there to s (0 for s after the position); target and its probability p."""

    drops: torch.Tensor
    target: int
    position: int
    p: float
    notes: list[Note] = field(default_factory=list)


def knockout(model: TransformerLM, ids, *, position: int = -1, target: int | None = None) -> Knockout:
    """Cut, in one layer at a time, the edge from each source s into ``position`` (every head of
    that layer), and measure the drop in log p(target) there. The default target is the model's
    own top token at ``position``.

    Only the prompt up to ``position`` is run (later tokens cannot change that prediction). A cut
    edge into ``position`` changes only that position's residual (earlier positions never read
    it), so each of the L * (position + 1) knockouts is one row of one token, reading the other
    positions' keys and values from the clean run's KV cache, as a decoding step does; the rows of
    layer l join the batch at layer l (``Taps(enter=...)``), all in one forward pass.
    Read it as the information-flow graph of one prediction: layers as columns, positions as rows.
    """
    model = check_lm(model)
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"knockout reads one prompt, got a batch of {ids.shape[0]}")
    seq = ids.shape[1]
    pos = check_position(position, seq)
    n, num_layers = pos + 1, len(model.layers)
    clean = Taps(read=["layers.*.resid_pre"])
    cache = model.new_kv_cache()
    with torch.no_grad():
        logits = model(ids[:, :n], kv_cache=cache, taps=clean)[0, -1]
        target = choose_target(logits, target, model.config.vocab_size)
        base = log_softmax(logits)
        resid = clean.cache.stack("layers.*.resid_pre")[:, 0, pos]  # (L, d): what enters each layer at pos
        prefix = KVCache(num_layers)  # positions before pos, for every row present at each layer
        for layer in range(num_layers):
            present = n * (layer + 1)
            if pos:
                prefix.keys[layer] = cache.keys[layer][:, :, :pos].expand(present, -1, -1, -1)
                prefix.values[layer] = cache.values[layer][:, :, :pos].expand(present, -1, -1, -1)
        sources = torch.arange(n, device=ids.device)

        def cut(value, point):  # the rows that joined at this layer lose the edge pos <- s, s = 0..pos
            value = value.clone()
            value[value.shape[0] - n + sources, :, 0, sources] = float("-inf")
            return value

        taps = Taps(enter={layer: resid[layer].expand(n, 1, -1) for layer in range(num_layers)},
                    edit={"layers.*.attn.scores": cut})
        hidden = model(ids[:0, pos:n], kv_cache=prefix, return_hidden=True, taps=taps)[:, 0]
        drops = base[target] - log_softmax(model.lm_head(hidden))[:, target]
        out = torch.zeros(num_layers, seq, dtype=drops.dtype, device=ids.device)
        out[:, :n] = drops.reshape(num_layers, n)
    p = probability(logits, target)
    notes = collect(saturation_note(p, f"the target ({target})"), resolution_note(out, float(logits.abs().max())))
    return Knockout(out, target, pos, p, notes)
