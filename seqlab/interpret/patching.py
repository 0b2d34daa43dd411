"""Activation patching: which activations carry the information that makes the clean prompt's
prediction differ from the corrupted one's."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from seqlab.interpret.cache import (
    SCORE_ELEMENTS_PER_CHUNK,
    after_attention,
    after_mlp,
    as_batch,
    attention_input,
    check_model,
    check_token,
    mlp,
    run_with_cache,
    unembed,
)
from seqlab.model import TransformerLM, softmax

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

    Every patch of one kind runs as one batch of L * seq (or L * H * seq) rows. A row patched at
    (layer l, position p) starts from the corrupted run's cache at layer l, and carries only the
    positions p.. (attention is causal: the positions before p equal the corrupted run in every
    layer, so their keys and values are read from its cache): about half the work of recomputing
    every position. The last layer computes the last position only.

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
        positions = torch.arange(seq, device=clean.device)
        entries = {}  # layer the rows enter at -> (corrupted residual there (seq, d), patched value (rows, d), start (rows,))
        for layer, block in enumerate(model.layers):  # builds each layer's batch of patched states
            if where == "resid_pre":  # row p: the clean residual at p entering layer l
                entries[layer] = (bad.resid_pre[layer, 0], good.resid_pre[layer, 0], positions)
            elif where == "mlp_out":  # row p: layer l's output with the clean MLP output at p
                post = after_mlp(block, bad.resid_mid[layer, 0], good.mlp_out[layer, 0])
                entries[layer + 1] = (bad.resid_post[layer, 0], post, positions)
            else:  # row (h, p): the corrupted attention output plus head h's clean-minus-corrupt at p
                delta = (good.head_out[layer, 0] - bad.head_out[layer, 0]).permute(1, 0, 2)  # (H, seq, d)
                mid = after_attention(block, bad.resid_pre[layer, 0], bad.attn_out[layer, 0] + delta)
                post = after_mlp(block, mid, mlp(block, mid)).reshape(-1, mid.shape[-1])  # (H * seq, d)
                entries[layer + 1] = (bad.resid_post[layer, 0], post, positions.repeat(model.config.num_heads))
        final = _run_suffixes(model, bad, entries)
        values = metric(unembed(model, final)).reshape(-1)
        recovery = (values - m_corrupt) / (m_clean - m_corrupt)
    shape = (num_layers, model.config.num_heads, seq) if keep_heads else (num_layers, seq)
    return recovery.reshape(shape)


def _run_suffixes(model: TransformerLM, bad, entries: dict) -> torch.Tensor:
    """The final residual (rows, d) at the last position of rows that each differ from the
    corrupted run from one position on.

    ``entries[k] = (base, patched, start)``: rows entering before layer k (k = L: after the last
    one) whose residual there is ``base`` (seq, d) with position start[r] replaced by patched[r].
    A row's live tokens are its positions start[r]..seq-1; they are kept packed, (tokens, d), so
    the token-wise sublayers (norms, projections, feed-forward) run on those alone, and attention
    reads the other positions' keys and values from the corrupted cache. Rows come back in the
    order of their entry layers.
    """
    num_layers = len(model.layers)
    x = live = None
    finals = []
    for k in range(num_layers + 1):
        if k in entries:
            base, patched, start = entries[k]
            seq = base.shape[0]
            mask = torch.arange(seq, device=base.device)[None] >= start[:, None]  # (rows, seq)
            rows_x = base[mask.nonzero()[:, 1]]  # packed, row-major
            counts = mask.sum(1)
            first = torch.cumsum(counts, 0) - counts
            rows_x[first] = patched
            x = rows_x if x is None else torch.cat((x, rows_x))
            live = mask if live is None else torch.cat((live, mask))
        if live is None:
            continue
        if k == num_layers:  # rows that entered after the last layer: their last position as it is
            finals.append(x[torch.cumsum(live.sum(1), 0) - 1])
            break
        block = model.layers[k]
        last = k == num_layers - 1
        prefix = attention_input(block, bad.resid_pre[k, 0])  # (seq, d)
        out = _suffix_attention(block, attention_input(block, x), live, prefix, last)
        if last:  # only each row's last position reaches the metric
            ends = torch.cumsum(live.sum(1), 0) - 1
            mid = after_attention(block, x[ends], out)
            finals.append(after_mlp(block, mid, mlp(block, mid)))
            x = live = None
        else:
            mid = after_attention(block, x, out)
            x = after_mlp(block, mid, mlp(block, mid))
    return torch.cat(finals)


def _suffix_attention(block, a: torch.Tensor, live: torch.Tensor, prefix: torch.Tensor,
                      last: bool, prefix_kv: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """Attention output of the live tokens a (tokens, d) (the block's attention input, packed by
    ``live`` (rows, seq)): packed (tokens, d), or with last=True each row's last position (rows, d).
    Keys and values of positions that are not live come from ``prefix`` (seq, d), the corrupted
    run's attention input (projected once: ``prefix_kv``). Rows are split into chunks of at most
    seq // 8 rows (at least 8), and fewer when the scores would exceed SCORE_ELEMENTS_PER_CHUNK
    elements: the rows of a chunk start at nearby positions, so its queries start at the first
    of them, which skips about half of the scores."""
    attn = block.attn
    rows, seq = live.shape
    heads, kv_heads, d_head = attn.num_heads, attn.num_kv_heads, attn.d_head
    # RoPE at each token's own position; the corrupted run's keys and values once for all chunks
    rotate = lambda x, n, positions: (x.view(x.shape[0], n, d_head) if attn.rope is None else
                                      attn.rope(x.view(x.shape[0], n, d_head).transpose(0, 1), positions).transpose(0, 1))
    every = torch.arange(seq, device=a.device)
    if prefix_kv is None:
        prefix_kv = (rotate(attn.k_proj(prefix), kv_heads, every), attn.v_proj(prefix).view(seq, kv_heads, d_head))
    step = max(1, SCORE_ELEMENTS_PER_CHUNK // (heads * seq * seq))
    if not last:  # rows come sorted by their first live position: a chunk of a few rows shares most of its queries
        step = min(step, max(8, seq // 8))
    if rows > step:  # a loop over row chunks (memory, shared queries), not over positions, layers or heads
        counts = torch.cumsum(live.sum(1), 0).tolist()
        parts, begin = [], 0
        for i in range(0, rows, step):
            end = counts[min(i + step, rows) - 1]
            parts.append(_suffix_attention(block, a[begin:end], live[i:i + step], prefix, last, prefix_kv))
            begin = end
        return torch.cat(parts)
    # projections of the live tokens only, packed
    where = live.nonzero()[:, 1]  # (tokens,) the position of each live token
    k_full = prefix_kv[0].expand(rows, -1, -1, -1).clone()  # (rows, seq, kv, dh)
    v_full = prefix_kv[1].expand(rows, -1, -1, -1).clone()
    k_full[live] = rotate(attn.k_proj(a), kv_heads, where)
    v_full[live] = attn.v_proj(a).view(-1, kv_heads, d_head)
    k, v = k_full.transpose(1, 2), v_full.transpose(1, 2)  # (rows, kv, seq, dh)
    if last:
        ends = torch.cumsum(live.sum(1), 0) - 1
        q = rotate(attn.q_proj(a[ends]), heads, every[-1:]).reshape(rows, heads, 1, d_head)
    else:  # queries from the chunk's first live position on (no row has live tokens before it)
        first = int(where.min())
        live = live[:, first:]
        q_full = a.new_zeros(rows, seq - first, heads, d_head)
        q_full[live] = rotate(attn.q_proj(a), heads, where)
        q = q_full.transpose(1, 2)
    if kv_heads != heads:  # query head h reads key/value head h // group
        group = heads // kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q / math.sqrt(d_head)) @ k.transpose(-2, -1)  # (rows, H, queries, seq)
    hidden = torch.ones(seq, seq, dtype=torch.bool, device=a.device).triu(1)[-q.shape[2]:]
    scores = scores.masked_fill(hidden, float("-inf"))
    pattern = softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1).to(v.dtype)
    z = (pattern @ v).transpose(1, 2).reshape(rows, q.shape[2], heads * d_head)
    return attn.output_proj(z[:, 0] if last else z[live])
