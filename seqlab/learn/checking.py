"""Checking a student's exercise from wherever they work, into one workspace and one progress.

:func:`check_file` checks ``WORKSPACE/NAME.py`` with the checker of ``seqlab learn check`` (the
student's code runs in a child process with a time limit, ``seqlab.learn.runner``), records the
step's state in ``progress.json`` and keeps the check's summary there (``"check"`` of the step's
entry) so that the explorer can show the latest check with its diagnosis (:func:`latest_check`).
"""

from __future__ import annotations

import time
from pathlib import Path

from seqlab.learn.workspace import ProgressError, read_progress, set_state


def summary(report) -> dict:
    """What the explorer shows of a check: passed, each check, the diagnosis, when."""
    return {"passed": report.passed, "checks": report.checks, "diagnosis": report.diagnosis,
            "file": report.file, "at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def record(workspace: Path, report) -> str | None:
    """The step's state (passed / started) and its latest check into progress.json; a warning (str)
    when progress.json cannot be read or written, else None."""
    try:
        set_state(workspace, report.exercise, "passed" if report.passed else "started", check=summary(report))
    except (OSError, ProgressError) as error:
        return f"progress not saved: {error}"
    return None


def latest_check(workspace: Path, name: str) -> dict | None:
    """The summary of the latest recorded check of ``name`` (None: never checked, or unreadable)."""
    try:
        entry = read_progress(Path(workspace))["steps"].get(name)
    except (OSError, ProgressError):
        return None
    check = entry.get("check") if isinstance(entry, dict) else None
    return check if isinstance(check, dict) else None


def check_file(workspace: Path, name: str, time_limit: float | None = None):
    """Check ``WORKSPACE/NAME.py`` as ``seqlab learn check NAME`` does and record it; returns
    (report, warning or None). FileNotFoundError when the file is not there."""
    from seqlab.learn.catalog import exercise
    from seqlab.learn.exercise import check
    ex = exercise(name)
    if ex is None:
        raise KeyError(f"no Implement exercise {name!r}")
    path = Path(workspace) / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; write it first with: seqlab learn start {name}")
    report = check(ex, path, time_limit=time_limit)
    return report, record(Path(workspace), report)
