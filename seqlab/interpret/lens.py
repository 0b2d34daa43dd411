"""The logit lens: read the residual stream after every layer as if it were the last one."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from seqlab.interpret.inputs import as_batch, check_lm, check_token
from seqlab.interpret.notes import Note
from seqlab.model import TransformerLM
from seqlab.model.activations import log_softmax
from seqlab.model.taps import Taps


@dataclass
class LogitLens:
    """Row 0 is the embedding, row l the residual stream after block l (L + 1 rows).

    logits (L + 1, seq, vocab): through the final norm (its scale recomputed on that residual) and
    the unembedding; the last row is the model's own logits. top_ids, top_probs (L + 1, seq, top_k).
    target_prob, target_rank (L + 1, seq): probability and rank (1 = the top token) of the target:
    the actual next token (the last column, which has none, is NaN and rank 0) or the caller's.
    """

    logits: torch.Tensor
    top_ids: torch.Tensor
    top_probs: torch.Tensor
    target_prob: torch.Tensor
    target_rank: torch.Tensor
    targets: torch.Tensor  # (seq,) the id scored at each position (-1: none)
    notes: list[Note] = field(default_factory=list)


def lens_table(logits: torch.Tensor, targets: torch.Tensor, top_k: int) -> LogitLens:
    """A LogitLens of logits (rows, seq, vocab) and the id scored at each position (-1: none)."""
    with torch.no_grad():
        probs = log_softmax(logits.float()).exp()
        top_probs, top_ids = probs.topk(top_k, dim=-1)
        known = targets >= 0
        safe = targets.clamp(min=0).expand(logits.shape[0], -1)[..., None]
        picked_logit = logits.gather(-1, safe)  # (rows, seq, 1)
        target_prob = probs.gather(-1, safe)[..., 0]
        target_rank = (logits > picked_logit).sum(-1) + 1
        target_prob = torch.where(known, target_prob, torch.full_like(target_prob, float("nan")))
        target_rank = torch.where(known, target_rank, torch.zeros_like(target_rank))
    return LogitLens(logits, top_ids, top_probs, target_prob, target_rank, targets)


def check_top_k(top_k, vocab: int) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab:
        raise ValueError(f"top_k must be an int in [1, {vocab}], got {top_k!r}")
    return top_k


def logit_lens(model: TransformerLM, ids, *, top_k: int = 5, target: int | None = None) -> LogitLens:
    """The logit lens of one prompt ids (seq,): the residual stream entering each layer and after
    the last (taps ``layers.{i}.resid_pre``, ``layers.{L-1}.resid_post``), each read through the
    model's own final norm and unembedding.

    Example: for a model that has learned "A B ... A" -> "B", the last column's target_rank
    often falls from hundreds at row 0 to 1 at the layer that completes the copy.
    """
    model = check_lm(model)
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"logit_lens reads one prompt, got a batch of {ids.shape[0]}")
    vocab = model.config.vocab_size
    top_k = check_top_k(top_k, vocab)
    seq = ids.shape[1]
    if target is None:
        targets = torch.cat((ids[0, 1:], ids.new_full((1,), -1)))
    else:
        targets = ids.new_full((seq,), check_token(vocab, target, "target"))
    last = len(model.layers) - 1
    taps = Taps(read=["layers.*.resid_pre", f"layers.{last}.resid_post"])
    with torch.no_grad():
        model(ids, return_hidden=True, taps=taps)
        resid = taps.cache.accumulated_resid()[:, 0]  # (L + 1, seq, d)
        logits = model.lm_head(model.ln_final(resid))
    return lens_table(logits, targets, top_k)
