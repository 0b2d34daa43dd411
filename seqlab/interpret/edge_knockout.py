"""Attention knockout: cut one attention edge and measure what the prediction loses."""

from __future__ import annotations

import math

import torch

from seqlab.interpret.cache import (
    after_attention,
    after_mlp,
    as_batch,
    attention_input,
    check_model,
    check_position,
    check_token,
    mlp,
    run_with_cache,
    unembed,
)
from seqlab.model import TransformerLM, softmax


def log_probs(logits: torch.Tensor) -> torch.Tensor:
    """log softmax over the last dimension."""
    logits = logits.float()
    return logits - logits.logsumexp(-1, keepdim=True)


def knockout(model: TransformerLM, ids, *, position: int = -1, target: int | None = None) -> torch.Tensor:
    """(L, seq): entry (l, s) is the drop in log p(target) at ``position`` when every head of layer l
    is stopped from attending from ``position`` to source s (its score is masked before the
    softmax, as the causal mask does). Sources after ``position`` are already invisible: 0.

    The default target is the model's own top token at ``position``. Only the prompt up to
    ``position`` is run (later tokens cannot change that prediction), and all L * (position + 1)
    knockouts run as one batch, each row starting at its layer from the clean run's cache. A cut
    edge into ``position`` changes only that position's residual (earlier positions never read
    it), so each row carries one position and reads the other positions' keys and values from the
    clean run: a batched one-token step per layer, as in decoding with a KV cache.
    Read it as the information-flow graph of one prediction: layers as columns, positions as rows
    (transpose it).
    """
    model = check_model(model)
    ids = as_batch(model, ids)
    if ids.shape[0] != 1:
        raise ValueError(f"knockout reads one prompt, got a batch of {ids.shape[0]}")
    seq = ids.shape[1]
    pos = check_position(position, seq)
    ids = ids[:, :pos + 1]
    n = pos + 1
    cache = run_with_cache(model, ids, head_out=False)
    with torch.no_grad():
        base = log_probs(cache.logits[0, pos])
        target = int(base.argmax()) if target is None else check_token(model, target, "target")
        final = _last_position_rows(model, cache, pos)
        drops = base[target] - log_probs(unembed(model, final))[:, target]
        out = torch.zeros(len(model.layers), seq, dtype=drops.dtype, device=ids.device)
        out[:, :n] = drops.reshape(len(model.layers), n)
    return out


def _last_position_rows(model: TransformerLM, cache, pos: int) -> torch.Tensor:
    """Final residuals (L * (pos + 1), d) at ``pos``: row (l, s) cuts pos <- s in layer l."""
    n = pos + 1
    num_layers = len(model.layers)
    sources = torch.arange(n, device=cache.embed.device)
    running = None
    for layer, block in enumerate(model.layers):
        entering = cache.resid_pre[layer, 0, pos].expand(n, -1)  # (n, d): this layer's n knockouts
        blocked = torch.zeros(n if running is None else running.shape[0] + n, n, dtype=torch.bool,
                              device=entering.device)
        blocked[torch.arange(blocked.shape[0] - n, blocked.shape[0]), sources] = True
        running = entering if running is None else torch.cat((running, entering))
        out = _one_position_attention(block, attention_input(block, cache.resid_pre[layer, 0]),
                                      attention_input(block, running), pos, blocked)
        mid = after_attention(block, running, out)
        running = after_mlp(block, mid, mlp(block, mid))
    assert running.shape[0] == num_layers * n
    return running


def _one_position_attention(block, prefix: torch.Tensor, x: torch.Tensor, pos: int,
                            blocked: torch.Tensor) -> torch.Tensor:
    """Attention output (rows, d) of query rows x (rows, d) at position ``pos``, reading keys and
    values of positions < pos from ``prefix`` (seq, d: the clean attention input) and its own at
    pos. blocked (rows, pos + 1) bool hides those keys."""
    attn = block.attn
    heads, kv_heads, d_head = attn.num_heads, attn.num_kv_heads, attn.d_head
    rows = x.shape[0]
    where = torch.tensor([pos], device=x.device)
    k_all = attn.k_proj(prefix[:pos + 1]).view(pos + 1, kv_heads, d_head).transpose(0, 1)  # (kv, n, dh)
    v_all = attn.v_proj(prefix[:pos + 1]).view(pos + 1, kv_heads, d_head).transpose(0, 1)
    q = attn.q_proj(x).view(rows, heads, 1, d_head)
    k_own = attn.k_proj(x).view(rows, kv_heads, 1, d_head)
    v_own = attn.v_proj(x).view(rows, kv_heads, 1, d_head)
    if attn.rope is not None:
        k_all = attn.rope(k_all)
        q, k_own = attn.rope(q, where), attn.rope(k_own, where)
    group = heads // kv_heads
    if group > 1:
        k_all, v_all = k_all.repeat_interleave(group, 0), v_all.repeat_interleave(group, 0)
        k_own, v_own = k_own.repeat_interleave(group, 1), v_own.repeat_interleave(group, 1)
    q = q / math.sqrt(d_head)
    scores = torch.cat((q @ k_all[:, :pos].transpose(-2, -1), (q * k_own).sum(-1, keepdim=True)), dim=-1)
    scores = scores.masked_fill(blocked[:, None, None, :], float("-inf"))  # (rows, H, 1, pos + 1)
    weights = softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1).to(v_all.dtype)
    z = weights[..., :pos] @ v_all[:, :pos] + weights[..., pos:] * v_own  # (rows, H, 1, dh)
    return attn.output_proj(z.reshape(rows, heads * d_head))
