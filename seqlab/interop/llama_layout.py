"""How seqlab's TransformerLM and Hugging Face's ``LlamaForCausalLM`` lay out the same weights.

Names (``L`` = layer index)::

    token_embeddings.weight          model.embed_tokens.weight
    layers.L.attn.q_proj.weight      model.layers.L.self_attn.q_proj.weight    (rows permuted, below)
    layers.L.attn.k_proj.weight      model.layers.L.self_attn.k_proj.weight    (rows permuted, below)
    layers.L.attn.v_proj.weight      model.layers.L.self_attn.v_proj.weight
    layers.L.attn.output_proj.weight model.layers.L.self_attn.o_proj.weight
    layers.L.ffn.w1.weight           model.layers.L.mlp.gate_proj.weight       (SwiGLU: silu(w1 x) * w3 x)
    layers.L.ffn.w3.weight           model.layers.L.mlp.up_proj.weight
    layers.L.ffn.w2.weight           model.layers.L.mlp.down_proj.weight
    layers.L.ln1.weight              model.layers.L.input_layernorm.weight
    layers.L.ln2.weight              model.layers.L.post_attention_layernorm.weight
    ln_final.weight                  model.norm.weight
    lm_head.weight                   lm_head.weight                            (absent when tied)

Both store a linear map as ``(out_features, in_features)``, so no weight is transposed.

RoPE: both rotate dimension pairs of each head by the same angles (pair k by position * theta^(-2k/d)),
but pick the pairs differently. seqlab rotates adjacent dimensions (0, 1), (2, 3), ...; Llama's
``rotate_half`` rotates (0, d/2), (1, d/2 + 1), .... Attention scores are dot products of rotated
queries and keys, so reordering the dimensions of every query and key head the same way changes
nothing; reordering the *rows* of q_proj and k_proj (their output dimensions) makes the two
layouts agree. For d_head = 4, seqlab's rows [r0, r1, r2, r3] (pairs (r0, r1) and (r2, r3))
become Llama's [r0, r2, r1, r3] (pairs (r0, r1) at dims (0, 2), (r2, r3) at dims (1, 3)).
"""

from __future__ import annotations

import torch

_ATTENTION = (("q_proj", "self_attn.q_proj"), ("k_proj", "self_attn.k_proj"),
              ("v_proj", "self_attn.v_proj"), ("output_proj", "self_attn.o_proj"))
_FFN = (("w1", "mlp.gate_proj"), ("w3", "mlp.up_proj"), ("w2", "mlp.down_proj"))
_NORMS = (("ln1", "input_layernorm"), ("ln2", "post_attention_layernorm"))


def llama_names(num_layers: int, *, tied: bool) -> list[tuple[str, str, str | None]]:
    """``[(seqlab name, Llama name, RoPE heads or None), ...]`` for every weight, in model order.

    The third item says how q/k rows are permuted: "q" / "k" (by the query / key-value head count)
    or None (copied as they are). ``tied``: no ``lm_head.weight`` (it is the embedding).
    """
    names: list[tuple[str, str, str | None]] = [("token_embeddings.weight", "model.embed_tokens.weight", None)]
    for layer in range(num_layers):
        ours, theirs = f"layers.{layer}.", f"model.layers.{layer}."
        for short, long in _ATTENTION:
            rope = {"q_proj": "q", "k_proj": "k"}.get(short)
            names.append((f"{ours}attn.{short}.weight", f"{theirs}{long}.weight", rope))
        for short, long in _FFN:
            names.append((f"{ours}ffn.{short}.weight", f"{theirs}{long}.weight", None))
        for short, long in _NORMS:
            names.append((f"{ours}{short}.weight", f"{theirs}{long}.weight", None))
    names.append(("ln_final.weight", "model.norm.weight", None))
    if not tied:
        names.append(("lm_head.weight", "lm_head.weight", None))
    return names


def pairs_to_halves_order(d_head: int) -> list[int]:
    """The row order taking one head's rows from seqlab's adjacent pairs to Llama's halves:
    Llama row i is seqlab row ``order[i]``. ``pairs_to_halves_order(4)`` = [0, 2, 1, 3]."""
    if d_head % 2:
        raise ValueError(f"RoPE needs an even head dimension, got {d_head}")
    return [*range(0, d_head, 2), *range(1, d_head, 2)]


def pairs_to_halves(weight: torch.Tensor, num_heads: int) -> torch.Tensor:
    """q_proj / k_proj weight ``(num_heads * d_head, d_in)`` from seqlab's RoPE layout to Llama's.

    Per head: rows 0, 2, 4, ... (each pair's first), then rows 1, 3, 5, ... (each pair's second).
    A new tensor; ``weight`` is not changed.
    """
    rows, columns = weight.shape
    d_head = _head_dim(rows, num_heads)
    return weight.reshape(num_heads, d_head // 2, 2, columns).transpose(1, 2).reshape(rows, columns)


def halves_to_pairs(weight: torch.Tensor, num_heads: int) -> torch.Tensor:
    """The inverse of :func:`pairs_to_halves`: Llama's RoPE layout to seqlab's (a new tensor)."""
    rows, columns = weight.shape
    d_head = _head_dim(rows, num_heads)
    return weight.reshape(num_heads, 2, d_head // 2, columns).transpose(1, 2).reshape(rows, columns)


def _head_dim(rows: int, num_heads: int) -> int:
    if num_heads < 1 or rows % num_heads or (rows // num_heads) % 2:
        raise ValueError(f"{rows} rows do not split into {num_heads} heads of an even size")
    return rows // num_heads
