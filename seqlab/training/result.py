"""What a training run returns (:func:`seqlab.training.trainer.train`) and how it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainResult:
    run_dir: Path
    steps: int                      # completed optimizer steps
    total_steps: int
    status: str                     # "completed" | "interrupted"
    stopped_by: str | None = None    # "time budget", "interrupted (SIGTERM)", a step callback's reason, ...
    stop_signal: int | None = None   # the signal that stopped the run (CLI exit status 128 + it)
    train_loss: float | None = None  # mean over the last log interval ...
    train_loss_steps: int = 0        # ... of this many steps
    val_loss: float | None = None    # last evaluation
    tokens_per_second: float = 0.0   # training steps only (eval, checkpoints, compiling steps excluded)
    excluded_steps: list[int] = field(default_factory=list)  # steps left out of tokens/s (compiling)
    tokens_seen: int = 0
    elapsed: float = 0.0             # wallclock of the run, across resumes
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def train_loss_label(self) -> str:
        """"train loss (mean of the last 10 steps)": what ``train_loss`` averages (the progress bar
        shows single steps, so the two differ)."""
        steps = "the last step" if self.train_loss_steps == 1 else f"the last {self.train_loss_steps} steps"
        return f"train loss (mean of {steps})"
