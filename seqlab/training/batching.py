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
    device = torch.device(device)
    if device.type == "cuda":
        windows = windows.pin_memory().to(device, non_blocking=True)
    else:
        windows = windows.to(device)
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()
