"""A task's model and its loss as one module: what the training engine compiles and wraps in DDP.

    loss = TaskLoss(model, task, precision="bf16", device=device, fused=True)(batch)   # scalar

Two ways to the same mean cross-entropy of :meth:`Task.forward`'s targets:

* ``fused=False`` (the CPU default): the logits ``hidden @ weight.T``, then
  :func:`~seqlab.model.loss.cross_entropy` in float32. Every token's logits exist at once:
  32,768 tokens x vocab 10,000 are 1.3 GB of float32, and as much again for their gradient.
* ``fused=True`` (the GPU default): :func:`~seqlab.model.loss.linear_cross_entropy` on hidden and
  weight, a block of tokens at a time, never holding all logits (0.13 GB there).

The engine compiles this module, not the model alone, so with ``--compile`` the loss is traced into
the same graph as the model. "auto" (:func:`fused_loss_wanted`) is fused on the GPU path only: on a
CPU the fused loss measured 1.2x slower (4 matmuls against 3).
"""

from __future__ import annotations

import torch
from torch import nn

from seqlab.model.checks import on_gpu_path
from seqlab.model.loss import cross_entropy, linear_cross_entropy
from seqlab.runtime import autocast_context

FUSED_LOSS_CHOICES = ("auto", "on", "off")


def fused_loss_wanted(setting: str, parameter: torch.Tensor) -> bool:
    """Whether ``fused_loss=setting`` ("auto" | "on" | "off") means the fused loss for a model whose
    parameters look like ``parameter``: "auto" is fused exactly on the GPU path."""
    if setting not in FUSED_LOSS_CHOICES:
        raise ValueError(f"fused_loss must be one of {', '.join(FUSED_LOSS_CHOICES)}, got {setting!r}")
    if setting == "auto":
        return on_gpu_path(parameter)
    return setting == "on"


class TaskLoss(nn.Module):
    """forward(batch) -> the mean loss of ``batch``'s targets (a scalar, float32 at least).

    ``model`` is a submodule (its parameters are this module's, so DDP and the optimizer see the
    same tensors); ``task`` supplies ``forward`` and ``ignore_index``.
    """

    def __init__(self, model: nn.Module, task, *, precision: str, device: torch.device, fused: bool,
                 pad_vocab_multiple: int | None = None):
        super().__init__()
        self.model = model
        self.task = task
        self.precision, self.device = precision, device
        self.fused = fused
        self.pad_vocab_multiple = pad_vocab_multiple if pad_vocab_multiple and pad_vocab_multiple > 1 else None

    def forward(self, batch) -> torch.Tensor:
        ignore_index = self.task.ignore_index
        with autocast_context(self.precision, self.device):
            out = self.task.forward(self.model, batch)
            if self.fused:
                # inside autocast: the blocks' matmuls run in the autocast dtype, the softmax in float32
                return linear_cross_entropy(out.hidden, out.weight, out.targets, ignore_index=ignore_index,
                                            pad_vocab_multiple=self.pad_vocab_multiple)
            logits = out.logits
        if ignore_index is None:
            return cross_entropy(logits.float(), out.targets)
        return cross_entropy(logits.float(), out.targets, ignore_index=ignore_index)

    def extra_repr(self) -> str:
        return f"fused={self.fused}, precision={self.precision!r}, pad_vocab_multiple={self.pad_vocab_multiple}"
