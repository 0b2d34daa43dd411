"""Activation patching: which activations carry the information that makes the clean prompt's
prediction differ from the corrupted one's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from seqlab.interpret.inputs import as_batch, check_lm, check_token, choose_pair
from seqlab.interpret.notes import Note, collect, resolution_note
from seqlab.model import TransformerLM
from seqlab.model.kv_cache import KVCache
from seqlab.model.taps import Taps

WHERE = ("resid_pre", "head_out", "mlp_out")
# the tap point each kind of patch replaces
TAP_OF = {"resid_pre": "resid_pre", "mlp_out": "mlp_out", "head_out": "attn.head_out"}
# tokens (rows x positions) one forward pass of a patching batch may carry
TOKENS_PER_PASS = 1 << 14

Progress = Callable[[int, int], None]


@dataclass
class Patching:
    """recovery (L, seq) or, for head_out, (L, H, seq); the metric on the clean and the corrupted
    prompt; target and baseline (None when a custom metric was given)."""

    recovery: torch.Tensor
    where: str
    target: int | None
    baseline: int | None
    clean_metric: float
    corrupt_metric: float
    notes: list[Note] = field(default_factory=list)


def logit_difference(target: int, baseline: int | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """metric(logits (rows, vocab)) -> (rows,): logit[target] - logit[baseline] (or logit[target])."""
    def metric(logits: torch.Tensor) -> torch.Tensor:
        value = logits[:, target]
        return value - logits[:, baseline] if baseline is not None else value
    return metric


def patch(model: TransformerLM, clean_ids, corrupt_ids, *, target: int | None = None,
          baseline: int | None = None, where: str = "resid_pre",
          metric: Callable[[torch.Tensor], torch.Tensor] | None = None,
          progress: Progress | None = None) -> Patching:
    """Recovery of the metric when one clean activation is put into the corrupted run.

    where="resid_pre": the residual stream entering layer l at one position, recovery (L, seq);
    "mlp_out": one MLP's output at one position, (L, seq); "head_out": one head's output at one
    position, (L, H, seq). The metric is read at the last position: by default the logit
    difference target - baseline, the target being the clean prompt's top token and the baseline
    the corrupted prompt's (its second when both agree); ``metric`` (logits (rows, vocab) -> (rows,))
    replaces it. Recovery = (patched - corrupted) / (clean - corrupted): 0 = as corrupted, 1 = as clean.

    All patches run through the model's own forward, in batches of rows, each row one patch:
    - a row patched at (layer l, position p) joins the batch at layer l (``Taps(enter=...)``) with
      the corrupted run's residual there, so the blocks before l run once for all rows;
    - it carries only the positions from its chunk's first patched position a on: the positions
      before a are the corrupted run's in every layer (attention is causal), so their keys and
      values come from the corrupted run's KV cache;
    - in the last layer only the last position reaches the metric, so taps keep only its query
      and its residual there.
    ``progress(done, total)`` is called after each batch.

    Example: clean "When Mary and John went, John gave it to" and corrupt "... Mary gave it to",
    target " Mary", baseline " John": resid_pre lights up at the repeated name's position in the
    early layers and at the last position in the late ones.
    """
    model = check_lm(model)
    if where not in WHERE:
        raise ValueError(f"where must be one of {WHERE}, got {where!r}")
    clean, corrupt = as_batch(model, clean_ids, "clean_ids"), as_batch(model, corrupt_ids, "corrupt_ids")
    if clean.shape[0] != 1 or corrupt.shape[0] != 1:
        raise ValueError("patch reads one clean and one corrupted prompt, not batches")
    if clean.shape != corrupt.shape:
        raise ValueError(f"the clean prompt has {clean.shape[1]} tokens and the corrupted one {corrupt.shape[1]}; "
                         "patching swaps activations position by position, so give prompts of the same length "
                         "in tokens")
    num_layers, seq = len(model.layers), clean.shape[1]
    point = TAP_OF[where]
    good, bad = Taps(read=[f"layers.*.{point}"]), Taps(read=["layers.*.resid_pre", f"layers.*.{point}"])
    kv = model.new_kv_cache()
    with torch.no_grad():
        clean_logits = model(clean, taps=good)[0, -1]
        corrupt_logits = model(corrupt, kv_cache=kv, taps=bad)[0, -1]
        vocab = model.config.vocab_size
        if metric is None:
            target, baseline = choose_pair(clean_logits, corrupt_logits, target, baseline, vocab)
            metric = logit_difference(target, baseline)
        else:
            target = None if target is None else check_token(vocab, target, "target")
            baseline = None if baseline is None else check_token(vocab, baseline, "baseline")
        m_clean = float(metric(clean_logits[None]).reshape(-1)[0])
        m_corrupt = float(metric(corrupt_logits[None]).reshape(-1)[0])
        if m_clean == m_corrupt:
            raise ValueError(f"the metric is {m_clean:.6g} on both prompts: there is nothing to recover; choose a "
                             "target/baseline or prompts on which the model's prediction differs")
        clean_values = good.cache.stack(f"layers.*.{point}")[:, 0]  # (L, seq, ...)
        entering = bad.cache.stack("layers.*.resid_pre")[:, 0]      # (L, seq, d)
        heads = model.config.num_heads if where == "head_out" else 1
        per_position = num_layers * heads  # rows per patched position
        chunk = max(1, min(max(1, seq // 8), TOKENS_PER_PASS // max(1, per_position * seq)))
        values = []
        for a in range(0, seq, chunk):
            positions = torch.arange(a, min(seq, a + chunk), device=clean.device)
            values.append(metric(model.lm_head(_patched_run(model, corrupt, kv, entering, clean_values, where,
                                                            positions, heads))))
            if progress is not None:
                progress(int(positions[-1]) + 1, seq)
        # rows come chunk by chunk, in each chunk layer by layer, then head, then position
        stacked = [v.reshape(num_layers, heads, -1) for v in values]
        recovery = (torch.cat(stacked, dim=-1) - m_corrupt) / (m_clean - m_corrupt)
    if where != "head_out":
        recovery = recovery[:, 0]
    notes = collect(resolution_note(torch.tensor([m_clean - m_corrupt]),
                                    float(max(clean_logits.abs().max(), corrupt_logits.abs().max()))))
    return Patching(recovery, where, target, baseline, m_clean, m_corrupt, notes)


def _patched_run(model: TransformerLM, corrupt: torch.Tensor, kv: KVCache, entering: torch.Tensor,
                 clean_values: torch.Tensor, where: str, positions: torch.Tensor, heads: int) -> torch.Tensor:
    """Final hidden states (rows, d) at the last position of the rows patched at ``positions`` (a
    chunk of consecutive positions a..), every layer (and head): the rows of layer l, position by
    position (and head by head), join at layer l; the forward runs positions a..seq-1 on top of the
    corrupted run's KV cache of positions 0..a-1."""
    num_layers, seq = len(model.layers), corrupt.shape[1]
    a, count = int(positions[0]), len(positions)
    n = seq - a
    rows = count * heads  # rows per layer
    local = (positions - a).repeat(heads)                               # each row's patched position, in the chunk
    head_index = torch.arange(heads, device=corrupt.device).repeat_interleave(count)
    enter, edits = {}, {}
    for layer in range(num_layers):  # builds each layer's entering rows and their edits (no model math)
        resid = entering[layer, a:].expand(rows, n, -1).clone()
        if where == "resid_pre":
            resid[torch.arange(rows), local] = clean_values[layer, positions].repeat(heads, 1)
        else:
            edits[f"layers.{layer}.{TAP_OF[where]}"] = _replace_rows(clean_values[layer], positions, local,
                                                                    head_index if where == "head_out" else None, n)
        enter[layer] = resid
    last = num_layers - 1
    edits[f"layers.{last}.attn.q"] = lambda q, point: q[..., -1:, :]     # the last query only
    edits[f"layers.{last}.resid_mid"] = lambda x, point: x[:, -1:]        # and its residual
    prefix = KVCache(num_layers)
    if a:
        for layer in range(num_layers):
            present = rows * (layer + 1)
            prefix.keys[layer] = kv.keys[layer][:, :, :a].expand(present, -1, -1, -1)
            prefix.values[layer] = kv.values[layer][:, :, :a].expand(present, -1, -1, -1)
    taps = Taps(enter=enter, edit=edits)
    return model(corrupt[:0, a:], kv_cache=prefix, return_hidden=True, taps=taps)[:, -1]


def _replace_rows(clean: torch.Tensor, positions: torch.Tensor, local: torch.Tensor,
                  head_index: torch.Tensor | None, n: int):
    """An edit for the rows that joined at this layer (the last ``len(local)`` of the batch): row r's
    value at its position (and head) becomes the clean run's. The point may hold fewer positions
    than the rows carry (the last layer keeps only the last one): a patch that is not among them
    cannot reach the metric there."""
    values = clean[positions.repeat(len(local) // len(positions))] if head_index is None \
        else clean[positions.repeat(len(local) // len(positions)), head_index]

    def edit(value: torch.Tensor, point) -> torch.Tensor:
        kept = value.shape[1]
        at = local - (n - kept)
        inside = at >= 0
        value = value.clone()
        rows = value.shape[0] - len(local) + torch.arange(len(local), device=value.device)
        if head_index is None:
            value[rows[inside], at[inside]] = values[inside]
        else:
            value[rows[inside], at[inside], head_index[inside]] = values[inside]
        return value
    return edit
