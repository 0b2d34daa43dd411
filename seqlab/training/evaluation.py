"""Validation loss during training: the mean loss over fixed validation windows.

The windows come from a generator seeded with ``seed + 1``, so every evaluation of a run sees the
same windows, whatever the step, and however the global batch is split into processes and
micro-batches (``rows`` are this process's rows of each global batch).
"""

from __future__ import annotations

import numpy as np
import torch

from seqlab.model.loss import cross_entropy
from seqlab.runtime import autocast_context
from seqlab.training.batching import get_batch


@torch.no_grad()
def validation_loss(model: torch.nn.Module, valid: np.ndarray, *, batches: int, global_batch: int,
                    context_length: int, seed: int, rows: list[slice], precision: str,
                    device: torch.device) -> float:
    """Mean cross-entropy of ``model`` over ``batches`` global batches of this process's ``rows``."""
    sampler = np.random.default_rng(seed + 1)
    losses = []
    for _ in range(batches):
        inputs, targets = get_batch(valid, global_batch, context_length, "cpu", generator=sampler)
        for part in rows:
            with autocast_context(precision, device):
                logits = model(inputs[part].to(device))
            losses.append(cross_entropy(logits.float(), targets[part].to(device)))
    return torch.stack(losses).mean().item()
