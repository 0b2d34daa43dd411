"""Where and how a model runs: device, precision, autocast, torch.compile and GPU peak FLOP/s.

Used alike by training (``seqlab train``) and inference (``seqlab generate``, ``seqlab eval``), so
"auto" means the same device everywhere.

Worked example::

    device = resolve_device("auto")               # cuda, else mps, else cpu
    precision = resolve_precision("auto", device)  # "bf16" on a recent GPU, "fp32" on CPU
    with autocast_context(precision, device):
        logits = model(ids)                         # matmuls in bf16, parameters stay float32
    peak_flops(device, precision)                   # 989e12 on an H100 SXM, None on CPU
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys

import torch

# Dense (no sparsity) bf16 tensor-core peaks in FLOP/s from the vendors' data sheets, for MFU.
# A key matches torch.cuda.get_device_name() when its words appear there as whole words, in order
# ("NVIDIA H100 PCIe" -> "H100 PCIe"); keys with more words are tried first, and whole words keep
# "L4" from matching "NVIDIA L40" and "H200" from matching "NVIDIA GH200 480GB".
PEAK_BF16_FLOPS: dict[str, float] = {
    "H200": 989e12, "H100 PCIe": 756e12, "H100": 989e12, "GH200": 989e12,
    "A100": 312e12, "L40S": 362e12, "L40": 181e12, "L4": 121e12, "A10G": 70e12, "A10": 125e12,
    "RTX 4090": 165e12, "RTX 3090": 71e12, "V100": 125e12, "T4": 65e12,
}


def gpu_peak_bf16_flops(device_name: str) -> float | None:
    """Dense bf16 peak FLOP/s of the GPU called ``device_name`` (None when not in the table).

    >>> gpu_peak_bf16_flops("NVIDIA H100 PCIe"), gpu_peak_bf16_flops("NVIDIA L40")
    (756000000000000.0, 181000000000000.0)
    """
    words = re.split(r"[\s\-_]+", device_name.upper())
    for key in sorted(PEAK_BF16_FLOPS, key=lambda k: -len(k.split())):
        want = key.upper().split()
        if any(words[i:i + len(want)] == want for i in range(len(words) - len(want) + 1)):
            return PEAK_BF16_FLOPS[key]
    return None


def resolve_device(name: str) -> torch.device:
    """"auto" picks cuda, then mps, then cpu; an unavailable explicit device is a clear error."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} was asked for but CUDA is not available")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise RuntimeError(f"device {name!r} was asked for but MPS is not available")
    return device


def resolve_precision(precision: str, device: torch.device) -> str:
    """"auto" is bf16 (fp16 without bf16 support) on CUDA and fp32 elsewhere; fp16 needs CUDA."""
    if precision == "auto":
        if device.type != "cuda":
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"  # fp16 gets a gradient scaler
    if precision == "fp16" and device.type != "cuda":
        raise ValueError(f"precision fp16 needs a CUDA device (got {device}); use bf16 or fp32")
    return precision


def autocast_context(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    """Mixed-precision autocast for bf16/fp16; parameters and optimizer state stay float32."""
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def compile_unsupported_reason(device: torch.device) -> str | None:
    """Why torch.compile cannot be used here, or None when it can."""
    if sys.platform == "win32":
        return "torch.compile is not supported on Windows"
    if device.type == "mps":
        return "torch.compile's MPS backend is experimental"
    if device.type == "cpu" and not (os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")):
        return "torch.compile on CPU needs a C++ compiler (g++/c++) and none was found"
    try:
        import torch._dynamo

        if not torch._dynamo.is_dynamo_supported():
            return f"torch.compile does not support Python {sys.version.split()[0]} with torch {torch.__version__}"
    except Exception as error:  # noqa: BLE001 - any import problem means "unsupported"
        return f"torch.compile is unavailable ({error})"
    return None


def peak_flops(device: torch.device, precision: str) -> float | None:
    """Dense peak FLOP/s of this GPU for bf16/fp16 (None when unknown or not on CUDA)."""
    if device.type != "cuda" or precision == "fp32":
        return None
    return gpu_peak_bf16_flops(torch.cuda.get_device_name(device))


def compile_model(model: torch.nn.Module, device: torch.device) -> tuple[torch.nn.Module, str | None]:
    """(torch.compile(model), None), or (model unchanged, why not) when compile cannot run here.

    Dynamo's ``suppress_errors`` is set so a graph that fails to compile falls back to eager code.
    """
    reason = compile_unsupported_reason(device)
    if reason:
        return model, reason
    import torch._dynamo

    torch._dynamo.config.suppress_errors = True  # fall back to eager on a compile error
    return torch.compile(model), None


def available_memory(device: torch.device) -> int | None:
    """Bytes free for new tensors on ``device``: CUDA's free memory, or on a CPU Linux's
    MemAvailable (None when unknown, e.g. MPS or no /proc)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type != "cpu":
        return None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
