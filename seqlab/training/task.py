"""What a training task supplies to the engine (:mod:`seqlab.training.engine`): everything that
depends on what is learned, nothing that depends on how.

A task builds its model, draws batches, says which logits predict which targets, evaluates, and
writes its run files. The engine does the rest, identically for every task: schedule, AdamW,
clipping, precision, compile, DDP, accumulation, guards, checkpoints, resume, logs, signals.

One optimizer step, as the engine runs it::

    drawn = task.draw(sampler, global_batch)                # host; the same on every process
    for rows in this process's micro-batches:
        batch = task.select(drawn, rows, device)            # a Batch: inputs + its target tokens
        loss = TaskLoss(batch)                              # seqlab.training.task_loss, autocast inside:
        #   fused (GPU):  hidden, weight, targets = task.forward_hidden(model, batch)
        #                 loss = linear_cross_entropy(hidden, weight, targets, ignore_index=task.ignore_index)
        #   logits (CPU): logits, targets = task.forward(model, batch)
        #                 loss = cross_entropy(logits, targets, ignore_index=task.ignore_index)
        (loss * batch.tokens * world_size / drawn.tokens).backward()   # token-weighted, so any split
    clip, AdamW step                                                    # equals the whole batch
    drawn = task.draw(sampler, global_batch)   # the next step's batch, while the device computes

``sampler`` is the engine's seeded NumPy generator; its state is in every checkpoint (the state
before the batch drawn ahead), so a resumed run draws exactly the batches the uninterrupted run
would have drawn. ``pin_memory`` is set by the engine when the device is a GPU: ``draw`` should then
put its tensors in page-locked memory, so that ``select`` copies them with one asynchronous
(``non_blocking``) copy that never makes the host wait. Examples: the language model
(:mod:`seqlab.lm.task`) and the seq2seq task (:mod:`seqlab.seq2seq.task`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seqlab.settings import EngineSettings


@dataclass
class Batch:
    """Rows of a drawn global batch, on the device: what :meth:`Task.forward` reads, and how many
    target tokens they hold (counted on the host, so weighting needs no device read)."""

    inputs: Any
    tokens: int


@dataclass
class Drawn:
    """One global batch on the host (``rows`` examples), and its target tokens."""

    data: Any
    rows: int
    tokens: int


@dataclass
class EvalContext:
    """Where evaluation runs: the device and precision, and this process's rows of each global
    batch (every process evaluates its share; the engine averages the metrics over processes)."""

    device: torch.device
    precision: str
    rows: list[slice]
    global_batch: int


class Task(ABC):
    """The per-task half of a training run. ``config`` is an :class:`~seqlab.settings.EngineSettings`
    subclass holding the task's own settings too."""

    kind: str = ""                   # the run format's kind ("lm", "seq2seq")
    command: str = "seqlab train"    # the command that trains this task (messages)
    out_flag: str = "--out"          # how its run directory is given (messages)
    ignore_index: int | None = None  # a target id that is never predicted (padding)
    keep_step_checkpoints: bool = True  # step_*.pt beside latest.pt, or latest.pt only
    progress_label: str = "train"

    def __init__(self, config: EngineSettings) -> None:
        self.config = config
        self.model_config: Any = None
        self.pin_memory = False  # set by the engine: draw into page-locked memory (a CUDA device)

    # -- data and model ---------------------------------------------------------------------------
    @abstractmethod
    def prepare(self, say: Callable[[str], None]) -> None:
        """Read the data (and, on ``--resume``, what the run saved, e.g. its vocabulary); raise a
        clear error for bad input; set ``model_config``."""

    @abstractmethod
    def build_model(self, device: torch.device | str) -> torch.nn.Module:
        """The model of ``model_config`` on ``device`` (``"meta"``: shapes only, to size it)."""

    def check_resume(self, saved: dict[str, Any], checkpoint: Path) -> None:
        """Refuse a ``--resume`` whose settings contradict the checkpoint's (``saved``: its config)."""

    # -- batches and loss -------------------------------------------------------------------------
    @abstractmethod
    def draw(self, sampler: np.random.Generator, rows: int) -> Drawn:
        """One global batch of ``rows`` examples drawn with ``sampler`` (host memory)."""

    @abstractmethod
    def select(self, drawn: Drawn, rows: slice, device: torch.device) -> Batch:
        """``drawn``'s ``rows`` (a micro-batch of this process) on ``device``."""

    @abstractmethod
    def forward(self, model: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits (..., vocab), targets (...)) of ``batch``; the engine computes the loss."""

    def forward_hidden(self, model: torch.nn.Module,
                       batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """(hidden (..., d), weight (vocab, d), targets (...)): the output layer's input and weight,
        with ``forward``'s logits = hidden @ weight.T, for the fused loss; None (the default) when the
        task cannot give them, and the engine then takes ``forward``'s logits."""
        return None

    def tokens_per_step_text(self, world_size: int) -> int | str:
        """Tokens of one optimizer step for the start line: a number, or words ("about 640 ...")."""
        return f"{self.config.batch_size * self.config.grad_accum_steps * world_size:,} examples/step"

    def flops_per_token(self) -> float | None:
        """Training FLOPs per target token (for MFU on a GPU); None when unknown."""
        return None

    # -- evaluation ---------------------------------------------------------------------------------
    @abstractmethod
    def evaluate(self, model: torch.nn.Module, where: EvalContext) -> dict[str, float]:
        """Validation metrics, "val_loss" among them (the model is in eval mode, no gradients)."""

    def describe(self, metrics: dict[str, float]) -> str:
        """One line for the user, e.g. "val loss 1.2345"."""
        return f"val loss {metrics['val_loss']:.4f}"

    def early_stop(self, metrics: dict[str, float]) -> str | None:
        """A reason to stop after this evaluation (a target metric reached), or None."""
        return None

    # -- run files ----------------------------------------------------------------------------------
    @abstractmethod
    def write_run_files(self, run_dir: Path, *, world_size: int, total_steps: int, parameters: int) -> None:
        """config.json and the tokenizer/ or vocab.json of a new run (or a resumed one's config)."""

    def plot_title(self, run_dir: Path, parameters: int) -> str:
        return f"{run_dir.name}: {parameters:,} parameters"

    def start_details(self) -> str:
        """Extra words for the start line (the data, the architecture)."""
        return ""
