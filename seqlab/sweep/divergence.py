"""Divergence: a run whose training loss climbs back above where it started, once warm-up is over.

A learning rate past the edge of stability rarely gives NaN at once; more often the loss shoots up
and stays there. :func:`first_rise` marks a run diverged when a logged training loss after
``warmup_steps`` is above the first one (or not finite). The first is a mean over a log interval,
so a model that blew up within it logs a huge start; with the vocabulary size ``V`` the start is
capped at ``ln V + 1`` (uniform predictions, plus one nat)::

    >>> records = [{"step": 5, "train_loss": 5.5}, {"step": 20, "train_loss": 6.2}]
    >>> first_rise(records, warmup_steps=10)
    'the training loss 6.2 at step 20 is above its starting value 5.5 (step 5) after the 10 warm-up steps'

:class:`DivergenceWatch` applies it during training, reading only what the trainer appended to
``RUN/log.jsonl``: it touches no tensor, so it adds no host-device synchronisation to a step.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterable


class RiseDetector:
    """Feed log records in order (:meth:`add`); ``reason`` says why the run diverged, else None."""

    def __init__(self, warmup_steps: int, vocab_size: int | None = None) -> None:
        self.warmup_steps = warmup_steps
        self.ceiling = math.log(vocab_size) + 1.0 if vocab_size else math.inf  # uniform predictions + 1 nat
        self.vocab_size = vocab_size
        self.start: tuple[int, float] | None = None  # (step, loss) of the first training loss
        self.reason: str | None = None

    def add(self, record: dict[str, Any]) -> str | None:
        loss, step = record.get("train_loss"), record.get("step")
        if self.reason is not None or not isinstance(loss, (int, float)) or not isinstance(step, int):
            return self.reason
        if not math.isfinite(loss):
            self.reason = f"the training loss is {loss} at step {step}"
        elif self.start is None:
            self.start = (step, float(loss))
        elif step > self.warmup_steps and loss > min(self.start[1], self.ceiling):
            first = f"{self.start[1]:.4g} (step {self.start[0]})"
            if self.start[1] > self.ceiling:
                first = (f"{self.ceiling:.4g} (ln {self.vocab_size} + 1: the first logged loss, {self.start[1]:.4g} "
                         f"at step {self.start[0]}, was already past it)")
            self.reason = (f"the training loss {loss:.4g} at step {step} is above its starting value {first} "
                           f"after the {self.warmup_steps} warm-up steps")
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
