"""What a trained encoder-decoder looks at: attention maps and the Jacobian dependency map.

Attention maps (`seqlab.model.taps.attention_patterns`) show where each decoder layer's cross-attention puts its
weight; they can mislead (information may already have moved between source positions inside the
encoder). The dependency map asks the question directly:

    D[t, s] = || d logits[t] / d e_s ||_F

how strongly output position t's logits move when source position s's embedding vector e_s moves
(over the vocabulary and the embedding dimensions). It works for every architecture: for the plain
RNN it shows how the bottleneck spreads each output's dependence over the source. The embeddings
are replaced through the model's own taps (``encoder.embed``). ``path`` splits an RNN with
attention's two routes: "attention" (the decoder's starting state cut from the graph) or "state"
(the encoder states the attention reads cut). seqlab.interpret and the paths experiment use this.

Example: for "reverse" on "abc" -> "cba", a model that learned the task has D large on the
anti-diagonal: output 0 depends on source 2, output 2 on source 0.
"""

from __future__ import annotations

import torch

from seqlab.model.taps import Taps
from seqlab.seq2seq.base import Seq2SeqModel

# rows (output position, vocabulary entry) differentiated together in one backward pass
DEPENDENCY_ROWS_PER_PASS = 512
PATHS = ("all", "attention", "state")


def _one_pair(ids: torch.Tensor, name: str) -> torch.Tensor:
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.dim() != 1:
        raise ValueError(f"{name} must be one sequence of shape (length,) or (1, length), got {tuple(ids.shape)}")
    return ids


def available_paths(model: Seq2SeqModel) -> tuple[str, ...]:
    """The paths ``dependency_map`` can separate in this model (always "all")."""
    return ("all", "attention", "state") if model.config.arch == "rnn-attention" else ("all",)


def dependency_map(model: Seq2SeqModel, src_ids: torch.Tensor, tgt_ids: torch.Tensor, *,
                   path: str = "all") -> torch.Tensor:
    """(T, S) Jacobian norms for one pair: src_ids (S,), tgt_ids (T,) = the decoder input (BOS + ...).

    Each (t, v) logit needs its own gradient. Instead of T * V backward passes, the pair is
    repeated as a batch of T * V identical rows; row r = (t, v) keeps only logit[t, v], so one
    backward pass through the sum gives every row's gradient w.r.t. its own copy of the source
    embeddings (rows do not interact). Done in chunks of DEPENDENCY_ROWS_PER_PASS rows.
    ``path``: "all", or for an RNN with attention "attention" or "state" (module docstring).
    """
    if path not in available_paths(model):
        raise ValueError(f"path {path!r}: a {model.config.arch} model has the paths {available_paths(model)}; "
                         "'attention' and 'state' separate the two routes of an RNN with attention")
    src_ids, tgt_ids = _one_pair(src_ids, "src_ids"), _one_pair(tgt_ids, "tgt_ids")
    T, S = tgt_ids.shape[0], src_ids.shape[0]
    vocab = model.config.tgt_vocab_size
    rows = T * vocab
    device = src_ids.device
    squared = torch.zeros(T, S, dtype=torch.float64, device=device)
    cut = {"attention": "decoder.initial", "state": "encoder.output"}.get(path)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, rows, DEPENDENCY_ROWS_PER_PASS):
            r = torch.arange(start, min(rows, start + DEPENDENCY_ROWS_PER_PASS), device=device)
            t, v = r // vocab, r % vocab
            copies = []

            def differentiable(embedded, point):  # the rows' own copies of the source embeddings
                copies.append(embedded.detach().clone().requires_grad_(True))
                return copies[0]

            edit = {"encoder.embed": differentiable}
            if cut is not None:
                edit[cut] = lambda value, point: tuple(x.detach() for x in value) if isinstance(value, tuple) \
                    else value.detach()
            with torch.enable_grad():
                logits = model(src_ids[None].expand(len(r), -1), tgt_ids[None].expand(len(r), -1),
                               taps=Taps(edit=edit))  # (n, T, V)
                picked = logits[torch.arange(len(r), device=device), t, v]
                (grad,) = torch.autograd.grad(picked.sum(), copies[0])  # (n, S, d)
            squared.index_add_(0, t, grad.double().pow(2).sum(-1))
    finally:
        model.train(was_training)
    return squared.sqrt().to(next(model.parameters()).dtype)
