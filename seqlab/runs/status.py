"""How a run ended, or where it stands: the one vocabulary of the engine, the campaign loop (sweep,
paths), the explorer and ``seqlab compare``.

    >>> Status.TARGET_REACHED.finished, Status.INTERRUPTED.finished
    (True, False)
    >>> Status("time budget") is Status.TIME_BUDGET
    True
    >>> read_status("complete")          # an older summary's word
    <Status.COMPLETED: 'completed'>
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """A ``str`` enum: ``Status.COMPLETED == "completed"``, and JSON writes its value."""

    PENDING = "pending"                # not started yet
    RUNNING = "running"                # a process is training it (it holds the run's lock)
    COMPLETED = "completed"            # every step of its schedule
    TARGET_REACHED = "target reached"  # stopped early at its target metric (seq2seq --target-exact-match)
    TIME_BUDGET = "time budget"        # stopped when its --time-budget-s was spent
    INTERRUPTED = "interrupted"        # stopped by a signal or a request; it resumes from latest.pt
    FAILED = "failed"                  # an error ended it (a non-finite loss, bad data)

    @property
    def finished(self) -> bool:
        """It ended as its settings asked (all steps, target, time budget): nothing is left to resume."""
        return self in (Status.COMPLETED, Status.TARGET_REACHED, Status.TIME_BUDGET)

    def __str__(self) -> str:
        return self.value


OLD_WORDS = {"finished": Status.COMPLETED, "complete": Status.COMPLETED, "time limit": Status.TIME_BUDGET,
             "stopped": Status.INTERRUPTED}


def read_status(word: object, default: Status = Status.PENDING) -> Status:
    """The :class:`Status` of a word a summary file holds, older words included ("complete",
    "finished", "time limit", "stopped"); ``default`` for anything else."""
    if isinstance(word, str) and word in OLD_WORDS:
        return OLD_WORDS[word]
    try:
        return Status(word)
    except ValueError:
        return default
