"""The logit lens: read what each layer hands on as if it were the last layer's output."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.families import family
from seqlab.interpret.notes import Note
from seqlab.model.activations import log_softmax
from seqlab.model.taps import Taps


@dataclass
class LogitLens:
    """Row 0 is the embedding, row l + 1 what layer l hands on (``rows`` labels them; the last is the
    model's own output), over the positions (a language model's tokens, an encoder-decoder's steps).

    logits (rows, positions, vocab) through the model's readout (:meth:`~seqlab.interpret.families.
    Family.readout`); top_ids, top_probs (rows, positions, top_k); target_prob, target_rank (rows,
    positions): probability and rank (1 = the top token) of the token scored there (``targets``; -1
    where there is none, whose probability is NaN and rank 0); predicted: an encoder-decoder's
    scored tokens (None for a language model).
    """

    logits: torch.Tensor
    top_ids: torch.Tensor
    top_probs: torch.Tensor
    target_prob: torch.Tensor
    target_rank: torch.Tensor
    targets: torch.Tensor
    rows: list[str] = field(default_factory=list)
    predicted: list[int] | None = None
    notes: list[Note] = field(default_factory=list)


def check_top_k(top_k, vocab: int) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab:
        raise ValueError(f"top_k must be an int in [1, {vocab}], got {top_k!r}")
    return top_k


def logit_lens(model, ids, *, target=None, top_k: int = 5) -> LogitLens:
    """The lens of one input (seqlab.interpret.families.family): a language model's residual stream
    entering each layer and after the last, through its final norm and unembedding, scoring the
    actual next token (or the one ``target`` everywhere); an encoder-decoder's decoder, each layer's
    output through the decoder's final norm (a pre-norm Transformer) or the RNN's attention and
    combination, and the output layer, scoring the target tokens (default: its greedy output).

    Example: for a model that has learned "A B ... A" -> "B", the last column's target_rank
    often falls from hundreds at row 0 to 1 at the layer that completes the copy.
    """
    f = family(model, ids, target)
    top_k = check_top_k(top_k, f.vocab)
    taps = Taps(read=f.lens_points)
    with torch.no_grad():
        f.run(taps, hidden=True)
        logits = f.readout(f.lens_stack(taps.cache), taps.cache)
        targets = f.lens_targets()
        probs = log_softmax(logits.float()).exp()
        top_probs, top_ids = probs.topk(top_k, dim=-1)
        known = targets >= 0
        safe = targets.clamp(min=0).expand(logits.shape[0], -1)[..., None]
        nan = torch.full_like(top_probs[..., 0], float("nan"))
        target_prob = torch.where(known, probs.gather(-1, safe)[..., 0], nan)
        target_rank = torch.where(known, (logits > logits.gather(-1, safe)).sum(-1) + 1, 0)
    rows = ["embed", *(f"L{i}" for i in range(f.layers))]
    predicted = None if f.predicted is None else f.predicted.tolist()
    return LogitLens(logits, top_ids, top_probs, target_prob, target_rank, targets, rows, predicted)
