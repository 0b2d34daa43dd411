"""What does a Transformer LM cost? Parameters, FLOPs and memory, derived from its config.

Takes a ``ModelConfig`` or a dict of its fields; nothing is tabulated. Conventions (CS336's): an
(m, n) @ (n, p) matmul costs ``2·m·n·p`` FLOPs and only matmuls are counted; attention counts the
full n×n products (``Q Kᵀ`` and ``A V``, ``2·n·n·d_model`` each per layer) despite the causal
mask; backward costs twice the forward (a training step is ``3 ×`` forward); float32 everywhere
(4 bytes a value), AdamW keeping m and v per parameter.

Shapes: n = sequence length, d = d_model, f = d_ff, V = vocab_size, L = num_layers, h = num_heads,
B = batch size, d_kv = num_kv_heads·d_head (= d without grouped-query attention).
"""

from __future__ import annotations

from dataclasses import asdict, fields, is_dataclass
from typing import Any

from seqlab.accounting.presets import (
    DEFAULT_MEMORY_GB,
    DEFAULT_MFU,
    DEFAULT_PEAK_FLOPS,
    DEFAULT_TRAIN_BATCH,
    DEFAULT_TRAIN_STEPS,
)
from seqlab.model.config import ModelConfig

BYTES_PER_FLOAT32 = 4
# AdamW per parameter: m = b1 m + (1-b1) g (3), v = b2 v + (1-b2) g² (4),
# p -= lr_t m / (sqrt(v) + eps) (5), p -= lr wd p (2). Bias corrections are scalars per step.
ADAMW_FLOPS_PER_PARAMETER = 14


def as_model_config(config: ModelConfig | dict[str, Any] | Any) -> ModelConfig | Any:
    """A ``ModelConfig`` (or any object with its fields and ``d_ff`` resolved) from ``config``.

    A mapping of ModelConfig fields is validated by ``ModelConfig`` itself, which also resolves
    ``d_ff=None``.
    """
    if isinstance(config, dict):
        return ModelConfig.from_dict(config)
    if getattr(config, "d_ff", None) is None:
        raise ValueError("config.d_ff must be resolved (use ModelConfig, which fills it in)")
    return config


def kv_width(config: Any) -> int:
    """d_kv = num_kv_heads·d_head: the width of k_proj and v_proj (d_model for multi-head attention)."""
    s = as_model_config(config)
    kv_heads = getattr(s, "num_kv_heads", None) or s.num_heads
    return kv_heads * (s.d_model // s.num_heads)


def config_dict(config: Any) -> dict[str, Any]:
    """The ModelConfig fields of ``config`` as a plain dict."""
    config = as_model_config(config)
    if is_dataclass(config):
        return asdict(config)
    return {f.name: getattr(config, f.name) for f in fields(ModelConfig)}


# ---------------------------------------------------------------- parameters

def count_parameters(config: Any) -> dict[str, int]:
    """Trainable parameters by component and their ``total``.

    token_embeddings V·d; per layer attention 2·d² + 2·d·d_kv (q and output projections d x d,
    k and v d_kv x d, no bias; 4·d² without grouped-query attention), ffn 3·d·f (SwiGLU w1, w2,
    w3) or 2·d·f (SiLU w1, w2), norms 2·d (ln1, ln2 gains); ln_final d (pre-norm only: a
    post-norm stack ends normalized); lm_head d·V, or 0 with ``tie_embeddings`` (the head is the
    token embedding matrix, counted once). With ``norm="none"`` there are no gains. RoPE has no
    parameters.

    Example: 8 query heads of 64 dims with 2 key/value heads (d = 512, d_kv = 128) have
    2·512² + 2·512·128 = 655,360 attention parameters per layer instead of 4·512² = 1,048,576.
    """
    s = as_model_config(config)
    d, f, L, d_kv = s.d_model, s.d_ff, s.num_layers, kv_width(config)
    has_norm = s.norm != "none"
    final_norm = has_norm and s.norm_position == "pre"
    counts = {
        "token_embeddings": s.vocab_size * d,
        "attention": L * (2 * d * d + 2 * d * d_kv),
        "ffn": L * (3 if s.ffn == "swiglu" else 2) * d * f,
        "norms": (L * 2 * d if has_norm else 0) + (d if final_norm else 0),
        "lm_head": 0 if getattr(s, "tie_embeddings", False) else d * s.vocab_size,
    }
    counts["total"] = sum(counts.values())
    return counts


# ---------------------------------------------------------------- FLOPs

FLOP_COMPONENTS = ("q_proj", "k_proj", "v_proj", "output_proj", "attention_scores",
                   "attention_values", "ffn", "lm_head")


def forward_flops(config: Any, seq_len: int | None = None, batch_size: int = 1) -> dict[str, int]:
    """Matrix-multiply FLOPs of one forward pass by component, plus ``total``.

    For B sequences of n tokens, summed over L layers:
    q and output projections 2·B·n·d·d each, k and v projections 2·B·n·d·d_kv each; attention
    scores 2·B·n·n·d (full n×n; every query head still scores every key, whichever key/value
    head it shares); attention-weighted values 2·B·n·n·d; ffn (3 or 2)·2·B·n·d·f; lm_head
    2·B·n·d·V (also when tied: the matrix is shared, the multiply is not).
    """
    s = as_model_config(config)
    n = s.context_length if seq_len is None else int(seq_len)
    if n <= 0 or batch_size <= 0:
        raise ValueError(f"seq_len and batch_size must be positive, got {n} and {batch_size}")
    B, d, f, L, d_kv = batch_size, s.d_model, s.d_ff, s.num_layers, kv_width(s)
    projection = L * 2 * B * n * d * d
    kv_projection = L * 2 * B * n * d * d_kv
    ffn_matmuls = 3 if s.ffn == "swiglu" else 2
    flops = {
        "q_proj": projection,
        "k_proj": kv_projection,
        "v_proj": kv_projection,
        "output_proj": projection,
        "attention_scores": L * 2 * B * n * n * d,
        "attention_values": L * 2 * B * n * n * d,
        "ffn": L * ffn_matmuls * 2 * B * n * d * f,
        "lm_head": 2 * B * n * d * s.vocab_size,
    }
    flops["total"] = sum(flops.values())
    return flops


def training_step_flops(config: Any, seq_len: int | None = None, batch_size: int = 1) -> int:
    """Forward + backward FLOPs of one step: backward = 2x forward, so 3x forward."""
    return 3 * forward_flops(config, seq_len, batch_size)["total"]


def adamw_step_flops(config: Any) -> int:
    """Element-wise FLOPs of one AdamW update: ADAMW_FLOPS_PER_PARAMETER per parameter."""
    return ADAMW_FLOPS_PER_PARAMETER * count_parameters(config)["total"]


# ---------------------------------------------------------------- memory

def activation_elements(config: Any, seq_len: int | None = None) -> dict[str, int]:
    """Activations kept for the backward pass, in elements per sequence, by component.

    Per layer: ln1 output n·d, Q, K, V n·d + 2·n·d_kv, scores h·n², softmax h·n², weighted values n·d,
    output projection n·d, ln2 output n·d, ffn: w1 n·f, SiLU n·f, (SwiGLU: w3 n·f, product n·f),
    w2 n·d. Then ln_final n·d (pre-norm only), logits n·V and the cross-entropy's softmax n·V.
    Norms are absent with ``norm="none"``.
    """
    s = as_model_config(config)
    n = s.context_length if seq_len is None else int(seq_len)
    d, f, h, L, V = s.d_model, s.d_ff, s.num_heads, s.num_layers, s.vocab_size
    d_kv = kv_width(s)
    norm = 1 if s.norm != "none" else 0
    final_norm = norm if s.norm_position == "pre" else 0
    ffn_hidden = (4 if s.ffn == "swiglu" else 2) * n * f + n * d
    elements = {
        "norms": (L * 2 * norm + final_norm) * n * d,
        "qkv": L * (n * d + 2 * n * d_kv),
        "attention_scores_softmax": L * 2 * h * n * n,
        "attention_output": L * 2 * n * d,
        "ffn": L * ffn_hidden,
        "logits_cross_entropy": 2 * n * V,
    }
    elements["total"] = sum(elements.values())
    return elements


def memory_bytes(config: Any, seq_len: int | None = None, batch_size: int = 1) -> dict[str, int]:
    """float32 training memory: parameters, gradients, AdamW state (m, v) and activations.

    Total = a·batch_size + b with ``a`` = activation bytes per sequence and
    ``b`` = (1 + 1 + 2)·4·parameters.
    """
    params = count_parameters(config)["total"]
    per_sequence = activation_elements(config, seq_len)["total"] * BYTES_PER_FLOAT32
    memory = {
        "parameters": params * BYTES_PER_FLOAT32,
        "gradients": params * BYTES_PER_FLOAT32,
        "optimizer_state": 2 * params * BYTES_PER_FLOAT32,
        "activations": per_sequence * batch_size,
        "per_sequence_a": per_sequence,
        "fixed_b": 4 * params * BYTES_PER_FLOAT32,
    }
    memory["total"] = memory["fixed_b"] + memory["activations"]
    return memory


def kv_cache_bytes(config: Any, seq_len: int | None = None, batch_size: int = 1,
                   bytes_per_value: int = BYTES_PER_FLOAT32) -> int:
    """Memory of a full KV cache (seqlab.model.KVCache) for B sequences of n tokens: keys and values
    of every layer, 2·L·B·n·d_kv values (float32 by default; 2 bytes for bf16/fp16).

    Example: the tinystories preset (4 layers, d = 512, 16 heads, n = 256) caches 2·4·256·512 float32
    = 4 MiB per sequence; with 4 key/value heads (d_kv = 128) a quarter of that, 1 MiB.
    """
    s = as_model_config(config)
    n = s.context_length if seq_len is None else int(seq_len)
    if n <= 0 or batch_size <= 0 or bytes_per_value <= 0:
        raise ValueError(f"seq_len, batch_size and bytes_per_value must be positive, got {n}, {batch_size} "
                         f"and {bytes_per_value}")
    return 2 * s.num_layers * batch_size * n * kv_width(s) * bytes_per_value


def max_batch_size(config: Any, memory_gb: float = DEFAULT_MEMORY_GB,
                   seq_len: int | None = None) -> int:
    """Largest batch with a·batch + b <= memory_gb·10⁹ bytes (0 if even the state does not fit)."""
    m = memory_bytes(config, seq_len, 1)
    free = memory_gb * 1e9 - m["fixed_b"]
    return max(0, int(free // m["per_sequence_a"]))


def training_time_seconds(config: Any, steps: int = DEFAULT_TRAIN_STEPS,
                          batch_size: int = DEFAULT_TRAIN_BATCH, mfu: float = DEFAULT_MFU,
                          peak_flops: float = DEFAULT_PEAK_FLOPS,
                          seq_len: int | None = None) -> float:
    """Seconds for ``steps`` steps of (3x forward at batch_size + one AdamW update) at mfu·peak."""
    if not 0 < mfu <= 1 or peak_flops <= 0:
        raise ValueError(f"need 0 < mfu <= 1 and peak_flops > 0, got {mfu} and {peak_flops}")
    per_step = training_step_flops(config, seq_len, batch_size) + adamw_step_flops(config)
    return steps * per_step / (mfu * peak_flops)
