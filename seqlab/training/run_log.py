"""What a training run records: RUN/log.jsonl (its format and reading are the run format's,
:mod:`seqlab.runs.log`), optional Weights & Biases / TensorBoard mirrors, and the loss-curve plot.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from seqlab.runs.log import JsonlLog


class Trackers:
    """Optional experiment trackers, created only when asked for; a missing package is a clear error."""

    def __init__(self, *, run_dir: Path, config: dict[str, Any], wandb: bool = False,
                 wandb_project: str = "seqlab", tensorboard: bool = False):
        self._wandb = self._tb = None
        if wandb:
            try:
                import wandb as wandb_module
            except ImportError:
                raise RuntimeError("--wandb was asked for but the package `wandb` is not installed "
                                   "(pip install wandb)") from None
            self._wandb = wandb_module.init(project=wandb_project, dir=str(run_dir), config=config,
                                            name=run_dir.name, resume="allow")
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise RuntimeError("--tensorboard was asked for but the package `tensorboard` is not "
                                   "installed (pip install tensorboard)") from None
            self._tb = SummaryWriter(log_dir=str(run_dir / "tensorboard"))

    def log(self, record: dict[str, Any]) -> None:
        step = record["step"]
        values = {k: v for k, v in record.items() if k != "step" and isinstance(v, (int, float))}
        if self._wandb is not None:
            self._wandb.log(values, step=step)
        if self._tb is not None:
            for key, value in values.items():
                self._tb.add_scalar(key, value, step)

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
        if self._tb is not None:
            self._tb.close()


PLOT_EVERY_S = 30.0  # at most one loss_curve.png drawing per 30 s of a run, and one at its end


class RunLog:
    """Everything a run records (main process): RUN/log.jsonl, the optional trackers, the history
    of records, and RUN/loss_curve.png: drawn at the first evaluation, then again after an
    evaluation only when ``PLOT_EVERY_S`` seconds have passed since the last drawing (one takes
    about 0.9 s on a CPU, most of a small run's time), and at the end (:meth:`close`).

    A resumed run (``resume_step``) keeps the records up to that step and drops later ones. A run
    that replaces an old one (``staged``) leaves the old log.jsonl and loss_curve.png alone until
    :meth:`commit` (at its first checkpoint), so a new run that fails early destroys nothing.
    """

    def __init__(self, run_dir: Path, config: dict[str, Any], *, resume_step: int | None,
                 plot_title: str, staged: bool = False) -> None:
        from seqlab.training.plots import plot_loss_curve

        self._plot = plot_loss_curve
        self.run_dir, self.plot_title = run_dir, plot_title
        self.jsonl = JsonlLog(run_dir / "log.jsonl", resume_step=resume_step, staged=staged)
        self.trackers = Trackers(run_dir=run_dir, config=config, wandb=config.get("wandb", False),
                                 wandb_project=config.get("wandb_project", "seqlab"),
                                 tensorboard=config.get("tensorboard", False))
        self.history = list(self.jsonl.records)
        self._drawn_at: float | None = None  # time.monotonic() of the last drawing
        self._undrawn = False                # an evaluation since then

    def write(self, record: dict[str, Any]) -> None:
        """Append a train record (step, wallclock, train_loss, lr, ...) everywhere."""
        self.jsonl.write(record)
        self.trackers.log(record)
        self.history.append(record)

    def write_eval(self, record: dict[str, Any]) -> None:
        """Append an eval record (step, wallclock, val_loss, tokens, ...) and redraw the loss curve."""
        self.write(record)
        self._undrawn = True
        if not self.jsonl.staged and (self._drawn_at is None or time.monotonic() - self._drawn_at >= PLOT_EVERY_S):
            self._draw()

    def _draw(self) -> None:
        self._plot(self.history, self.run_dir / "loss_curve.png", title=self.plot_title)
        self._drawn_at, self._undrawn = time.monotonic(), False

    def commit(self) -> None:
        """The new run's first checkpoint is saved: its log replaces the old run's, and its plot too."""
        if self.jsonl.staged:
            self.jsonl.commit()
            if any("val_loss" in record for record in self.history):
                self._draw()

    def close(self) -> None:
        try:
            if self._undrawn and not self.jsonl.staged:
                self._draw()
        finally:
            self.jsonl.close()
            self.trackers.close()
