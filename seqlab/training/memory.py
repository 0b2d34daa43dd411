"""Will the model fit? Its parameters are counted on the ``meta`` device (shapes, no memory), and
the bytes training needs are compared with the free memory before anything is allocated, so an
oversized ``--d-model`` is a sentence instead of the allocator's raw error.

Training in float32 with AdamW keeps four numbers per parameter (weight, gradient, two moments):
16 bytes, before any activation. Example: ``--d-model 100000`` with 2 layers is 2.4e11
parameters, 3.8 TB to train, on a machine with 100 GB free: refused, saying so.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from seqlab.runtime import available_memory

BYTES_PER_PARAMETER = 16  # float32 weight + gradient + AdamW's two moments


class ModelTooLargeError(MemoryError):
    """The model cannot be trained in the memory of this device."""


def _size(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 1e3:,.1f} kB"


def too_large_message(parameters: int | None, needed: int | None, free: int | None, device: torch.device,
                      hint: str) -> str:
    """The sentence for a model that does not fit (``hint``: which settings make it smaller)."""
    size = f"{parameters:,} parameters" if parameters is not None else "the model"
    need = f" need about {_size(needed)} to train (weights, gradients, AdamW state)" if needed else " do not fit"
    have = f" but {device} has {_size(free)} free" if free is not None else f" on {device}"
    return f"the model is too large: {size}{need}{have}; {hint}"


def build_if_it_fits(build: Callable[[torch.device | str], torch.nn.Module], device: torch.device, hint: str
                     ) -> torch.nn.Module:
    """``build(device)``, after checking on the meta device that training it fits in free memory."""
    try:
        parameters = sum(p.numel() for p in build("meta").parameters())
    except (RuntimeError, ValueError, OverflowError) as error:  # shapes beyond what torch can index
        raise ModelTooLargeError(f"the model cannot be built ({error}); {hint}") from None
    needed, free = parameters * BYTES_PER_PARAMETER, available_memory(device)
    if free is not None and needed > free:
        raise ModelTooLargeError(too_large_message(parameters, needed, free, device, hint))
    try:
        return build(device)
    except (RuntimeError, MemoryError) as error:  # the allocator refused after all
        if isinstance(error, getattr(torch, "OutOfMemoryError", MemoryError)) or "memory" in str(error).lower() or "allocat" in str(error):
            raise ModelTooLargeError(too_large_message(parameters, needed, free, device, hint)) from None
        raise
