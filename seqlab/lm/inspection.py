"""Look inside a TransformerLM's forward pass: per-head attention weights, tensor shapes, and the
top candidates for the next token.

The model's forward never keeps the (T, T) attention weights, so ``trace_forward`` runs it block
by block, asking each block's attention for its weights (``need_weights=True``: the same module
with the reference formula), and records the shapes on the way. Row i of a layer's weights is
query i's distribution over keys 0..i. ``attention_maps(model, ids)`` is the weights alone.

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
from seqlab.model.attention import MultiHeadAttention


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
    bad = ((ids < 0) | (ids >= vocab)).nonzero()
    if bad.numel():
        position = int(bad[0, 0])
        raise ValueError(f"position {position}: id {int(ids[position])} is outside the vocabulary [0, {vocab})")
    return ids[None].to(next(model.parameters()).device)


def attention_shapes(attn: MultiHeadAttention, weights: torch.Tensor) -> list[tuple[str, tuple[int, ...]]]:
    """The shapes inside one self-attention call whose weights are (batch, heads, T, T), in the
    order it computes them: its heads q (batch, heads, T, d_head), k and v (batch, kv_heads, T,
    d_head), the scores and weights, the heads' outputs, their concatenation and output_proj's result."""
    batch, heads, queries, keys = weights.shape
    d_head = attn.d_head
    return [("q", (batch, heads, queries, d_head)), ("k", (batch, attn.num_kv_heads, keys, d_head)),
            ("v", (batch, attn.num_kv_heads, keys, d_head)), ("scores", tuple(weights.shape)),
            ("weights", tuple(weights.shape)), ("head_output", (batch, heads, queries, d_head)),
            ("concat", (batch, queries, attn.d_model)), ("attention_output", (batch, queries, attn.d_model))]


@torch.no_grad()
def trace_forward(model: TransformerLM, ids) -> ForwardTrace:
    """Run ``model`` on one sequence of ids, keeping every layer's attention weights (module docstring)."""
    ids = check_ids(model, ids)
    shapes: list[tuple[str, tuple[int, ...]]] = [("ids", tuple(ids.shape))]
    x = model.token_embeddings(ids)
    shapes.append(("embedding", tuple(x.shape)))
    attention = []
    for index, block in enumerate(model.layers):
        x, weights = block(x, need_weights=True)  # weights (1, heads, T, T) from the block's own attention
        attention.append(weights[0])
        if index == 0:
            shapes += attention_shapes(block.attn, weights)
            shapes.append(("block_output", tuple(x.shape)))
    logits = model.lm_head(model.ln_final(x))
    shapes.append(("logits", tuple(logits.shape)))
    return ForwardTrace(attention=attention, shapes=shapes, logits=logits[0])


def attention_maps(model: TransformerLM, ids) -> list[torch.Tensor]:
    """One (heads, T, T) tensor of attention weights per layer for the sequence ``ids``."""
    return trace_forward(model, ids).attention


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
