"""How seqlab's TransformerLM and Hugging Face's ``LlamaForCausalLM`` lay out the same weights.

Names map one to one (``layers.L.attn.q_proj`` <-> ``model.layers.L.self_attn.q_proj``, ``ffn.w1``
/ ``w3`` / ``w2`` <-> ``mlp.gate_proj`` / ``up_proj`` / ``down_proj``, ``ln1`` / ``ln2`` <->
``input_layernorm`` / ``post_attention_layernorm``, ``ln_final`` <-> ``model.norm``; ``lm_head``
is absent when tied). Both store linear maps as ``(out_features, in_features)``: nothing is
transposed. RoPE rotates the same angles but different pairs: seqlab adjacent dimensions (0, 1),
(2, 3), ...; Llama's ``rotate_half`` (0, d/2), (1, d/2 + 1), .... Permuting the rows of q_proj
and k_proj makes the layouts agree (scores are dot products, unchanged by a shared reordering):
for d_head = 4 seqlab's rows [r0, r1, r2, r3] become Llama's [r0, r2, r1, r3].
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

_ATTENTION = (("q_proj", "self_attn.q_proj"), ("k_proj", "self_attn.k_proj"),
              ("v_proj", "self_attn.v_proj"), ("output_proj", "self_attn.o_proj"))
_FFN = (("w1", "mlp.gate_proj"), ("w3", "mlp.up_proj"), ("w2", "mlp.down_proj"))
_NORMS = (("ln1", "input_layernorm"), ("ln2", "post_attention_layernorm"))


def llama_names(num_layers: int, *, tied: bool) -> Iterator[tuple[str, str, str | None]]:
    """``(seqlab name, Llama name, RoPE heads or None)`` for every weight, in model order, one at a
    time (a reader that stops at the first missing one does work for the layers before it only).

    The third item says how q/k rows are permuted: "q" / "k" (by the query / key-value head count)
    or None (copied as they are). ``tied``: no ``lm_head.weight`` (it is the embedding).
    """
    yield "token_embeddings.weight", "model.embed_tokens.weight", None
    for layer in range(num_layers):
        ours, theirs = f"layers.{layer}.", f"model.layers.{layer}."
        for short, long in _ATTENTION:
            yield f"{ours}attn.{short}.weight", f"{theirs}{long}.weight", {"q_proj": "q", "k_proj": "k"}.get(short)
        for short, long in _FFN:
            yield f"{ours}ffn.{short}.weight", f"{theirs}{long}.weight", None
        for short, long in _NORMS:
            yield f"{ours}{short}.weight", f"{theirs}{long}.weight", None
    yield "ln_final.weight", "model.norm.weight", None
    if not tied:
        yield "lm_head.weight", "lm_head.weight", None


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
