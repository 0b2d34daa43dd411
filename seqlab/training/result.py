"""What a training run returns (:meth:`seqlab.training.engine.Engine.run`) and how it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqlab.runs.status import Status


@dataclass
class TrainResult:
    run_dir: Path
    steps: int                      # completed optimizer steps
    total_steps: int
    status: Status                  # COMPLETED | TIME_BUDGET | TARGET_REACHED (all .finished) | INTERRUPTED
    stopped_by: str | None = None    # the reason in words: "time budget", "target reached", "interrupted (SIGTERM)"
    stop_signal: int | None = None   # the signal that stopped the run (CLI exit status 128 + it)
    train_loss: float | None = None  # mean over the last train_loss_steps steps of the run
    train_loss_steps: int = 0
    val_loss: float | None = None    # last evaluation
    metrics: dict[str, float] = field(default_factory=dict)  # last evaluation: val_loss and the task's others
    headline: str | None = None      # the task's words for them ("val loss 0.0312, exact match 99.6%")
    parameters: int = 0
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

    @property
    def exit_status(self) -> int:
        """0 when finished (all steps, its time budget or its target); else 128 + the signal that
        stopped it, as a shell reports one (130 for Ctrl-C, 143 for SIGTERM; 130 for a stop asked
        another way)."""
        from seqlab.training.interrupt import stopped_exit_status

        return 0 if Status(self.status).finished else stopped_exit_status(self.stop_signal)

    def summary(self, tokens: str = "tokens") -> str:
        """The end-of-run line, e.g. "completed at step 40/40, train loss (mean of the last 10 steps)
        2.3100, val loss 2.4000, 1,234 tokens/s; run: runs/a", or "time budget spent at step 5/1000, ..."."""
        status = Status(self.status)
        text = "time budget spent" if status is Status.TIME_BUDGET else status.value
        text += f" at step {self.steps}/{self.total_steps}"
        if self.stopped_by and status.finished and self.stopped_by != status.value:
            text += f" ({self.stopped_by})"
        if self.train_loss is not None:
            text += f", {self.train_loss_label} {self.train_loss:.4f}"
        if self.headline:
            text += f", {self.headline}"
        elif self.val_loss is not None:
            text += f", val loss {self.val_loss:.4f}"
        text += f", {self.tokens_per_second:,.0f} {tokens}/s"
        if self.excluded_steps:
            shown = ", ".join(str(step) for step in self.excluded_steps)
            text += f" (step {shown} left out: compiling)"
        return text + f"; run: {self.run_dir}"
