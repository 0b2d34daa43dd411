"""The student's workspace: one file per Implement exercise and progress.json, nothing else.

progress.json: {"steps": {step id: {"state": "started" | "passed", "updated": ISO time, ...}}}.
It is rewritten whole through a temporary file, so an interrupted command never leaves half of it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from seqlab.atomic import atomic_write_text

DEFAULT_WORKSPACE = "seqlab-learn"
PROGRESS = "progress.json"
STATES = ("todo", "started", "passed")


class ProgressError(ValueError):
    pass


def read_progress(workspace: Path) -> dict:
    path = Path(workspace) / PROGRESS
    if not path.exists():
        return {"steps": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ProgressError(f"{path} is not valid JSON ({error}); move it away to start the progress afresh") from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), dict):
        raise ProgressError(f"{path} must hold an object with a \"steps\" object; move it away to start afresh")
    return data


def state_of(progress: dict, step: str) -> str:
    entry = progress["steps"].get(step)
    return entry.get("state", "todo") if isinstance(entry, dict) else "todo"


def set_state(workspace: Path, step: str, state: str, **extra) -> None:
    """Record ``state`` for ``step``; a passed step never goes back to started."""
    workspace = Path(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    progress = read_progress(workspace)
    previous = state_of(progress, step)
    if previous == "passed" and state != "passed":
        state = "passed"
    entry = dict(progress["steps"].get(step) or {})
    entry.update(extra, state=state, updated=time.strftime("%Y-%m-%dT%H:%M:%S"))
    progress["steps"][step] = entry
    atomic_write_text(workspace / PROGRESS, json.dumps(progress, indent=2, ensure_ascii=False) + "\n")


def stub_function(exercise) -> str:
    """The exercise's imports and its function: the signature, the docstring, NotImplementedError
    (the stub file's heart, and a notebook's code cell)."""
    doc = exercise.doc.strip("\n")
    return (f"{exercise.imports}\n\n\n"
            f"def {exercise.signature}:\n"
            f'    """{doc}\n    """\n'
            f"    raise NotImplementedError(\"{exercise.name}: write this function\")\n")


def stub_text(exercise) -> str:
    """The file ``seqlab learn start`` writes: the signature, the docstring, NotImplementedError, a test."""
    test = exercise.stub_test or "    # call your function on a small input and assert what the lesson says it gives\n    pass\n"
    return (f'"""Exercise {exercise.name}: {exercise.title}.\n\n'
            f"Fill in the body, then run:  seqlab learn check {exercise.name}\n"
            f'(`seqlab learn solution {exercise.name}` shows seqlab\'s own version.)\n"""\n\n'
            f"{stub_function(exercise)}\n\n"
            f"def test_{exercise.name}():\n"
            f"    # your own test: run it with  python -m pytest {exercise.name}.py\n{test}")


def start(workspace: Path, exercise) -> tuple[Path, bool]:
    """Write WORKSPACE/NAME.py unless it exists. Returns (path, written)."""
    workspace = Path(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / f"{exercise.name}.py"
    if path.exists():
        return path, False
    atomic_write_text(path, stub_text(exercise))
    return path, True
