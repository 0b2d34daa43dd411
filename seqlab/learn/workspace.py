"""The student's workspace: one file per Implement exercise and progress.json, nothing else.

progress.json: {"steps": {step id: {"state": "started" | "passed", "updated": ISO time, ...}},
"course": the course folder it follows, when it is a teacher's}.
A passed Implement step also records "sha256", the hash of the file that passed, and a passed
command step "results", the folder its results were read from; the step's status
(:func:`step_status`) is then "passed" while the file is the same and "changed: check again" once it
is not. A pass recorded before these fields existed is kept and shown "passed (check again to
confirm)". "notes" records the notes shown once per workspace. Each read-modify-write holds the
workspace's lock (:func:`progress_lock`, WORKSPACE/.lock), so commands at once lose no entry; the
file is rewritten whole through a temporary file, so an interrupted command never leaves half of it.

In a sandbox the student's code cannot see progress.json. Without one, :func:`progress_kept` holds
progress.json as it was while the code runs and puts it back afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from seqlab.atomic import atomic_path, atomic_write_text
from seqlab.runs.lock import RunLock

DEFAULT_WORKSPACE = "seqlab-learn"
PROGRESS = "progress.json"
STATES = ("todo", "started", "passed")
CHANGED = "changed: check again"
UNCONFIRMED = "passed (check again to confirm)"
DONE = ("passed", UNCONFIRMED)        # the statuses that count as passed


class ProgressError(ValueError):
    pass


class WorkspaceError(ValueError):
    """A workspace file seqlab will not use (one that resolves outside the workspace)."""


def read_progress(workspace: Path) -> dict:
    path = Path(workspace) / PROGRESS
    if not path.exists():
        return {"steps": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ProgressError(f"{path} is not valid JSON ({error}); move it away to start the progress afresh") from None
    except OSError as error:
        raise ProgressError(f"{path} cannot be read ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), dict):
        raise ProgressError(f"{path} must hold an object with a \"steps\" object; move it away to start afresh")
    for step, entry in data["steps"].items():
        if not isinstance(entry, dict):
            raise ProgressError(f"{path}: the entry of step {step!r} is a {type(entry).__name__} ({str(entry)[:40]!r}), "
                                "not an object; move the file away to start the progress afresh")
    if not isinstance(data.get("notes", {}), dict):
        raise ProgressError(f"{path}: \"notes\" must be an object; move the file away to start the progress afresh")
    return data


@contextlib.contextmanager
def progress_lock(workspace: Path) -> Iterator[None]:
    """Hold the workspace's lock (waiting for another command that holds it): around each
    read-modify-write of progress.json."""
    workspace = Path(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    with RunLock(workspace, "seqlab learn", wait=True):
        yield


def remembered_course(workspace: Path) -> str | None:
    """The course folder the workspace follows (progress.json's "course"), or None: seqlab's own."""
    try:
        course = read_progress(Path(workspace)).get("course")
    except ProgressError:
        return None
    return course if isinstance(course, str) and course else None


def remember_course(workspace: Path, course: Path) -> None:
    """Record that the workspace follows the course folder ``course`` (its absolute path)."""
    workspace = Path(workspace)
    with progress_lock(workspace):
        progress = read_progress(workspace)
        if progress.get("course") != str(Path(course).resolve()):
            progress["course"] = str(Path(course).resolve())
            _write(workspace, progress)


def state_of(progress: dict, step: str) -> str:
    entry = progress["steps"].get(step)
    return entry.get("state", "todo") if isinstance(entry, dict) else "todo"


def _write(workspace: Path, progress: dict) -> None:
    atomic_write_text(Path(workspace) / PROGRESS, json.dumps(progress, indent=2, ensure_ascii=False) + "\n")


def set_state(workspace: Path, step: str, state: str, *, keep_passed: bool = True, drop: tuple[str, ...] = (),
              **extra) -> None:
    """Record ``state`` for ``step`` (with ``extra`` fields; ``drop``: fields to remove). With
    ``keep_passed`` a passed step never goes back to started (a Trace question answered right)."""
    workspace = Path(workspace)
    with progress_lock(workspace):
        progress = read_progress(workspace)
        if keep_passed and state_of(progress, step) == "passed" and state != "passed":
            state = "passed"
        entry = {k: v for k, v in (progress["steps"].get(step) or {}).items() if k not in drop}
        entry.update(extra, state=state, updated=time.strftime("%Y-%m-%dT%H:%M:%S"))
        progress["steps"][step] = entry
        _write(workspace, progress)


def record_check(workspace: Path, step: str, passed: bool, *, check: dict | None = None, **evidence) -> None:
    """The result of checking ``step``: passed with its evidence (``sha256=`` of the file that
    passed, or ``results=`` the folder read), or started again (a pass does not outlive a failed check).
    ``check``: the check's summary, kept as the step's latest check (the explorer shows it)."""
    latest = {} if check is None else {"check": check}
    if passed:
        set_state(workspace, step, "passed", keep_passed=False, drop=("sha256", "results"), **evidence, **latest)
    else:
        set_state(workspace, step, "started", keep_passed=False, drop=("sha256", "results"), **latest)


def note_hint(workspace: Path, step: str) -> int:
    """Count one more hint asked for ``step``; returns how many have been asked (1, 2, ...)."""
    with progress_lock(workspace):
        progress = read_progress(workspace)
        entry = dict(progress["steps"].get(step) or {"state": "started"})
        count = entry.get("hints")
        entry["hints"] = (count if isinstance(count, int) and count >= 0 else 0) + 1
        progress["steps"][step] = entry
        _write(workspace, progress)
    return entry["hints"]


def note_once(workspace: Path, key: str, text: str) -> bool:
    """Record that the note ``key`` was shown in this workspace; False when it was before."""
    with progress_lock(workspace):
        progress = read_progress(workspace)
        if key in progress.get("notes", {}):
            return False
        progress.setdefault("notes", {})[key] = {"shown": time.strftime("%Y-%m-%dT%H:%M:%S"), "text": text}
        _write(workspace, progress)
    return True


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def step_status(progress: dict, step_id: str, kind: str, workspace: Path) -> str:
    """todo, started, passed, "changed: check again" (an Implement step's file is not the one that
    passed) or "passed (check again to confirm)" (a pass recorded without its evidence)."""
    entry = progress["steps"].get(step_id)
    state = state_of(progress, step_id)
    if state not in STATES:
        state = "todo"
    if state != "passed" or kind not in ("implement", "command"):
        return state
    if kind == "command":
        return "passed" if isinstance(entry.get("results"), str) else UNCONFIRMED
    digest = entry.get("sha256")
    if not isinstance(digest, str):
        return UNCONFIRMED
    try:
        return "passed" if file_sha256(exercise_file(workspace, step_id)) == digest else CHANGED
    except (OSError, WorkspaceError):
        return CHANGED


def exercise_file(workspace: Path, name: str) -> Path:
    """WORKSPACE/NAME.py. A file there that resolves outside the workspace (a symbolic link to
    another place) raises WorkspaceError: seqlab checks and shows only the workspace's own files."""
    workspace = Path(workspace)
    path = workspace / f"{name}.py"
    if path.is_symlink() or path.exists():
        inside = workspace.resolve()
        target = path.resolve()
        if target.parent != inside:
            raise WorkspaceError(f"{path} is a link to {target}, outside the workspace {workspace}; "
                                 f"put the file itself in the workspace (cp {target} {path})")
    return path


def _snapshot(path: Path) -> tuple[str, bytes | None]:
    try:
        if path.is_symlink() or path.is_dir():
            return "other", None
        return "file", path.read_bytes()
    except FileNotFoundError:
        return "none", None
    except OSError:
        return "other", None


@contextlib.contextmanager
def progress_kept(workspace: Path) -> Iterator[None]:
    """While inside, a student's code may run: what it writes to progress.json is undone on the way
    out (the file is put back as it was, or removed if there was none)."""
    path = Path(workspace) / PROGRESS
    saved = _snapshot(path)
    try:
        yield
    finally:
        if _snapshot(path) != saved and saved[0] != "other":
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            if saved[0] == "none":
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            else:
                with atomic_path(path) as tmp:
                    tmp.write_bytes(saved[1])


def stub_function(exercise, lang: str = "en") -> str:
    """The exercise's imports and its function: the signature, the docstring (the contract, in ``lang``
    where the exercise has it), NotImplementedError (the stub file's heart, and a notebook's code cell)."""
    doc = (exercise.doc_zh if lang == "zh" and exercise.doc_zh else exercise.doc).strip("\n")
    return (f"{exercise.imports}\n\n\n"
            f"def {exercise.signature}:\n"
            f'    """{doc}\n    """\n'
            f"    raise NotImplementedError(\"{exercise.name}: write this function\")\n")


def stub_text(exercise, lang: str = "en") -> str:
    """The file ``seqlab learn start`` writes: the signature, the docstring, NotImplementedError, a test."""
    from seqlab.learn.words import say
    name = exercise.name
    title = exercise.title_zh if lang == "zh" and exercise.title_zh else exercise.title
    test = exercise.stub_test or f"    # {say('stub.call_it', lang)}\n    pass\n"
    return (f'"""{say("stub.head", lang, name=name, title=title)}\n\n'
            f'{say("stub.fill_in", lang, name=name, flag=" --lang zh" if lang == "zh" else "")}\n'
            f'{say("stub.solution", lang, name=name)}\n"""\n\n'
            f"{stub_function(exercise, lang)}\n\n"
            f"def test_{name}():\n"
            f"    # {say('stub.own_test', lang, name=name)}\n{test}")


def start(workspace: Path, exercise, lang: str = "en") -> tuple[Path, bool]:
    """Write WORKSPACE/NAME.py unless it exists. Returns (path, written); WorkspaceError when NAME.py
    is there but is not a file (a folder, a link to one)."""
    workspace = Path(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    path = workspace / f"{exercise.name}.py"
    if (path.exists() or path.is_symlink()) and not path.is_file():
        kind = "a folder" if path.is_dir() else "a link to nothing" if path.is_symlink() else "not a file"
        raise WorkspaceError(f"{path} is {kind}, not a Python file; move it away, then: "
                             f"seqlab learn start {exercise.name}")
    if path.exists():
        return path, False
    atomic_write_text(path, stub_text(exercise, lang))
    return path, True


def backup_path(workspace: Path, name: str) -> Path:
    """A free name for a backup of WORKSPACE/NAME.py: NAME.py.<time>.bak (never imported: it does not
    end in .py), NAME.py.<time>-2.bak when that is taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = Path(workspace) / f"{name}.py.{stamp}.bak"
    n = 1
    while backup.exists():
        n += 1
        backup = Path(workspace) / f"{name}.py.{stamp}-{n}.bak"
    return backup


def reset(workspace: Path, exercise, lang: str = "en") -> tuple[Path, Path | None]:
    """Write a fresh stub for ``exercise``; the old file, if any, is kept beside it as
    NAME.py.<time>.bak (never imported: it does not end in .py). Returns (path, backup or None)."""
    workspace = Path(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    path = exercise_file(workspace, exercise.name)
    backup = None
    if path.exists() or path.is_symlink():
        backup = backup_path(workspace, exercise.name)
        os.replace(path, backup)
    atomic_write_text(path, stub_text(exercise, lang))
    return path, backup
