"""Whether an imported model can run here, decided from its config.json before anything is allocated,
and whether its weights are numbers.

A config.json is someone else's file: ``max_position_embeddings`` of 10^12 makes every attention
layer's RoPE table and the KV cache terabytes, and ``num_hidden_layers`` of 10^6 makes even the
meta-device model take minutes to build. :func:`check_fits_in_memory` adds up what running the model
needs (float32 parameters, the RoPE tables, a full KV cache for one sequence) and compares it with
the memory available now. Example: 10^12 positions of a 64-wide model with 2 layers need
2·10^12·64·4 bytes of RoPE tables alone (512 TB): refused, naming the field to lower.
"""

from __future__ import annotations

import os

import torch

from seqlab.accounting import count_parameters, kv_cache_bytes
from seqlab.model import ModelConfig

BYTES_PER_FLOAT32 = 4


class DoesNotFitError(ValueError):
    """The model a config.json describes needs more memory than this machine has available."""


def available_memory_bytes() -> int | None:
    """Memory available to a new allocation now (psutil where installed, else the OS), or None."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def running_bytes(config: ModelConfig) -> dict[str, int]:
    """What running ``config`` in float32 needs, by part: parameters, RoPE tables (a cos and a sin
    table of context × d_head/2 per layer) and the KV cache of one full-length sequence."""
    d_head = config.d_model // config.num_heads
    return {
        "parameters": count_parameters(config)["total"] * BYTES_PER_FLOAT32,
        "RoPE tables": config.num_layers * config.context_length * d_head * BYTES_PER_FLOAT32,
        "KV cache": kv_cache_bytes(config, config.context_length, 1),
    }


def _size(num_bytes: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if num_bytes < 1000 or unit == "PB":
            return f"{num_bytes:,.0f} {unit}" if unit == "bytes" else f"{num_bytes:,.1f} {unit}"
        num_bytes /= 1000
    raise AssertionError("unreachable")


def check_fits_in_memory(config: ModelConfig, source: str, *, available: int | None = None) -> None:
    """Raise :class:`DoesNotFitError` naming ``source``, the total, its largest part and the fields
    behind it when running ``config`` needs more than ``available`` bytes (default: available now)."""
    available = available_memory_bytes() if available is None else available
    if available is None:
        return
    parts = running_bytes(config)
    total = sum(parts.values())
    if total <= available:
        return
    largest = max(parts, key=parts.get)
    fields = {"parameters": "num_hidden_layers, hidden_size, intermediate_size, vocab_size",
              "RoPE tables": "max_position_embeddings, num_hidden_layers",
              "KV cache": "max_position_embeddings, num_hidden_layers"}[largest]
    raise DoesNotFitError(
        f"{source}: this model needs about {_size(total)} of memory to run ({largest} {_size(parts[largest])}; "
        f"max_position_embeddings={config.context_length:,}, num_hidden_layers={config.num_layers:,}), but "
        f"{_size(available)} is available; check {fields}: a config.json with such values cannot run here")


def check_finite(tensor: torch.Tensor, name: str, source: str) -> None:
    """Raise ValueError naming the tensor and file when ``tensor`` holds NaN or infinite values."""
    bad = ~torch.isfinite(tensor)
    if bool(bad.any()):
        count, nans = int(bad.sum()), int(torch.isnan(tensor).sum())
        raise ValueError(f"{source}: tensor {name} holds {count:,} non-finite value{'s' if count > 1 else ''} "
                         f"({nans:,} NaN, {count - nans:,} infinite) of {tensor.numel():,}; the weights are "
                         "damaged (a diverged training run, or a bad conversion): import a good copy")
