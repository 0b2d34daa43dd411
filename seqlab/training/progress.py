"""What the training loop shows and records per step: the progress bar (loss, lr, tokens/s, MFU),
the mean training loss of each log interval and each evaluation in the run log.

Only the main process has a run log and a visible bar; the others call the same methods silently.
"""

from __future__ import annotations

import sys

from seqlab.training.run_log import RunLog
from seqlab.training.throughput import Throughput


def start_message(parameters: int, total_steps: int, time_budget_s: float | None, step_size: str,
                  where: str) -> str:
    """E.g. "training 1,234 parameters for 300 s (at most 4000 steps) (2,048 tokens/step) on cpu, fp32"
    (``step_size``: what one step holds, in words, e.g. "about 640 target tokens/step")."""
    length = f"{total_steps} steps"
    if time_budget_s is not None:
        length = f"{time_budget_s:g} s (at most {total_steps} steps)"
    return f"training {parameters:,} parameters for {length} ({step_size}) on {where}"


class StepReporter:
    """``step(...)`` after each optimizer step, ``evaluation(...)`` after each evaluation, then ``close()``.

    A step may come without host values (on the GPU path the trainer reads the device only every few
    steps, see :class:`seqlab.training.guards.StepReader`): it still moves the bar and the rate, and
    the bar keeps showing the latest loss read. ``losses`` are the per-step losses read at this step
    (every step since the previous read); a log step always comes with them.

    With a time budget the run ends when its seconds are spent, long before ``total`` (a cap), so
    the bar counts steps without a total or an ETA and shows the seconds left instead.

    ``window`` holds the per-step losses since the last train record; a checkpoint saves it, so the
    first record after a resume averages the same steps as in an uninterrupted run. MFU is
    ``flops_per_token`` (this process's model FLOPs per token of the whole step) times the tokens/s
    (``step_tokens`` of each step), over the GPU's peak.
    """

    def __init__(self, run_log: RunLog | None, *, total: int, initial: int, show_bar: bool,
                 flops_per_token: float | None, peak_flops: float | None, tokens_per_step: int = 1,
                 time_budget_s: float | None = None, window: list[float] | None = None,
                 label: str = "train") -> None:
        from seqlab.progressbar import progress_bar

        self.run_log = run_log
        self.time_budget_s = time_budget_s
        self.bar = progress_bar(total=None if time_budget_s else total, initial=initial, desc=label, unit="step",
                        dynamic_ncols=True, disable=not show_bar, file=sys.stderr)
        self.speed = Throughput(tokens_per_step)
        self.flops_per_token = flops_per_token
        self.peak_flops = peak_flops
        self.window: list[float] = list(window or [])
        self.latest_loss: float | None = None
        self.unread = [0, 0.0, 0]              # steps, seconds and tokens since the last read ...
        self.read_rate = 0.0                   # ... and the tokens/s over those at the last read
        self.train_loss: float | None = None  # mean over the last log interval ...
        self.train_loss_steps = 0              # ... of this many steps

    def step(self, done: int, *, losses: list[float], lr: float, grad_norm: float | None, seconds: float,
             compiling: bool, write_log: bool, wallclock: float, tokens: int, step_tokens: int | None = None) -> None:
        """Account step ``done`` (tokens/s leave it out when it compiled) and log the interval's mean.
        ``tokens``: seen so far; ``step_tokens``: this step's (default ``tokens_per_step``)."""
        step_tokens = self.speed.tokens_per_step if step_tokens is None else step_tokens
        self.speed.add(done, seconds, exclude=compiling, tokens=step_tokens)
        self.unread = [self.unread[0] + 1, self.unread[1] + seconds, self.unread[2] + step_tokens]
        if losses:
            self.take(losses)
            self.read_rate = self.unread[2] / self.unread[1] if self.unread[1] else 0.0
            self.unread = [0, 0.0, 0]
        postfix = f"loss {self.latest_loss:.3f} lr {lr:.2e}" if self.latest_loss is not None else f"lr {lr:.2e}"
        current = self.speed.current
        if current:
            postfix += f" {current:,.0f} tok/s"
            if self.flops_per_token and self.peak_flops:
                mfu = self.flops_per_token * current / self.peak_flops
                postfix += f" MFU {mfu:.1%}"
        if self.time_budget_s:
            postfix += f" {max(0.0, self.time_budget_s - wallclock):.0f} s left"
        self.bar.set_postfix_str(postfix, refresh=False)
        self.bar.update(1)
        if not write_log:
            return
        self.train_loss, self.train_loss_steps = sum(self.window) / len(self.window), len(self.window)
        self.window = []
        if self.run_log is not None:
            self.run_log.write({"step": done, "wallclock": round(wallclock, 3), "train_loss": self.train_loss,
                                "lr": lr, "grad_norm": grad_norm, "tokens": tokens,
                                "tokens_per_second": round(self.read_rate, 1)})

    def take(self, losses: list[float]) -> None:
        """Per-step losses read from the device, into the window of the next train record."""
        if losses:
            self.window.extend(losses)
            self.latest_loss = losses[-1]

    def final_loss(self) -> tuple[float | None, int]:
        """(mean, steps) of the losses that end the run: the window when the run stopped between
        two records (e.g. interrupted), else the last record's."""
        if self.window:
            return sum(self.window) / len(self.window), len(self.window)
        return self.train_loss, self.train_loss_steps

    def evaluation(self, done: int, metrics: dict[str, float] | float, *, wallclock: float, tokens: int,
                   describe: str | None = None) -> None:
        """Log an evaluation (``metrics``: "val_loss" and the task's others) and say it."""
        if not isinstance(metrics, dict):
            metrics = {"val_loss": metrics}
        if self.run_log is not None:
            self.run_log.write_eval({"step": done, "wallclock": round(wallclock, 3), **metrics, "tokens": tokens})
            text = describe or f"val loss {metrics['val_loss']:.4f}"
            self.bar.write(f"step {done}: {text}", file=sys.stderr)

    def close(self) -> None:
        self.bar.close()
        if self.run_log is not None:
            self.run_log.close()
