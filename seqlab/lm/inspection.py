"""Look inside a TransformerLM's forward pass: per-head attention weights, tensor shapes, and the
top candidates for the next token.

``trace_forward`` runs the model once with taps (seqlab.model.taps) that read every layer's
attention weights and the first block's tensors, and records their shapes in the order the
forward computes them. Row i of a layer's weights is query i's distribution over keys 0..i. The
weights alone are ``seqlab.model.taps.attention_patterns(model, ids)``.

    trace = trace_forward(model, [5, 17, 2])     # a 2-layer, 2-head model
    trace.attention[0].shape       # (2, 3, 3): layer 0, heads x queries x keys
    trace.attention[0][1, 0]       # tensor([1., 0., 0.]): the first token can only see itself
    dict(trace.shapes)["scores"]   # (1, 2, 3, 3)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from seqlab.inference.sampling import next_token_distribution
from seqlab.model import TransformerLM
from seqlab.model.embedding import check_token_ids
from seqlab.model.taps import Taps


@dataclass
class ForwardTrace:
    """What one forward pass over ``ids`` computed.

    attention: one (heads, T, T) tensor per layer, rows = queries, columns = keys.
    shapes: (name, shape) of the tensors of the first block and the ends of the model, in the
        order they are computed (batch dimension 1 included).
    logits: (T, vocab) next-token logits at every position.
    """

    attention: list[torch.Tensor]
    shapes: list[tuple[str, tuple[int, ...]]]
    logits: torch.Tensor


def check_ids(model: TransformerLM, ids) -> torch.Tensor:
    """ids (a list or 1-D tensor of token ids) -> (1, T) long tensor on the model's device.

    Raises ValueError for an empty sequence, more than context_length ids, or an id outside the
    vocabulary, naming the offending position.
    """
    ids = torch.as_tensor(ids, dtype=torch.long).reshape(-1)
    context, vocab = model.config.context_length, model.config.vocab_size
    if ids.numel() == 0:
        raise ValueError("no token ids: give at least one token")
    if ids.numel() > context:
        raise ValueError(f"{ids.numel()} ids exceed the model's context_length {context}; cut the text")
    check_token_ids(ids, vocab)
    return ids[None].to(next(model.parameters()).device)


# the first block's points, in the order the forward computes them, and their names in the trace
FIRST_BLOCK = (("attn.q", "q"), ("attn.k", "k"), ("attn.v", "v"), ("attn.scores", "scores"),
               ("attn.pattern", "weights"), ("attn.z", "head_output"), ("attn_out", "attention_output"),
               ("resid_post", "block_output"))


@torch.no_grad()
def trace_forward(model: TransformerLM, ids) -> ForwardTrace:
    """Run ``model`` on one sequence of ids, keeping every layer's attention weights (module docstring)."""
    ids = check_ids(model, ids)
    taps = Taps(read=["embed", "layers.*.attn.pattern", *(f"layers.0.{point}" for point, _ in FIRST_BLOCK)])
    logits = model(ids, taps=taps)
    cache = taps.cache
    shapes: list[tuple[str, tuple[int, ...]]] = [("ids", tuple(ids.shape)), ("embedding", tuple(cache["embed"].shape))]
    for point, label in FIRST_BLOCK:
        shapes.append((label, tuple(cache[f"layers.0.{point}"].shape)))
        if label == "head_output":  # the heads side by side again: what the output projection reads
            batch, heads, queries, d_head = cache["layers.0.attn.z"].shape
            shapes.append(("concat", (batch, queries, heads * d_head)))
    shapes.append(("logits", tuple(logits.shape)))
    attention = [weights[0] for weights in cache.stack("layers.*.attn.pattern")]
    return ForwardTrace(attention=attention, shapes=shapes, logits=logits[0])


@dataclass
class Candidates:
    """The most probable next tokens (sorted by ``probs``, descending) and what the sampling
    filters do to them.

    ids: (n,) token ids.  probs: their probabilities at the temperature, before top-k/top-p.
    filtered: their probabilities after top-k and top-p (0 = filtered out; the kept ones are
        renormalised over the whole vocabulary, so the kept set sums to 1).
    kept_total: how many tokens of the whole vocabulary survive the filters.
    """

    ids: torch.Tensor
    probs: torch.Tensor
    filtered: torch.Tensor
    kept_total: int


@torch.no_grad()
def next_token_candidates(logits: torch.Tensor, temperature: float = 1.0, *, top_p: float = 1.0,
                          top_k: int | None = None, count: int = 20) -> Candidates:
    """(vocab,) logits -> the ``count`` most probable tokens, through the same filter function
    (``next_token_distribution``) that ``seqlab generate`` samples from. The filters are
    keyword-only (``top_p=``, ``top_k=``), so they cannot be swapped by position.

    Example: logits [2, 1, 0] at temperature 1 have probabilities [0.665, 0.245, 0.090]; with
    top_k=2 the kept two are renormalised to [0.731, 0.269, 0].
    """
    if logits.dim() != 1:
        raise ValueError(f"logits must be one row (vocab,), got shape {tuple(logits.shape)}")
    if count <= 0:
        raise ValueError(f"count must be positive, got {count}")
    row = logits[None]
    probs = next_token_distribution(row, temperature)[0]
    filtered = next_token_distribution(row, temperature, top_p, top_k)[0]
    top = torch.topk(probs, min(count, probs.numel()))
    return Candidates(ids=top.indices, probs=top.values, filtered=filtered[top.indices],
                      kept_total=int((filtered > 0).sum()))
