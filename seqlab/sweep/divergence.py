"""Divergence: a run whose training loss climbs back above where it started, once warm-up is over,
and stays there, told apart from batch noise (a logged loss wobbles by about a percent while the
model learns). :func:`first_rise` marks a run diverged when, after ``warmup_steps``:

- a logged loss is not finite (at once);
- a logged loss is more than :data:`JUMP` (1 nat) above the starting value (at once: a blow-up);
- :data:`WINDOW` logged losses in a row are each above the starting value by more than the noise
  margin, :data:`MARGIN` of it (at least :data:`MIN_MARGIN`): the rise stays, noise does not.

The starting value is the first logged loss, capped at ``ln V + 1`` (uniform predictions plus one
nat) with the vocabulary size ``V``: a model that blew up within the first interval logs a huge one::

    >>> first_rise([{"step": 1, "train_loss": 5.62}, {"step": 3, "train_loss": 5.64}], warmup_steps=1) is None
    True

:class:`DivergenceWatch` applies it during training, reading only what the trainer appended to
``RUN/log.jsonl``: it touches no tensor, so it adds no host-device synchronisation to a step.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

JUMP = 1.0         # nats above the start that no batch noise reaches: diverged at once
MARGIN = 0.05      # of the starting value: a logged loss above start * (1 + MARGIN) is above the noise
MIN_MARGIN = 0.05  # nats, for small losses
WINDOW = 3         # logged losses in a row above the margin: a rise that stays


class RiseDetector:
    """Feed log records in order (:meth:`add`); ``reason`` says why the run diverged, else None."""

    def __init__(self, warmup_steps: int, vocab_size: int | None = None) -> None:
        self.warmup_steps = warmup_steps
        self.ceiling = math.log(vocab_size) + 1.0 if vocab_size else math.inf  # uniform predictions + 1 nat
        self.vocab_size = vocab_size
        self.start: tuple[int, float] | None = None  # (step, loss) of the first training loss
        self.above: list[tuple[int, float]] = []     # the latest logged losses in a row above the margin
        self.reason: str | None = None

    @property
    def reference(self) -> float:
        """The starting value the rule compares with (the first logged loss, at most ln V + 1)."""
        return min(self.start[1], self.ceiling)

    def _start_text(self) -> str:
        if self.start[1] > self.ceiling:
            return (f"{self.ceiling:.4g} (ln {self.vocab_size} + 1: the first logged loss, {self.start[1]:.4g} at step "
                    f"{self.start[0]}, was already past it)")
        return f"{self.start[1]:.4g} (step {self.start[0]})"

    def add(self, record: dict[str, Any]) -> str | None:
        loss, step = record.get("train_loss"), record.get("step")
        if self.reason is not None or not isinstance(loss, (int, float)) or not isinstance(step, int):
            return self.reason
        if not math.isfinite(loss):
            self.reason = f"the training loss is {loss} at step {step}"
            return self.reason
        if self.start is None:
            self.start = (step, float(loss))
            return None
        if step <= self.warmup_steps:
            return None
        reference = self.reference
        margin = max(MARGIN * reference, MIN_MARGIN)
        if loss > reference + JUMP:
            self.reason = (f"the training loss {loss:.4g} at step {step} is more than {JUMP:g} nat above its starting "
                           f"value {self._start_text()} after the {self.warmup_steps} warm-up steps")
        elif loss > reference + margin:
            self.above.append((step, float(loss)))
            if len(self.above) >= WINDOW:
                shown = ", ".join(f"{value:.4g} (step {at})" for at, value in self.above[-WINDOW:])
                self.reason = (f"the training loss stayed above its starting value {self._start_text()} by more than "
                               f"the noise margin {margin:.3g} for {WINDOW} logged steps in a row after the "
                               f"{self.warmup_steps} warm-up steps: {shown}")
        else:
            self.above.clear()
        return self.reason


def first_rise(records: Iterable[dict[str, Any]], warmup_steps: int, vocab_size: int | None = None) -> str | None:
    """Why the run of these log records diverged (see the module docstring), or None."""
    detector = RiseDetector(warmup_steps, vocab_size)
    for record in records:
        if detector.add(record):
            break
    return detector.reason


class LogTail:
    """The records appended to a JSONL file since the last :meth:`new_records` (a line still being
    written waits for its end; a file that shrank, as a resumed run truncates its log, is reread)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.offset = 0
        self.partial = b""

    def new_records(self) -> list[dict[str, Any]]:
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return []
        if size < self.offset:
            self.offset, self.partial = 0, b""
        if size == self.offset:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read(size - self.offset)
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        records = []
        for line in lines:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a torn line left by a killed run; the trainer drops it on resume
            if isinstance(record, dict):  # read_jsonl names any other line when the run is read
                records.append(record)
        return records


class DivergenceWatch:
    """Step callback ``watch(trainer, step)``: once RUN/log.jsonl shows a rise (:func:`first_rise`),
    ``trainer.request_stop("diverged: " + reason)``; ``reason`` stays set for the sweep to record.

    Created before the run starts, it reads the log from its beginning, so a resumed run is judged
    on all its records, the ones before the resume included.
    """

    def __init__(self, log_path: str | Path, warmup_steps: int, vocab_size: int | None = None) -> None:
        self.tail = LogTail(log_path)
        self.detector = RiseDetector(warmup_steps, vocab_size)

    @property
    def reason(self) -> str | None:
        return self.detector.reason

    def __call__(self, trainer: Any, step: int) -> None:
        if self.detector.reason is None:
            for record in self.tail.new_records():
                if self.detector.add(record):
                    break
        if self.detector.reason is not None:
            trainer.request_stop(f"diverged: {self.detector.reason}")
