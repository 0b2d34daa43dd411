"""Activation patching: which activations carry the information that makes the clean prompt's
prediction differ from the corrupted one's."""

from __future__ import annotations

from collections.abc import Callable

import torch

from seqlab.interpret.cache import (
    after_attention,
    after_mlp,
    as_batch,
    check_model,
    check_token,
    run_stages,
    run_with_cache,
    unembed,
)
from seqlab.model import TransformerLM

WHERE = ("resid_pre", "head_out", "mlp_out")


def logit_difference(target: int, baseline: int | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """metric(logits (rows, vocab)) -> (rows,): logit[target] - logit[baseline] (or logit[target])."""
    def metric(logits: torch.Tensor) -> torch.Tensor:
        value = logits[:, target]
        return value - logits[:, baseline] if baseline is not None else value
    return metric


def patch(model: TransformerLM, clean_ids, corrupt_ids, *, target: int | None = None,
          baseline: int | None = None, where: str = "resid_pre",
          metric: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.Tensor:
    """Recovery of the metric when one clean activation is put into the corrupted run.

    where="resid_pre": the residual stream entering layer l at one position, shape (L, seq);
    "mlp_out": one MLP's output at one position, (L, seq); "head_out": one head's output at one
    position, (L, H, seq). The metric is read at the last position: by default the logit
    difference target - baseline; ``metric`` (logits (rows, vocab) -> (rows,)) replaces it.
    Recovery = (patched - corrupted) / (clean - corrupted): 0 = as corrupted, 1 = as clean.

    Every patch of one kind runs as one batch of L * seq (or L * H * seq) rows; a row patched at
    layer l starts from the corrupted run's cached activations there, so layers before l are not
    recomputed.

    Example: clean "When Mary and John went, John gave it to" and corrupt "... Mary gave it to",
    target " Mary", baseline " John": resid_pre lights up at the repeated name's position in the
    early layers and at the last position in the late ones.
    """
    model = check_model(model)
    if where not in WHERE:
        raise ValueError(f"where must be one of {WHERE}, got {where!r}")
    clean, corrupt = as_batch(model, clean_ids, "clean_ids"), as_batch(model, corrupt_ids, "corrupt_ids")
    if clean.shape[0] != 1 or corrupt.shape[0] != 1:
        raise ValueError("patch reads one clean and one corrupted prompt, not batches")
    if clean.shape != corrupt.shape:
        raise ValueError(f"the clean prompt has {clean.shape[1]} tokens and the corrupted one {corrupt.shape[1]}; "
                         "patching swaps activations position by position, so give prompts of the same length "
                         "in tokens")
    if metric is None:
        if target is None:
            raise ValueError("give target (and usually baseline) token ids, or a metric")
        metric = logit_difference(check_token(model, target, "target"),
                                  None if baseline is None else check_token(model, baseline, "baseline"))
    keep_heads = where == "head_out"
    good, bad = run_with_cache(model, clean, head_out=keep_heads), run_with_cache(model, corrupt, head_out=keep_heads)
    with torch.no_grad():
        m_clean = float(metric(good.logits[:, -1]).reshape(-1)[0])
        m_corrupt = float(metric(bad.logits[:, -1]).reshape(-1)[0])
        if m_clean == m_corrupt:
            raise ValueError(f"the metric is {m_clean:.6g} on both prompts: there is nothing to recover; choose a "
                             "target/baseline or prompts on which the model's prediction differs")
        seq, num_layers = clean.shape[1], len(model.layers)
        eye = torch.eye(seq, dtype=torch.bool, device=clean.device)  # row p patches position p
        entries = {}
        for layer, block in enumerate(model.layers):  # builds each layer's batch of patched states
            if where == "resid_pre":
                state = torch.where(eye[..., None], good.resid_pre[layer], bad.resid_pre[layer])  # (seq, seq, d)
                entries[2 * layer] = (state, None)
            elif where == "mlp_out":
                mlp_out = torch.where(eye[..., None], good.mlp_out[layer], bad.mlp_out[layer])
                entries[2 * layer + 2] = (after_mlp(block, bad.resid_mid[layer], mlp_out), None)
            else:
                heads = model.config.num_heads
                delta = (good.head_out[layer, 0] - bad.head_out[layer, 0]).permute(1, 0, 2)  # (H, seq, d)
                # row (h, p): the corrupted attention output plus head h's clean-minus-corrupt at p
                attn_out = bad.attn_out[layer] + eye[None, :, :, None] * delta[:, None]  # (H, seq, seq, d)
                attn_out = attn_out.reshape(heads * seq, seq, -1)
                entries[2 * layer + 1] = (after_attention(block, bad.resid_pre[layer], attn_out), None)
        final = run_stages(model, entries)
        values = metric(unembed(model, final)).reshape(-1)
        recovery = (values - m_corrupt) / (m_clean - m_corrupt)
    shape = (num_layers, model.config.num_heads, seq) if keep_heads else (num_layers, seq)
    return recovery.reshape(shape)
