"""Guards against a diverged run: a non-finite loss or gradient norm stops the run, and
non-finite weights are never written to a checkpoint.

A gradient can hold NaN or inf while the loss is still finite (an overflow in the backward pass).
Clipping then returns a NaN norm, AdamW writes NaN into every weight, and only the *next* loss
shows it; by then a checkpoint could have saved the poisoned weights. So the trainer checks the
loss and the gradient norm of every step, and :func:`check_finite_weights` refuses to save
weights that are not all finite.

Reading a number from a GPU (``.item()``, ``.tolist()``) makes the host wait until the device has
finished all the work queued so far, so the GPU idles while the host prepares the next step. On the
GPU path the trainer therefore keeps each step's loss and gradient norm on the device
(:class:`StepReader`) and reads them all at once on the steps that need host values (log, eval and
checkpoint steps, the last step, a stop). A NaN is then found a few steps late, but never saved:
every save happens at such a read. Example with ``log_interval=3``: a NaN gradient at step 4 is
found at step 6, when steps 4 to 6 are read together, and the run stops without saving step 6.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import torch

from seqlab.training.distributed import DistributedContext, all_reduce_sum_


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


class StepReader:
    """Each step's loss and gradient norm, kept on the device until :meth:`read` takes them to the host.

    ``add(step, loss, grad_norm)`` after every optimizer step queues no device work at all;
    ``read(last_checkpoint)`` makes one host read for all steps added since the last read (the
    losses averaged over processes, in the same all-reduce) and raises :class:`NonFiniteLossError`
    for the first step whose loss or gradient norm is not finite. Reading every step (the CPU path)
    gives today's per-step check; reading every few steps (the GPU path) names the steps read together.

        reader.add(1, loss1, norm1); reader.add(2, loss2, norm2)
        reader.read(None)   # ([loss1, loss2] as floats, norm2 as a float): one wait for the device
    """

    def __init__(self, dist: DistributedContext, *, grad_scaler: bool) -> None:
        self.dist, self.grad_scaler = dist, grad_scaler
        self.steps: list[int] = []
        self.losses: list[torch.Tensor] = []
        self.norms: list[torch.Tensor] = []
        self.grad_norm: float | None = None  # the latest step's norm read so far

    def add(self, step: int, loss: torch.Tensor, grad_norm: torch.Tensor) -> None:
        self.steps.append(step)
        self.losses.append(loss)
        self.norms.append(grad_norm)

    def read(self, last_checkpoint: tuple[int, Path] | None) -> tuple[list[float], float | None]:
        """The per-step losses since the last read and the latest gradient norm (one host read)."""
        if not self.steps:
            return [], self.grad_norm
        steps, count = self.steps, len(self.steps)
        losses = torch.stack(self.losses)
        if self.dist.enabled:  # the mean over processes, so that every process stops on NaN together
            losses = all_reduce_sum_(losses.double(), self.dist)
        values = torch.cat([losses, torch.stack(self.norms).to(losses.dtype)]).tolist()
        self.steps, self.losses, self.norms = [], [], []
        loss_values = [v / self.dist.world_size for v in values[:count]] if self.dist.enabled else values[:count]
        for step, loss, norm in zip(steps, loss_values, values[count:]):
            if not step_is_finite(loss, norm, grad_scaler=self.grad_scaler):
                what = nonfinite_step(loss, norm)
                if count > 1:
                    what += f" (steps {steps[0]} to {steps[-1]} were read together at step {steps[-1]})"
                raise NonFiniteLossError(nonfinite_message(step, what, last_checkpoint))
        self.grad_norm = values[-1]
        return loss_values, self.grad_norm
