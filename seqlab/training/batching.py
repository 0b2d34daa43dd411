"""Random training windows from one long token array."""

from __future__ import annotations

import numpy as np
import torch


def get_batch(dataset, batch_size: int, context_length: int, device, *,
              generator: np.random.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample `batch_size` windows uniformly from a 1-D integer array.

    dataset: 1-D array of token ids (an np.memmap is read lazily: only the sampled windows are
    loaded). Returns (inputs, targets), both (batch_size, context_length) int64 on `device`, with
    targets[i, j] = dataset[start_i + j + 1] (the next token). generator: a NumPy Generator for
    reproducible draws; None uses NumPy's global random state (so np.random.seed applies).
    """
    device = torch.device(device)
    windows = sample_windows(dataset, batch_size, context_length, generator=generator,
                             pin_memory=device.type == "cuda")
    windows = windows.to(device, non_blocking=True)  # pinned for CUDA: the copy does not wait
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


def sample_windows(dataset, batch_size: int, context_length: int, *, generator: np.random.Generator | None = None,
                   pin_memory: bool = False) -> torch.Tensor:
    """`batch_size` windows of `context_length` + 1 consecutive tokens at uniform random starts:
    one (batch_size, context_length + 1) int64 CPU tensor, whose row i is inputs[i] followed by
    the last target (inputs = windows[:, :-1], targets = windows[:, 1:]). pin_memory: in
    page-locked memory, so one ``.to("cuda", non_blocking=True)`` moves the whole batch without
    making the host wait. Draws the same starts as :func:`get_batch` with the same generator.

    Example: dataset [10, 11, 12, 13, 14], context_length 2, a start drawn at 1 -> row [11, 12, 13].
    """
    if getattr(dataset, "ndim", 1) != 1:
        raise ValueError(f"dataset must be a 1-D array of token ids, got shape {np.shape(dataset)}")
    if batch_size <= 0 or context_length <= 0:
        raise ValueError(f"batch_size and context_length must be positive, got {batch_size}, {context_length}")
    num_tokens = len(dataset)
    num_starts = num_tokens - context_length  # a window needs context_length + 1 tokens
    if num_starts <= 0:
        raise ValueError(
            f"dataset has {num_tokens} tokens; a batch with context_length {context_length} needs at "
            f"least {context_length + 1}"
        )
    if generator is None:
        starts = np.random.randint(0, num_starts, size=batch_size)
    else:
        starts = generator.integers(0, num_starts, size=batch_size)
    offsets = starts[:, None] + np.arange(context_length + 1)[None, :]
    windows = torch.from_numpy(np.asarray(dataset[offsets]).astype(np.int64))
    return windows.pin_memory() if pin_memory else windows
