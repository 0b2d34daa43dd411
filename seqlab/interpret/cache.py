"""A TransformerLM's forward pass re-run from its own submodules, keeping named activations
(``run_with_cache``), and the staged form of it that patching and knockout use to start batch rows
at different layers. The model itself is never hooked; attention is written as softmax(Q K^T /
sqrt(d_head)) V so that the weights and each head's output are visible, and the cached logits equal
``model(ids)`` up to rounding (tested).

Shapes (``L`` layers, ``H`` query heads, ``d`` = d_model): ``embed`` (batch, seq, d); stacked over
layers, ``resid_pre``, ``attn_out``, ``resid_mid``, ``mlp_out``, ``resid_post`` (L, batch, seq, d),
``head_out`` (L, batch, seq, H, d), summing over heads to ``attn_out``; ``pattern`` (L, batch, H,
seq, seq), row = query; ``final_norm_scale`` (batch, seq): the final RMSNorm's 1 / rms (1 without it).

Pre-norm block:  resid_mid = resid_pre + attn_out,        attn_out = attn(ln1(resid_pre))
                 resid_post = resid_mid + mlp_out,        mlp_out = ffn(ln2(resid_mid))
Post-norm block: resid_mid = ln1(resid_pre + attn_out),   attn_out = attn(resid_pre)
                 resid_post = ln2(resid_mid + mlp_out),   mlp_out = ffn(resid_mid)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from seqlab.model import RMSNorm, TransformerLM, softmax
from seqlab.runs import unwrap_model
from seqlab.model.rmsnorm import Identity

# scores (rows * heads * seq * seq) one attention call may hold before rows are split into chunks
SCORE_ELEMENTS_PER_CHUNK = 1 << 24


@dataclass
class Cache:
    """Named activations of one forward pass (shapes in the module docstring)."""

    embed: torch.Tensor
    resid_pre: torch.Tensor
    head_out: torch.Tensor | None
    attn_out: torch.Tensor
    resid_mid: torch.Tensor
    mlp_out: torch.Tensor
    resid_post: torch.Tensor
    pattern: torch.Tensor
    final_norm_scale: torch.Tensor
    logits: torch.Tensor

    def accumulated_resid(self) -> torch.Tensor:
        """The residual stream after the embedding and after each block: (L + 1, batch, seq, d)."""
        return torch.cat((self.embed[None], self.resid_post), dim=0)


def check_model(model) -> TransformerLM:
    """``model`` (the plain module inside torch.compile / DDP wrappers) if this package can read it,
    else a TypeError/ValueError naming what is not supported."""
    model = unwrap_model(model)
    if not isinstance(model, TransformerLM):
        raise TypeError(f"seqlab.interpret works on a seqlab.model.TransformerLM, got {type(model).__name__}")
    norm = model.ln_final
    if not isinstance(norm, (RMSNorm, Identity)):
        raise ValueError(f"unsupported final norm {type(norm).__name__}: seqlab.interpret reads RMSNorm or none")
    for index, layer in enumerate(model.layers):
        for name in ("ln1", "ln2"):
            if not isinstance(getattr(layer, name), (RMSNorm, Identity)):
                raise ValueError(f"layer {index}: unsupported {name} {type(getattr(layer, name)).__name__}; "
                                 "seqlab.interpret reads RMSNorm or none")
        if not layer.attn.causal:
            raise ValueError(f"layer {index}: attention is not causal; seqlab.interpret reads causal LMs")
    return model


def as_batch(model: TransformerLM, ids, name: str = "ids") -> torch.Tensor:
    """ids (seq,) or (batch, seq), a list or tensor, as a (batch, seq) long tensor on the model's
    device, checked against the vocabulary and the context length."""
    ids = torch.as_tensor(ids, device=model.lm_head.weight.device)
    if ids.dim() == 1:
        ids = ids[None]
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty sequence of token ids, shape (seq,) or (batch, seq); "
                         f"got shape {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    ids = ids.long()
    vocab = model.config.vocab_size
    bad = (ids < 0) | (ids >= vocab)
    if bool(bad.any()):
        row, col = (int(v) for v in bad.nonzero()[0])
        raise ValueError(f"{name}: token id {int(ids[row, col])} at position {col} is outside the "
                         f"vocabulary [0, {vocab}); use the tokenizer the model was trained with")
    if ids.shape[1] > model.config.context_length:
        raise ValueError(f"{name} has {ids.shape[1]} tokens, more than the model's context_length "
                         f"{model.config.context_length}; shorten the prompt")
    return ids


def check_token(model: TransformerLM, token: int, name: str) -> int:
    """``token`` as an int if it is a vocabulary id, else a ValueError naming ``name``."""
    if isinstance(token, torch.Tensor):
        token = token.item()
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"{name} must be a token id (an int), got {token!r}")
    if not 0 <= token < model.config.vocab_size:
        raise ValueError(f"{name} id {token} is outside the vocabulary [0, {model.config.vocab_size})")
    return token


def check_position(position: int, seq: int, name: str = "position") -> int:
    """``position`` (negative counts from the end) as an index in [0, seq), else a ValueError."""
    if isinstance(position, bool) or not isinstance(position, int):
        raise TypeError(f"{name} must be an int, got {position!r}")
    if not -seq <= position < seq:
        raise ValueError(f"{name} {position} is out of range for a prompt of {seq} tokens "
                         f"(valid: {-seq}..{seq - 1})")
    return position % seq


def norm_scale(norm, x: torch.Tensor) -> torch.Tensor:
    """The factor ``norm`` multiplies x (..., d) by, before its gain: 1 / rms(x) for RMSNorm, ones for none."""
    if isinstance(norm, Identity):
        return torch.ones(x.shape[:-1], dtype=x.dtype, device=x.device)
    xc = x.to(torch.promote_types(x.dtype, torch.float32))
    return torch.rsqrt(xc.pow(2).mean(-1) + norm.eps).to(x.dtype)


def norm_gain(norm, d: int, like: torch.Tensor) -> torch.Tensor:
    """The norm's learned gain (d,) (ones for none)."""
    if isinstance(norm, Identity):
        return torch.ones(d, dtype=like.dtype, device=like.device)
    return norm.weight


@dataclass
class AttentionParts:
    out: torch.Tensor                   # attn_out (rows, seq, d)
    pattern: torch.Tensor | None        # (rows, H, seq, seq)
    head_out: torch.Tensor | None       # (rows, seq, H, d)


def attention(block, x: torch.Tensor, *, blocked: torch.Tensor | None = None, keep_pattern: bool = False,
              keep_heads: bool = False, last_query: bool = False) -> AttentionParts:
    """The block's causal self-attention of its input x (rows, seq, d), the reference formula.

    blocked: (rows, seq, seq) bool or None; True hides that key from that query in every head (as
    the causal mask does), which is how knockout cuts an edge. last_query=True computes the last
    position's query only (out (rows, 1, d)): all a metric read there needs from the last layer. Rows are split into chunks when the
    scores would exceed SCORE_ELEMENTS_PER_CHUNK elements.
    """
    attn = block.attn
    rows, seq, d = x.shape
    per_row = attn.num_heads * seq * seq
    step = max(1, SCORE_ELEMENTS_PER_CHUNK // per_row)
    if rows > step:  # a loop over row chunks (memory), not over positions, layers or heads
        parts = [attention(block, x[i:i + step], blocked=None if blocked is None else blocked[i:i + step],
                           keep_pattern=keep_pattern, keep_heads=keep_heads, last_query=last_query)
                 for i in range(0, rows, step)]
        return AttentionParts(torch.cat([p.out for p in parts]),
                              torch.cat([p.pattern for p in parts]) if keep_pattern else None,
                              torch.cat([p.head_out for p in parts]) if keep_heads else None)
    heads, kv_heads, d_head = attn.num_heads, attn.num_kv_heads, attn.d_head
    q = attn.q_proj(x).view(rows, seq, heads, d_head).transpose(1, 2)
    k = attn.k_proj(x).view(rows, seq, kv_heads, d_head).transpose(1, 2)
    v = attn.v_proj(x).view(rows, seq, kv_heads, d_head).transpose(1, 2)
    if attn.rope is not None:
        q, k = attn.rope(q), attn.rope(k)
    if last_query:
        q = q[:, :, -1:]
    if kv_heads != heads:  # query head h reads key/value head h // group
        group = heads // kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q / math.sqrt(d_head)) @ k.transpose(-2, -1)  # (rows, H, seq, seq)
    hidden = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)[-q.shape[2]:]
    if blocked is not None:
        hidden = hidden | blocked[:, None, -q.shape[2]:]
    scores = scores.masked_fill(hidden, float("-inf"))
    pattern = softmax(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1).to(v.dtype)
    z = pattern @ v  # (rows, H, seq, d_head)
    head_out = None
    if keep_heads:
        w_o = attn.output_proj.weight.view(d, heads, d_head)  # (out, head, in)
        head_out = torch.einsum("rhsk,dhk->rshd", z, w_o)
        out = head_out.sum(2)
    else:
        out = attn.output_proj(z.transpose(1, 2).reshape(rows, z.shape[2], d))
    return AttentionParts(out, pattern if keep_pattern else None, head_out)


def attention_input(block, resid_pre: torch.Tensor) -> torch.Tensor:
    return block.ln1(resid_pre) if block.norm_position == "pre" else resid_pre


def after_attention(block, resid_pre: torch.Tensor, attn_out: torch.Tensor) -> torch.Tensor:
    """resid_mid from the block's input and its attention output."""
    if block.norm_position == "pre":
        return resid_pre + attn_out
    return block.ln1(resid_pre + attn_out)


def mlp(block, resid_mid: torch.Tensor) -> torch.Tensor:
    """mlp_out of the block for resid_mid."""
    return block.ffn(block.ln2(resid_mid) if block.norm_position == "pre" else resid_mid)


def after_mlp(block, resid_mid: torch.Tensor, mlp_out: torch.Tensor) -> torch.Tensor:
    """resid_post from resid_mid and the feed-forward output."""
    if block.norm_position == "pre":
        return resid_mid + mlp_out
    return block.ln2(resid_mid + mlp_out)


def unembed(model: TransformerLM, resid: torch.Tensor) -> torch.Tensor:
    """Logits of residual vectors (..., d): the final norm (its scale recomputed on each) and lm_head."""
    return model.lm_head(model.ln_final(resid))


def run_with_cache(model: TransformerLM, ids, *, head_out: bool = True) -> Cache:
    """One forward pass of ``model`` on ids (seq,) or (batch, seq), keeping every named activation.

    head_out=False skips the per-head outputs (L * seq * H * d numbers), for callers that need
    only the patterns or the residual stream; ``Cache.head_out`` is then None.

    Example::

        cache = run_with_cache(model, [5, 9, 5])
        cache.resid_post.shape          # (L, 1, 3, d_model)
        cache.logits                    # equals model(torch.tensor([[5, 9, 5]])) up to rounding
    """
    model = check_model(model)
    ids = as_batch(model, ids)
    with torch.no_grad():
        return _forward(model, ids, head_out)


def _forward(model: TransformerLM, ids: torch.Tensor, keep_heads: bool) -> Cache:
    x = model.token_embeddings(ids)
    embed = x
    kept = {name: [] for name in ("resid_pre", "head_out", "attn_out", "resid_mid", "mlp_out", "resid_post",
                                  "pattern")}
    for block in model.layers:
        parts = attention(block, attention_input(block, x), keep_pattern=True, keep_heads=keep_heads)
        mid = after_attention(block, x, parts.out)
        mlp_out = mlp(block, mid)
        post = after_mlp(block, mid, mlp_out)
        for name, value in (("resid_pre", x), ("head_out", parts.head_out), ("attn_out", parts.out),
                            ("resid_mid", mid), ("mlp_out", mlp_out), ("resid_post", post),
                            ("pattern", parts.pattern)):
            kept[name].append(value)
        x = post
    stacked = {name: torch.stack(values) if values and values[0] is not None else None
               for name, values in kept.items()}
    return Cache(embed=embed, final_norm_scale=norm_scale(model.ln_final, x), logits=unembed(model, x), **stacked)

