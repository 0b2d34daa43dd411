"""What a sweep prints: one line as each run starts and one as it ends, with the sweep's ETA.

The ETA comes from the runs trained so far in this invocation: their wall-clock seconds per
training token (setup, evaluation and checkpoints included) times the tokens the remaining runs
still have to train, plus the seconds left of runs that train for a time budget. Before the first
run ends there is nothing to measure, and the line says so. Example::

    [1/3] lr=1e-3: training 300 steps; ETA after this run
    [1/3] lr=1e-3: finished in 41.2 s, val loss 2.1043
    [2/3] lr=3e-3: resuming (logged up to step 120 of 300); sweep ETA 1m 12s
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from seqlab.sweep.records import RunRecord


@dataclass
class Work:
    """What one run still has to do: training tokens, or seconds of a time budget."""

    tokens: int = 0
    seconds: float = 0.0


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return "ETA after this run"
    minutes, secs = divmod(max(0, round(seconds)), 60)
    if minutes >= 60:
        return f"sweep ETA {minutes // 60}h {minutes % 60:02d}m"
    return f"sweep ETA {minutes}m {secs:02d}s" if minutes else f"sweep ETA {secs} s"


class SweepProgress:
    """``start(i, name, note, work)`` before run i trains, ``end(i, record, seconds, work)`` after it,
    ``skip(i, record)`` for a run already done; ``write`` receives each line."""

    def __init__(self, total: int, work: list[Work], write: Callable[[str], None] | None = None) -> None:
        self.total = total
        self.left = list(work)                # per run, what is still to do
        self.seconds = 0.0                    # wall time of the runs trained in this invocation ...
        self.tokens = 0                       # ... and the tokens they trained
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))

    def eta(self) -> float | None:
        tokens = sum(w.tokens for w in self.left)
        seconds = sum(w.seconds for w in self.left)
        if tokens and not self.tokens:
            return None
        return seconds + (tokens * self.seconds / self.tokens if tokens else 0.0)

    def _prefix(self, index: int, name: str) -> str:
        return f"[{index + 1}/{self.total}] {name}"

    def start(self, index: int, name: str, note: str) -> None:
        self.write(f"{self._prefix(index, name)}: {note}; {eta_text(self.eta())}")

    def skip(self, index: int, record: RunRecord) -> None:
        self.left[index] = Work()
        self.write(f"{self._prefix(index, record.name)}: {describe(record)} already; skipped")

    def end(self, index: int, record: RunRecord, seconds: float, trained_tokens: int) -> None:
        self.left[index] = Work()
        self.seconds += seconds
        self.tokens += trained_tokens
        left = sum(1 for w in self.left if w.tokens or w.seconds)
        tail = f"; {eta_text(self.eta())} ({left} run{'s' if left != 1 else ''} left)" if left else ""
        self.write(f"{self._prefix(index, record.name)}: {describe(record)} in {seconds:.1f} s{tail}")


def describe(record: RunRecord) -> str:
    """"finished, val loss 2.1043" / "diverged (...)" / "unfinished at step 15"."""
    if record.status == "diverged":
        return f"diverged ({record.reason})" if record.reason else "diverged"
    if record.status in ("unfinished", "pending"):
        return f"unfinished at step {record.steps or 0}"
    text = record.status
    if record.final_val_loss is not None:
        text += f", val loss {record.final_val_loss:.4f}"
    return text
