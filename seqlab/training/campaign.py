"""The campaign loop: one experiment of many runs (``seqlab sweep``, ``seqlab paths``) trained one
after another into one ``--out`` folder, which a rerun of the same command continues.

``out`` is checked, locked and cleared of stale temporaries; the first Ctrl-C / SIGTERM lets the run
in training save its checkpoint and ends the loop (exit 128 + the signal), a second quits; a point
whose outcome is recorded is skipped, one whose ``latest.pt`` reached its end is recorded without
training, any other trains (resumed when it has a checkpoint); the summary is written after every
point and whenever the loop stops. Example (the command supplies the steps)::

    campaign = Campaign("sweeps/lr", "seqlab sweep", what="the sweep", check=check_out)
    status = campaign.run(points, recorded=lambda p: outcomes.get(p.name),
                          reached_end=lambda p, state: state.step >= p.steps,
                          train_one=lambda p, state, callbacks, say: train(p.config(resume=state is not None), ...),
                          record=lambda p, result, state: outcomes.update({p.name: ...}),
                          summarize=lambda status: write_summary(status))
    status                 # Status.COMPLETED, or Status.INTERRUPTED (then campaign.exit_status is 130/143)
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from seqlab.runs.state import TrainState, read_train_state
from seqlab.runs.status import Status
from seqlab.training.interrupt import StopRequest, signal_name, signals_stop_runs, stopped_exit_status

RESUME_HINT = "rerun the same command to continue"


class Point(Protocol):
    """One run of a campaign: at least its folder (name it as the command likes)."""

    run_dir: Path


def saved_state(run_dir: str | Path) -> TrainState | None:
    """The :class:`TrainState` of ``run_dir/checkpoints/latest.pt``; None when it has none."""
    latest = Path(run_dir) / "checkpoints" / "latest.pt"
    return read_train_state(latest) if latest.is_file() else None


def interrupted_line(result: Any) -> str:
    """What a stop did to the run in training: its one step number (how to go on is said once, at
    the end: :attr:`Campaign.hint`)."""
    return f"interrupted at step {result.steps} of {result.total_steps} (checkpoint saved)"


class Campaign:
    """The loop of one ``out`` folder; ``check()`` (refuse a foreign folder, return anything)
    runs before the lock and again under it, ``prepare()`` once the folder is locked and clean."""

    def __init__(self, out: str | Path, command: str, *, what: str, check: Callable[[], Any] | None = None,
                 say: Callable[[str], None] | None = None, hint: str = RESUME_HINT, prefix: str = "") -> None:
        self.out, self.command, self.what, self.hint, self.prefix = Path(out), command, what, hint, prefix
        self.check = check or (lambda: None)
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self.stop = StopRequest()
        self.status = Status.PENDING
        self.checked: Any = None  # what check() returned under the lock

    @property
    def exit_status(self) -> int:
        """0 when the campaign completed, else 128 + the stopping signal (130 without one)."""
        return 0 if self.status.finished else stopped_exit_status(self.stop.signal)

    def engine_say(self, prefix: str) -> Callable[[str], None]:
        """``say`` for a run's engine, each line under ``prefix``; the engine's own "continue with
        --resume" line is left out: the campaign says how to continue (:func:`interrupted_line`)."""
        def say(line: str) -> None:
            if not line.endswith("; continue with --resume"):
                self.say(f"{prefix}{line}")
        return say

    def run(self, points: Iterable[Point], *, recorded: Callable[[Point], Any],
            reached_end: Callable[[Point, TrainState], bool],
            train_one: Callable[[Point, TrainState | None, list[Callable], Callable[[str], None]], Any],
            record: Callable[[Point, Any, TrainState | None], None],
            summarize: Callable[[Status], None], prepare: Callable[[Any], None] | None = None,
            skipped: Callable[[Point, Any], None] | None = None,
            interrupted: Callable[[Point, Any], None] | None = None) -> Status:
        """Train every point not done yet (see the module docstring); returns the final status.

        ``recorded(p)``: p's recorded outcome, None when it has none (then it trains or resumes);
        ``train_one(p, state, callbacks, say)``: train it (``--resume`` from its checkpoint's
        ``state`` when that is not None), passing ``callbacks`` and ``say`` to the engine, and
        return an object with ``.status`` (a TrainResult, or the command's outcome of a failed run);
        ``record(p, result, state)``: record a run that ended (``result`` None when only its
        checkpoint ``state`` says so); ``summarize(status)``: write the summary."""
        from seqlab.atomic import remove_stale_temporaries
        from seqlab.runs.lock import RunLock

        self.check()  # a file or a foreign folder is refused before OUT is created
        with RunLock(self.out, self.command):
            self.checked = self.check()  # again, under the lock: what a process that held it wrote
            self.out.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(self.out)
            if prepare is not None:
                prepare(self.checked)
            self.status = Status.RUNNING
            summarize(Status.RUNNING)
            try:
                with signals_stop_runs(self.stop, self.say, self.what):
                    self._loop(points, recorded, reached_end, train_one, record, summarize, skipped, interrupted)
                self.status = Status.INTERRUPTED if self.stop.stopped else Status.COMPLETED
            except BaseException:
                self.status = Status.INTERRUPTED
                with contextlib.suppress(Exception):  # record what is known; the error itself matters more
                    summarize(Status.INTERRUPTED)
                raise
            summarize(self.status)
        if self.status is Status.INTERRUPTED:
            by = f" by {signal_name(self.stop.signal)}" if self.stop.signal else ""
            self.say(f"{self.prefix}stopped{by}; {self.hint}")
        return self.status

    def _loop(self, points, recorded, reached_end, train_one, record, summarize, skipped, interrupted) -> None:
        for point in points:
            if self.stop.signal is not None:
                break
            done = recorded(point)
            if done is not None:
                if skipped is not None:
                    skipped(point, done)
                continue
            state = saved_state(point.run_dir)
            if state is not None and reached_end(point, state):  # killed between its end and its record
                record(point, None, state)
                if skipped is not None:
                    skipped(point, recorded(point))
                summarize(Status.RUNNING)
                continue
            result = train_one(point, state, [self.stop.engine_callback], self.engine_say(""))
            if self.stop.note(result):
                if getattr(result, "status", None) == Status.INTERRUPTED and interrupted is not None:
                    interrupted(point, result)
                if getattr(result, "status", None) != Status.INTERRUPTED:
                    record(point, result, None)  # it ended before the stop reached it
                break
            record(point, result, None)
            summarize(Status.RUNNING)


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Torch's CPU threads set to ``threads`` inside the block, given back after it."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(saved)
