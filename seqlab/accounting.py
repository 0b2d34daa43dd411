"""What does a Transformer LM cost? Parameters, FLOPs and memory from its config.

Everything here is derived from the model configuration (the fields of
``seqlab.model.ModelConfig``: vocab_size, context_length, d_model, num_layers,
num_heads, d_ff, norm, norm_position, positional, ffn); nothing is tabulated.
A ``ModelConfig`` or a plain dict of its fields works; this module imports no torch at
import time.

Conventions (those of the CS336 assignment):

- A matrix multiply of an (m, n) by an (n, p) matrix costs ``2·m·n·p`` FLOPs
  (one multiply and one add per term). Only matrix multiplies are counted in the
  forward pass; norms, softmax and activations are ignored.
- Attention counts the full n×n products: the scores ``Q Kᵀ`` cost
  ``2·n·n·d_model`` per layer (all heads together) and the weighted values
  ``A V`` the same, even though the causal mask zeroes half of them.
- Backward costs twice the forward, so a training step is ``3 ×`` forward.
- float32 everywhere: 4 bytes per parameter, gradient, optimizer value and
  activation. AdamW keeps two values (m, v) per parameter.

Shapes below: n = sequence length, d = d_model, f = d_ff, V = vocab_size,
L = num_layers, h = num_heads, B = batch size.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, fields
from typing import Any

BYTES_PER_FLOAT32 = 4
# AdamW per parameter: m = b1 m + (1-b1) g (3), v = b2 v + (1-b2) g² (4),
# p -= lr_t m / (sqrt(v) + eps) (5), p -= lr wd p (2). Bias corrections are scalars per step.
ADAMW_FLOPS_PER_PARAMETER = 14
DEFAULT_MEMORY_GB = 80.0
# The assignment's question: an A100 at 19.5 TFLOP/s float32, 50% MFU, 400K steps of batch 1024.
DEFAULT_PEAK_FLOPS = 19.5e12
DEFAULT_MFU = 0.5
DEFAULT_TRAIN_STEPS = 400_000
DEFAULT_TRAIN_BATCH = 1024


def as_model_config(config: Any) -> Any:
    """A ``ModelConfig`` (or any object with its fields and ``d_ff`` resolved) from ``config``.

    A mapping of ModelConfig fields is validated by ``ModelConfig`` itself, which also resolves
    ``d_ff=None`` (that import happens here, at call time, not when this module is imported).
    """
    if isinstance(config, dict):
        from seqlab.model.config import ModelConfig

        names = [f.name for f in fields(ModelConfig)]
        unknown = sorted(set(config) - set(names))
        if unknown:
            raise ValueError(f"unknown model config field(s) {unknown}; expected some of {names}")
        missing = [n for n in names[:5] if n not in config]
        if missing:
            raise ValueError(f"model config is missing required field(s) {missing}")
        return ModelConfig(**config)
    if getattr(config, "d_ff", None) is None:
        raise ValueError("config.d_ff must be resolved (use ModelConfig, which fills it in)")
    return config


def config_dict(config: Any) -> dict[str, Any]:
    """The ModelConfig fields of ``config`` as a plain dict."""
    names = ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff",
             "rope_theta", "norm", "norm_position", "positional", "ffn")
    return {n: getattr(config, n) for n in names}


PRESETS: dict[str, dict[str, Any]] = {
    # GPT-2 shapes as in the assignment: d_ff = 4·d_model, SwiGLU, untied head.
    "gpt2-small": dict(vocab_size=50257, context_length=1024, num_layers=12, d_model=768,
                       num_heads=12, d_ff=3072),
    "gpt2-medium": dict(vocab_size=50257, context_length=1024, num_layers=24, d_model=1024,
                        num_heads=16, d_ff=4096),
    "gpt2-large": dict(vocab_size=50257, context_length=1024, num_layers=36, d_model=1280,
                       num_heads=20, d_ff=5120),
    "gpt2-xl": dict(vocab_size=50257, context_length=1024, num_layers=48, d_model=1600,
                    num_heads=25, d_ff=6400),
    "tinystories": dict(vocab_size=10000, context_length=256, num_layers=4, d_model=512,
                        num_heads=16, d_ff=1344, rope_theta=10000.0),
}


# ---------------------------------------------------------------- parameters

def count_parameters(config: Any) -> dict[str, int]:
    """Trainable parameters by component and their ``total``.

    token_embeddings V·d; per layer attention 4·d² (q, k, v, output projections, no bias),
    ffn 3·d·f (SwiGLU w1, w2, w3) or 2·d·f (SiLU w1, w2), norms 2·d (ln1, ln2 gains);
    ln_final d (pre-norm only: a post-norm stack ends normalized); lm_head d·V (untied).
    With ``norm="none"`` there are no gains. RoPE has no parameters.
    """
    s = as_model_config(config)
    d, f, L = s.d_model, s.d_ff, s.num_layers
    has_norm = s.norm != "none"
    final_norm = has_norm and s.norm_position == "pre"
    counts = {
        "token_embeddings": s.vocab_size * d,
        "attention": L * 4 * d * d,
        "ffn": L * (3 if s.ffn == "swiglu" else 2) * d * f,
        "norms": (L * 2 * d if has_norm else 0) + (d if final_norm else 0),
        "lm_head": d * s.vocab_size,
    }
    counts["total"] = sum(counts.values())
    return counts


# ---------------------------------------------------------------- FLOPs

FLOP_COMPONENTS = ("q_proj", "k_proj", "v_proj", "output_proj", "attention_scores",
                   "attention_values", "ffn", "lm_head")


def forward_flops(config: Any, seq_len: int | None = None, batch_size: int = 1) -> dict[str, int]:
    """Matrix-multiply FLOPs of one forward pass by component, plus ``total``.

    For B sequences of n tokens, summed over L layers:
    q/k/v/output projections 2·B·n·d·d each; attention scores 2·B·n·n·d (full n×n);
    attention-weighted values 2·B·n·n·d; ffn (3 or 2)·2·B·n·d·f; lm_head 2·B·n·d·V.
    """
    s = as_model_config(config)
    n = s.context_length if seq_len is None else int(seq_len)
    if n <= 0 or batch_size <= 0:
        raise ValueError(f"seq_len and batch_size must be positive, got {n} and {batch_size}")
    B, d, f, L = batch_size, s.d_model, s.d_ff, s.num_layers
    projection = L * 2 * B * n * d * d
    ffn_matmuls = 3 if s.ffn == "swiglu" else 2
    flops = {
        "q_proj": projection,
        "k_proj": projection,
        "v_proj": projection,
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

    Per layer: ln1 output n·d, Q, K, V 3·n·d, scores h·n², softmax h·n², weighted values n·d,
    output projection n·d, ln2 output n·d, ffn: w1 n·f, SiLU n·f, (SwiGLU: w3 n·f, product n·f),
    w2 n·d. Then ln_final n·d (pre-norm only), logits n·V and the cross-entropy's softmax n·V.
    Norms are absent with ``norm="none"``.
    """
    s = as_model_config(config)
    n = s.context_length if seq_len is None else int(seq_len)
    d, f, h, L, V = s.d_model, s.d_ff, s.num_heads, s.num_layers, s.vocab_size
    norm = 1 if s.norm != "none" else 0
    final_norm = norm if s.norm_position == "pre" else 0
    ffn_hidden = (4 if s.ffn == "swiglu" else 2) * n * f + n * d
    elements = {
        "norms": (L * 2 * norm + final_norm) * n * d,
        "qkv": L * 3 * n * d,
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


# ---------------------------------------------------------------- report

@dataclass
class ReportOptions:
    context_length: int | None = None
    batch_size: int = 1
    memory_gb: float = DEFAULT_MEMORY_GB
    train_steps: int = DEFAULT_TRAIN_STEPS
    train_batch_size: int = DEFAULT_TRAIN_BATCH
    mfu: float = DEFAULT_MFU
    peak_flops: float = DEFAULT_PEAK_FLOPS


def account(config: Any, options: ReportOptions | None = None) -> dict[str, Any]:
    """Everything above in one JSON-ready dict (``parameters`` and ``forward_flops`` at the top)."""
    o = options or ReportOptions()
    s = as_model_config(config)
    n = s.context_length if o.context_length is None else o.context_length
    params = count_parameters(s)
    flops = forward_flops(s, n, o.batch_size)
    memory = memory_bytes(s, n, o.batch_size)
    seconds = training_time_seconds(s, o.train_steps, o.train_batch_size, o.mfu, o.peak_flops, n)
    return {
        "config": config_dict(s),
        "seq_len": n,
        "batch_size": o.batch_size,
        "parameters": params["total"],
        "parameters_by_component": params,
        "parameter_bytes_float32": params["total"] * BYTES_PER_FLOAT32,
        "forward_flops": flops["total"],
        "forward_flops_by_component": flops,
        "forward_flops_proportions": {k: flops[k] / flops["total"] for k in FLOP_COMPONENTS},
        "training_step_flops": training_step_flops(s, n, o.batch_size),
        "adamw_step_flops": adamw_step_flops(s),
        "memory_bytes": memory,
        "memory_gb": o.memory_gb,
        "max_batch_size": max_batch_size(s, o.memory_gb, n),
        "training_time": {
            "steps": o.train_steps, "batch_size": o.train_batch_size, "mfu": o.mfu,
            "peak_flops": o.peak_flops, "seconds": seconds, "days": seconds / 86400,
        },
        "formula": FORMULA_TEXT,
    }


FORMULA_TEXT = (
    "FLOPs: 2mnp per (m,n)x(n,p) matmul; per layer 4x 2Bnd^2 projections, 2Bn^2d scores, "
    "2Bn^2d weighted values (full n x n), (3|2)x 2Bndf feed-forward; lm_head 2BndV. "
    "Training step = 3x forward; AdamW = 14 FLOPs/parameter. Memory (float32) = a*batch + b, "
    "b = 16 bytes/parameter (params, grads, m, v), a = 4 bytes x activations/sequence."
)


def _si(value: float, unit: str = "") -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}".rstrip()


def format_report(report: dict[str, Any]) -> str:
    """A readable table of ``account(...)``."""
    c = report["config"]
    lines = [
        f"model: vocab {c['vocab_size']}, context {c['context_length']}, d_model {c['d_model']}, "
        f"{c['num_layers']} layers, {c['num_heads']} heads, d_ff {c['d_ff']}, {c['ffn']}, "
        f"norm {c['norm']} ({c['norm_position']}), {c['positional']}",
        f"parameters: {report['parameters']:,} ({_si(report['parameter_bytes_float32'], 'B')} in float32)",
    ]
    for name, value in report["parameters_by_component"].items():
        if name != "total":
            lines.append(f"  {name:<18} {value:>16,}")
    lines += ["", f"forward FLOPs, batch {report['batch_size']} x {report['seq_len']} tokens:",
              f"  {'component':<18} {'FLOPs':>14} {'share':>7}"]
    flops = report["forward_flops_by_component"]
    for name in FLOP_COMPONENTS:
        share = report["forward_flops_proportions"][name]
        lines.append(f"  {name:<18} {flops[name]:>14.4e} {share:>7.1%}")
    lines.append(f"  {'total':<18} {report['forward_flops']:>14.4e}")
    m = report["memory_bytes"]
    t = report["training_time"]
    lines += [
        "",
        f"training step FLOPs (3x forward): {report['training_step_flops']:.4e}",
        f"AdamW step FLOPs ({ADAMW_FLOPS_PER_PARAMETER}/parameter): {report['adamw_step_flops']:.4e}",
        "",
        f"memory (float32), batch {report['batch_size']}:",
        f"  parameters {_si(m['parameters'], 'B')}, gradients {_si(m['gradients'], 'B')}, "
        f"optimizer state {_si(m['optimizer_state'], 'B')}, activations {_si(m['activations'], 'B')}",
        f"  total = a*batch + b = {m['per_sequence_a']:,}*batch + {m['fixed_b']:,} bytes"
        f" = {_si(m['total'], 'B')}",
        f"  largest batch in {report['memory_gb']:g} GB: {report['max_batch_size']}",
        "",
        f"training time: {t['steps']:,} steps of batch {t['batch_size']} at MFU {t['mfu']:g} of "
        f"{_si(t['peak_flops'], 'FLOP/s')} = {t['days']:.1f} days",
        "",
        "formula: " + report["formula"],
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- config files and CLI

def load_config_file(path: str) -> dict[str, Any]:
    """ModelConfig fields from a TOML or JSON file (a top-level ``model`` table is used if present,
    so a run's ``config.json`` works)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the config file ({exc.strerror or exc})") from exc
    try:
        if path.endswith(".toml"):
            import tomllib
            data = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid {'TOML' if path.endswith('.toml') else 'JSON'}: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("model"), dict):
        data = data["model"]
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table/object of ModelConfig fields")
    return data


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "accounting", help="parameters, FLOPs, memory and training time of a Transformer LM",
        description="Parameter count, forward FLOPs by component (2mnp rule, full n x n attention), "
                    "training/AdamW FLOPs, float32 memory and training time, from the model config.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", choices=sorted(PRESETS))
    src.add_argument("--config", metavar="FILE", help="TOML or JSON file with ModelConfig fields")
    p.add_argument("--context-length", type=int, help="sequence length (default: the model's)")
    p.add_argument("--batch-size", type=int, default=1, help="batch for FLOPs and memory (default 1)")
    p.add_argument("--memory-gb", type=float, default=DEFAULT_MEMORY_GB,
                   help="accelerator memory for the largest batch (default 80 GB = 80e9 bytes)")
    p.add_argument("--steps", type=int, default=DEFAULT_TRAIN_STEPS, help="training steps (400000)")
    p.add_argument("--train-batch-size", type=int, default=DEFAULT_TRAIN_BATCH,
                   help="batch for the training-time estimate (1024)")
    p.add_argument("--mfu", type=float, default=DEFAULT_MFU, help="model FLOPs utilization (0.5)")
    p.add_argument("--peak-flops", type=float, default=DEFAULT_PEAK_FLOPS,
                   help="peak FLOP/s (19.5e12, A100 float32)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        fields_ = dict(PRESETS[args.preset]) if args.preset else load_config_file(args.config)
        shape = as_model_config(fields_)
        positive = {"--batch-size": args.batch_size, "--context-length": args.context_length,
                    "--steps": args.steps, "--train-batch-size": args.train_batch_size,
                    "--memory-gb": args.memory_gb}
        wrong = [f"{flag} {value:g}" for flag, value in positive.items() if value is not None and not value > 0]
        if wrong:
            raise ValueError(f"these must be positive: {', '.join(wrong)}")
        report = account(shape, ReportOptions(
            context_length=args.context_length, batch_size=args.batch_size,
            memory_gb=args.memory_gb, train_steps=args.steps,
            train_batch_size=args.train_batch_size, mfu=args.mfu, peak_flops=args.peak_flops))
    except (ValueError, TypeError) as exc:
        where = f"{args.config}: " if args.config and not str(exc).startswith(str(args.config)) else ""
        print(f"seqlab accounting: error: {where}{exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report))
    else:
        print(format_report(report))
    return 0
