"""Hold a child process at one training step until a stop signal has reached it.

A test that signals a child must signal it in a known state. Waiting for a sign of the state (a
folder, a log line) is not enough: on a loaded machine the child may be far past it, even finished,
before the signal arrives. So the child is started through this module::

    python -m tests.hold MARKER RUN STEP  seqlab ARGS...      # the `seqlab ARGS...` command
    python -m tests.hold MARKER RUN STEP  -c SCRIPT ARGS...   # a script (sys.argv[1:] = ARGS)

In every training engine whose run folder is named RUN, after step STEP the child writes MARKER and
then waits, in that step, until its engine has noted a stop signal (the engine's own handler ran),
and only then goes on. The test waits for MARKER (:func:`tests.conftest.wait_for_hold`) and sends
the signal: it always lands in step STEP of run RUN. A SIGKILL simply ends the waiting child.

The wait is bounded by a count of polls (HOLD_POLLS), a hang guard for a test that never signals.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HOLD_POLLS = 300_000   # polls of 1 ms: a child nobody signals gives up (with an error) after minutes


def install(marker: str | Path, run: str, step: int) -> None:
    """Make every Engine of run folder ``run`` hold after ``step`` (module docstring)."""
    from seqlab.training.engine import Engine

    marker, original = Path(marker), Engine.__init__

    def hold(engine, done: int) -> None:
        if done != step:
            return
        marker.write_text(f"{run} step {step}\n")
        for _ in range(HOLD_POLLS):
            if engine._stop_reason is not None:  # the engine's signal handler has run
                return
            time.sleep(0.001)
        raise RuntimeError(f"tests.hold: held {run} at step {step} for {HOLD_POLLS} polls and no signal came")

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        if Path(self.config.out_dir).name == run:
            self.step_callbacks.append(hold)

    Engine.__init__ = init


def main(argv: list[str]) -> int:
    marker, run, step, *rest = argv
    install(marker, run, int(step))
    if rest[:1] == ["-c"]:
        sys.argv = ["-c", *rest[2:]]
        exec(compile(rest[1], "<tests.hold script>", "exec"), {"__name__": "__main__"})
        return 0
    if rest[:1] != ["seqlab"]:
        raise SystemExit("usage: python -m tests.hold MARKER RUN STEP (seqlab ARGS... | -c SCRIPT ARGS...)")
    from seqlab.cli import main as seqlab_main

    return seqlab_main(rest[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
