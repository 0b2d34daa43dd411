"""Guards against a diverged run: a non-finite loss or gradient norm stops the run, and
non-finite weights are never written to a checkpoint.

A gradient can hold NaN or inf while the loss is still finite (an overflow in the backward pass).
Clipping then returns a NaN norm, AdamW writes NaN into every weight, and only the *next* loss
shows it; by then a checkpoint could have saved the poisoned weights. So the trainer checks the
loss and the gradient norm together, in the one host read it already does per step, and
:func:`check_finite_weights` refuses to save weights that are not all finite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import torch


class NonFiniteLossError(RuntimeError):
    """The loss or the gradient norm became NaN or infinite; the run stopped without saving the bad state."""


def nonfinite_message(step: int, what: str, last_checkpoint: tuple[int, Path] | None) -> str:
    """Why the run stopped at ``step`` (``what`` went wrong) and which checkpoint holds the last good state."""
    if last_checkpoint is not None:
        kept = f"the last good checkpoint is {last_checkpoint[1]} (step {last_checkpoint[0]})"
    else:
        kept = "no checkpoint was saved yet"
    return (f"step {step}: {what}; stopping without saving this state; {kept}. "
            f"Try a lower --lr, more --warmup-steps or --grad-clip.")


def nonfinite_step(loss: float, grad_norm: float) -> str:
    """What is wrong with a step whose loss or gradient norm is not finite."""
    if not math.isfinite(loss):
        return f"the training loss is {loss}"
    return f"the gradient norm is {grad_norm} (the loss {loss:.4f} is still finite)"


def step_is_finite(loss: float, grad_norm: float, *, grad_scaler: bool) -> bool:
    """Whether a step's loss and gradient norm are finite. With an fp16 gradient scaler an
    infinite norm is expected now and then: the scaler skips that update and lowers its scale."""
    return math.isfinite(loss) and (grad_scaler or math.isfinite(grad_norm))


@torch.no_grad()
def check_finite_weights(parameters: Iterable[torch.Tensor], step: int,
                         last_checkpoint: tuple[int, Path] | None) -> None:
    """Raise :class:`NonFiniteLossError` when any weight is NaN or infinite (one host read)."""
    flags = [torch.isfinite(p).all() for p in parameters]
    if flags and not bool(torch.stack(flags).all()):
        raise NonFiniteLossError(nonfinite_message(step, "the weights are not finite", last_checkpoint))
