"""What a training task supplies to the engine (:mod:`seqlab.training.engine`): everything that
depends on what is learned, nothing that depends on how, and no words for the user (those come
from :data:`seqlab.runs.kinds.KINDS`, filled with the task's :meth:`Task.facts`).

One optimizer step, as the engine runs it::

    drawn = task.draw(sampler, global_batch, pin_memory=on_gpu)   # host; the same on every process
    for rows in this process's micro-batches:
        batch = task.select(drawn, rows, device)        # a Batch: inputs + its target tokens
        out = task.forward(model, batch)                # Output: hidden, weight, targets
        loss = TaskLoss(batch)                          # fused: linear_cross_entropy(out.hidden, out.weight, ...)
                                                        # else:  cross_entropy(out.logits, out.targets)
        (loss * batch.tokens * world_size / drawn.tokens).backward()   # token-weighted: any split
    clip, AdamW step                                                    # equals the whole batch
    drawn = task.draw(...)                              # the next step's batch, while the device computes

``sampler`` is the engine's seeded generator, saved in every checkpoint (a resume draws the same
batches); with ``pin_memory`` the batch is built in page-locked memory, so ``select`` copies it with
one asynchronous copy. Examples: :mod:`seqlab.lm.task`, :mod:`seqlab.seq2seq.task`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import torch

from seqlab.settings import EngineSettings

Inputs = TypeVar("Inputs")
Examples = TypeVar("Examples")


@dataclass
class Batch(Generic[Inputs]):
    """Rows of a drawn global batch on the device (``inputs``: the task's type, e.g. the LM's
    (inputs, targets) tensors or a :class:`~seqlab.seq2seq.data.Seq2SeqBatch`), and how many target
    tokens they hold (counted on the host, so weighting needs no device read)."""

    inputs: Inputs
    tokens: int


@dataclass
class Drawn(Generic[Examples]):
    """One global batch on the host (``rows`` examples), its target tokens, and whether it was
    asked for in page-locked memory."""

    data: Examples
    rows: int
    tokens: int
    pinned: bool = False


@dataclass
class Output:
    """What the model gives for a batch: the output layer's input ``hidden`` (..., d) and weight
    (vocab, d), and the ``targets`` (...) they predict; the logits are ``hidden @ weight.T``."""

    hidden: torch.Tensor
    weight: torch.Tensor
    targets: torch.Tensor

    @property
    def logits(self) -> torch.Tensor:
        return self.hidden @ self.weight.t()


@dataclass
class Facts:
    """What the messages about a run say of its task (see :data:`seqlab.runs.kinds.KINDS`):
    the model's name, the data's, the training examples and the tokens of one optimizer step."""

    model: str
    data: str
    examples: int
    tokens_per_step: float


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

    kind: str = ""                   # the run format's kind, a seqlab.runs.kinds.Kind value
    ignore_index: int | None = None  # a target id that is never predicted (padding)
    keep_step_checkpoints: bool = True  # step_*.pt beside latest.pt, or latest.pt only

    def __init__(self, config: EngineSettings) -> None:
        self.config = config
        self.model_config: Any = None

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

    def resume_data_note(self, saved: dict[str, Any], step: int) -> str | None:
        """A note when a resume trains on other data than the run did up to ``step`` (``saved``:
        the checkpoint's config), or None."""
        return None

    def step_limit(self, total_steps: int) -> str:
        """What ends the run at ``total_steps``, for "nothing to do" (e.g. "--max-steps is 40")."""
        return f"--max-steps is {self.config.max_steps}"

    # -- batches and loss -------------------------------------------------------------------------
    @abstractmethod
    def draw(self, sampler: np.random.Generator, rows: int, *, pin_memory: bool = False) -> Drawn:
        """One global batch of ``rows`` examples drawn with ``sampler`` (host memory; page-locked
        where the task builds tensors here and ``pin_memory`` asks for it)."""

    @abstractmethod
    def select(self, drawn: Drawn, rows: slice, device: torch.device) -> Batch:
        """``drawn``'s ``rows`` (a micro-batch of this process) on ``device``."""

    @abstractmethod
    def forward(self, model: torch.nn.Module, batch: Batch) -> Output:
        """The model's output layer input, its weight and the targets of ``batch``; the engine
        computes the loss (fused, or from the logits)."""

    def flops_per_token(self) -> float | None:
        """Training FLOPs per target token (for MFU on a GPU); None when unknown."""
        return None

    # -- evaluation ---------------------------------------------------------------------------------
    @abstractmethod
    def evaluate(self, model: torch.nn.Module, where: EvalContext) -> dict[str, float]:
        """Validation metrics, "val_loss" among them (the model is in eval mode, no gradients)."""

    def early_stop(self, metrics: dict[str, float]) -> str | None:
        """A reason to stop after this evaluation (a target metric reached), or None."""
        return None

    # -- run files and messages ---------------------------------------------------------------------
    @abstractmethod
    def write_run_files(self, run_dir: Path, *, world_size: int, total_steps: int, parameters: int) -> None:
        """config.json and the tokenizer/ or vocab.json of a new run (or a resumed one's config)."""

    @abstractmethod
    def facts(self, global_batch: int) -> Facts:
        """The facts the run's messages give (after :meth:`prepare`), for ``global_batch`` examples a step."""
