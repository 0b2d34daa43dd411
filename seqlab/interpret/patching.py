"""Activation patching: which activations carry the information that makes the clean input's
prediction differ from the corrupted one's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from seqlab.interpret.families import LanguageModel, family
from seqlab.interpret.inputs import check_token, choose_pair
from seqlab.interpret.notes import Note, collect, resolution_note
from seqlab.model.taps import Taps

WHERE = LanguageModel.where  # what a language model's patching replaces (an encoder-decoder's: EncoderDecoder.where)

Progress = Callable[[int, int], None]


@dataclass
class Patching:
    """recovery (rows, columns), or for head_out (layers, heads, positions): 0 = as corrupted, 1 = as
    clean; ``rows`` label the rows, ``axis`` the columns (a language model's "position"; an
    encoder-decoder's "source", "decoder" or "initial"); the metric on the clean and the corrupted
    input at ``position`` (the last token; an encoder-decoder's step); target and baseline (None
    when a custom metric was given); predicted: an encoder-decoder's target tokens."""

    recovery: torch.Tensor
    where: str
    target: int | None
    baseline: int | None
    clean_metric: float
    corrupt_metric: float
    rows: list[str] = field(default_factory=list)
    axis: str = "position"
    position: int = -1
    predicted: list[int] | None = None
    notes: list[Note] = field(default_factory=list)


def logit_difference(target: int, baseline: int | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """metric(logits (rows, vocab)) -> (rows,): logit[target] - logit[baseline] (or logit[target])."""
    def metric(logits: torch.Tensor) -> torch.Tensor:
        value = logits[:, target]
        return value - logits[:, baseline] if baseline is not None else value
    return metric


def patch(model, clean_ids, corrupt_ids, *, target=None, baseline: int | None = None, where: str | None = None,
          position: int | None = None, metric: Callable[[torch.Tensor], torch.Tensor] | None = None,
          progress: Progress | None = None) -> Patching:
    """Recovery of the metric when one clean activation is put into the corrupted run.

    A language model (where "resid_pre", the default: the residual stream entering layer l at one
    position, recovery (L, seq); "mlp_out": one MLP's output, (L, seq); "head_out": one head's
    output, (L, H, seq)) reads the metric at the last position: by default the logit difference
    target - baseline, the target being the clean prompt's top token and the baseline the corrupted
    prompt's (its second when both agree); ``metric`` (logits (rows, vocab) -> (rows,)) replaces it.
    An encoder-decoder (where "source": a source embedding; "encoder" (default): an encoder layer's
    state or residual at a source position; "decoder": a decoder layer's at a step; "context": the
    attention's context vector at a step, each cross-attention output for the Transformer, the
    decoder's initial state for the plain RNN) reads both runs with the decoder input of the clean
    source's target and reads the metric at decoder step ``position``: by default the first step
    where the corrupted source predicts another token, target the clean token there and baseline
    the corrupted one. Recovery = (patched - corrupted) / (clean - corrupted).

    Every patch is one row of a batched forward pass through the model's own taps; a language
    model's row joins the batch at its layer and carries only the positions from its batch's first
    on (seqlab.interpret.families.LanguageModel.run_rows). ``progress(done, total)`` is called after
    each batch.

    Example: clean "When Mary and John went, John gave it to" and corrupt "... Mary gave it to",
    target " Mary", baseline " John": resid_pre lights up at the repeated name's position in the
    early layers and at the last position in the late ones.
    """
    f = family(model, clean_ids, target)
    where = f.default_where if where is None else where
    if where not in f.where:
        raise ValueError(f"where must be one of {f.where} for this model, got {where!r}")
    corrupt = f.prompt(corrupt_ids, "corrupted source" if f.seq2seq else "corrupt_ids")
    if corrupt.shape != f.ids.shape:
        what, unit = ("source", "sources") if f.seq2seq else ("prompt", "prompts")
        raise ValueError(f"the clean {what} has {f.ids.shape[-1]} tokens and the corrupted one {corrupt.shape[-1]}; "
                         f"patching swaps activations position by position, so give {unit} of the same length")
    labels, names, axis, columns = f.patch_points(where)
    every = sorted({name for row in names for name in row})
    clean_taps = Taps(read=every)
    with torch.no_grad():
        clean_logits = f.run(clean_taps)[0]
    bad = f.base(corrupt, read=every)
    pos = _position(f, position, clean_logits, bad.logits)
    if metric is None:
        target, baseline = choose_pair(clean_logits[pos], bad.logits[pos], f.target_at(pos, clean_logits[pos]),
                                       baseline, f.vocab)
        metric = logit_difference(target, baseline)
    else:
        target = None if target is None else check_token(f.vocab, target, "target")
        baseline = None if baseline is None else check_token(f.vocab, baseline, "baseline")
    m_clean, m_corrupt = (float(metric(logits[pos][None]).reshape(-1)[0]) for logits in (clean_logits, bad.logits))
    if m_clean == m_corrupt:
        raise ValueError(f"the metric is {m_clean:.6g} on both inputs: there is nothing to recover; choose a "
                         "target/baseline or inputs on which the model's prediction differs")
    heads = f.model.config.num_heads if where == "head_out" else 1
    values = []
    for start, cols in f.patch_chunks(columns, len(labels) * heads):
        per_group = len(cols) * heads  # rows of one group: every column (and head) of the batch
        at = cols.repeat(heads)
        head = torch.arange(heads, device=cols.device).repeat_interleave(len(cols)) if heads > 1 else None
        edits: dict[str, list] = {}
        for group, row_names in enumerate(names):
            rows = group * per_group + torch.arange(per_group, device=cols.device)
            for name in row_names:
                edits.setdefault(name, []).append(_replacing(rows, at, head, clean_taps.cache[name],
                                                             f.state_layer(name, group), not f.writable(name)))
        logits = f.run_rows(bad, len(labels), per_group, start, {name: _chain(fns) for name, fns in edits.items()})
        values.append(metric(f.measured(logits, pos)).reshape(len(labels), heads, -1))
        if progress is not None:
            progress(int(cols[-1]) + 1, columns)
    recovery = (torch.cat(values, dim=-1) - m_corrupt) / (m_clean - m_corrupt)
    size = float(max(clean_logits[pos].abs().max(), bad.logits[pos].abs().max()))
    predicted = None if f.predicted is None else f.predicted.tolist()
    return Patching(recovery if where == "head_out" else recovery[:, 0], where, target, baseline, m_clean, m_corrupt,
                    labels, axis, pos, predicted,
                    collect(resolution_note(torch.tensor([m_clean - m_corrupt]), size)))


def _position(f, position: int | None, clean: torch.Tensor, corrupt: torch.Tensor) -> int:
    """Where the metric is read: a language model's last token; an encoder-decoder's step ``position``,
    by default the first where the corrupted source's prediction differs."""
    if not f.seq2seq:
        if position is not None:
            raise ValueError("a language model's patching reads its metric at the last position; give a prompt that "
                             "ends there")
        return f.positions - 1
    if position is None:
        differs = (corrupt.argmax(-1) != clean.argmax(-1)).nonzero()
        if not len(differs):
            raise ValueError("the corrupted source gives the same prediction at every step: there is nothing to "
                             "recover; change the source where it matters (or give --step and --baseline)")
        return int(differs[0, 0])
    return f.position(position, 0)


def _replacing(rows: torch.Tensor, at: torch.Tensor, head: torch.Tensor | None, clean, layer: int | None,
               copy: bool = True):
    """An edit that gives row rows[j] the clean run's value at column at[j] (and head head[j]): of a
    (batch, positions, ...) point, of which a row may carry only the last positions (a language model's
    rows from their batch's first, its last layer the last one only: a patch not among them cannot
    reach the metric there); of a recurrent state offered step by step, (batch, ...) at step
    ``point.step``; or, ``layer`` given, of that layer of a state holding every layer (layers, batch, ...).
    ``copy=False``: written into the value itself (seqlab.interpret.families.Family.writable)."""
    def put(value: torch.Tensor, clean_value: torch.Tensor, point) -> torch.Tensor:
        value = value.clone() if copy else value
        if layer is not None:
            value[layer, rows] = clean_value[layer, 0]
        elif point.step is not None:
            hit = at == point.step
            value[rows[hit]] = clean_value[0, point.step]
        else:
            kept = at - (clean_value.shape[1] - value.shape[1])
            inside = kept >= 0
            by_head = () if head is None else (head[inside],)
            value[(rows[inside], kept[inside], *by_head)] = clean_value[(0, at[inside], *by_head)]
        return value

    def edit(value, point):
        if isinstance(value, tuple):  # the LSTM's (h, c) initial state
            return tuple(put(v, c, point) for v, c in zip(value, clean))
        return put(value, clean, point)
    return edit


def _chain(fns):
    def edit(value, point):
        for fn in fns:
            value = fn(value, point)
        return value
    return fns[0] if len(fns) == 1 else edit
