"""Divergence: a run whose training loss climbs back above where it started, once warm-up is over.

A learning rate past the edge of stability rarely gives NaN at once (the trainer stops on a
non-finite loss by itself, raising ``NonFiniteLossError``); more often the loss shoots up and stays
near or above its value at initialisation. :func:`first_rise` finds that in a run's log records:
the first logged training loss is the starting value, and any later one past ``warmup_steps`` that
is above it (or not finite) marks the run diverged::

    >>> records = [{"step": 5, "train_loss": 5.5}, {"step": 10, "train_loss": 4.0},
    ...            {"step": 15, "val_loss": 4.1}, {"step": 20, "train_loss": 6.2}]
    >>> first_rise(records, warmup_steps=10)
    'the training loss 6.2 at step 20 is above its starting value 5.5 (step 5) after the 10 warm-up steps'
    >>> first_rise(records[:3], warmup_steps=10) is None
    True

The first logged loss is a mean over the first log interval, so a learning rate that blows the
model up within it logs a huge "starting value" (at lr 10 a 300-token model logs 348 at step 10,
falls to 187 at step 20 and is not caught). Given the vocabulary size ``V``, the starting value is
therefore at most ``ln V + 1``: a freshly initialised model predicts about uniformly (loss ``ln V``),
and one still a nat worse than uniform after warm-up is not learning::

    >>> blown_up = [{"step": 10, "train_loss": 348.0}, {"step": 20, "train_loss": 187.0}]
    >>> first_rise(blown_up, warmup_steps=3) is None
    True
    >>> first_rise(blown_up, warmup_steps=3, vocab_size=300)
    'the training loss 187 at step 20 is above its starting value 6.704 (ln 300 + 1: the first logged loss, 348 at step 10, was already past it) after the 3 warm-up steps'

:class:`DivergenceWatch` applies it during training as a step callback. It reads the records the
trainer has appended to ``RUN/log.jsonl`` since its last call (the log's record format,
:mod:`seqlab.training.run_log`), so it never touches a tensor: on the GPU path it adds no
host-device synchronisation to any step, and it sees the losses exactly when the trainer has read
them (at log steps). A file that did not grow costs one ``os.stat``.
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
