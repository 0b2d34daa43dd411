"""The accounting report: every cost of :mod:`seqlab.accounting.costs` for one model in one
JSON-ready dict (:func:`account`), and that dict as a readable table (:func:`format_report`).

Worked example: ``account(PRESETS["gpt2-xl"])["parameters"] == 2_127_057_600`` and its
``forward_flops`` at full context is about 4.5133e12.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from typing import Any

from seqlab.accounting.costs import (
    ADAMW_FLOPS_PER_PARAMETER,
    BYTES_PER_FLOAT32,
    DEFAULT_MEMORY_GB,
    DEFAULT_MFU,
    DEFAULT_PEAK_FLOPS,
    DEFAULT_TRAIN_BATCH,
    DEFAULT_TRAIN_STEPS,
    FLOP_COMPONENTS,
    adamw_step_flops,
    as_model_config,
    config_dict,
    count_parameters,
    forward_flops,
    kv_cache_bytes,
    max_batch_size,
    memory_bytes,
    training_step_flops,
    training_time_seconds,
)
from seqlab.model.config import ModelConfig


@dataclass
class ReportOptions:
    context_length: int | None = None
    batch_size: int = 1
    memory_gb: float = DEFAULT_MEMORY_GB
    train_steps: int = DEFAULT_TRAIN_STEPS
    train_batch_size: int = DEFAULT_TRAIN_BATCH
    mfu: float = DEFAULT_MFU
    peak_flops: float = DEFAULT_PEAK_FLOPS


def account(config: ModelConfig | dict[str, Any], options: ReportOptions | None = None) -> dict[str, Any]:
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
        "kv_cache_bytes": kv_cache_bytes(s, n, o.batch_size),
        "training_time": {
            "steps": o.train_steps, "batch_size": o.train_batch_size, "mfu": o.mfu,
            "peak_flops": o.peak_flops, "seconds": seconds, "days": seconds / 86400,
        },
        "formula": FORMULA_TEXT,
    }


FORMULA_TEXT = (
    "FLOPs: 2mnp per (m,n)x(n,p) matmul; per layer 2x 2Bnd^2 (q, output) + 2x 2Bnd*d_kv (k, v) "
    "projections (d_kv = kv_heads*d_head), 2Bn^2d scores, "
    "2Bn^2d weighted values (full n x n), (3|2)x 2Bndf feed-forward; lm_head 2BndV. "
    "Training step = 3x forward; AdamW = 14 FLOPs/parameter. Memory (float32) = a*batch + b, "
    "b = 16 bytes/parameter (params, grads, m, v), a = 4 bytes x activations/sequence. "
    "KV cache = 2 L B n d_kv x 4 bytes."
)


def _si(value: float, unit: str = "") -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}".rstrip()


def _duration(seconds: float) -> str:
    """Seconds in the largest unit that keeps a readable number: "13.9 days", "2.3 h", "6.1 min", "40 s".

    >>> _duration(1.2e6), _duration(8280), _duration(366), _duration(40)
    ('13.9 days', '2.3 h', '6.1 min', '40 s')
    """
    for size, unit in ((86400, "days"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def format_report(report: dict[str, Any]) -> str:
    """A readable table of ``account(...)``."""
    c = report["config"]
    kv_heads = c.get("num_kv_heads") or c["num_heads"]
    heads = f"{c['num_heads']} heads" + (f" ({kv_heads} key/value heads)" if kv_heads != c["num_heads"] else "")
    lines = [
        f"model: vocab {c['vocab_size']}, context {c['context_length']}, d_model {c['d_model']}, "
        f"{c['num_layers']} layers, {heads}, d_ff {c['d_ff']}, {c['ffn']}, "
        f"norm {c['norm']} ({c['norm_position']}), {c['positional']}"
        + (", tied embeddings" if c.get("tie_embeddings") else ""),
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
        f"KV cache (float32, inference), batch {report['batch_size']} x {report['seq_len']} tokens: "
        f"{_si(report['kv_cache_bytes'], 'B')}",
        "",
        f"training time: {t['steps']:,} steps of batch {t['batch_size']} at MFU {t['mfu']:g} of "
        f"{_si(t['peak_flops'], 'FLOP/s')} = {_duration(t['seconds'])}",
        "",
        "formula: " + report["formula"],
    ]
    return "\n".join(lines)


def load_config_file(path: str) -> dict[str, Any]:
    """ModelConfig fields from a TOML or JSON file (a top-level ``model`` table is used if present;
    a run's ``config.json`` is read by the run format, whichever seqlab wrote it)."""
    from pathlib import Path

    from seqlab.runs.kinds import CONFIG_FILE, Kind, run_kind

    if Path(path).name == CONFIG_FILE and run_kind(Path(path).parent) is Kind.LM:
        from seqlab.runs.config import read_run_config

        model = read_run_config(Path(path).parent).model
        if model:
            return model
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the config file ({exc.strerror or exc})") from exc
    try:
        if path.endswith(".toml"):
            data = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: not valid {'TOML' if path.endswith('.toml') else 'JSON'}: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("model"), dict):
        data = data["model"]
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table/object of ModelConfig fields")
    return data
