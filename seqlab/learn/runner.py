"""Run a student's function in a separate process with a time limit.

The parent pickles a request (the file, the function's name, a list of calls) to a temporary file
and starts ``python -m seqlab.learn.runner REQUEST RESULT``. The child imports the student's file
without writing bytecode beside it, makes each call on its own deep copy of the arguments, notes
any argument the call changed in place, caps what the code prints, and pickles one record per
call. A crash, an endless loop or a flood of output costs the child only: the parent kills it at
the time limit and reports what happened, and nothing in the student's workspace is written.

:func:`run_student` is the entry point for other tools (the checker, the explorer)::

    run = run_student("ws/rnn_step.py", "rnn_step", [((params, x, h), {})], time_limit=5.0)
    run.calls[0].output      # the returned value, or run.calls[0].error (a traceback's last lines)

:func:`run_student_json` returns the same as JSON-able data (arrays as nested lists).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import io
import math
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

PRINT_LIMIT = 4000   # characters of the student's output kept for the report


@dataclasses.dataclass
class CallResult:
    """What one call did: its output, or the error it raised; the inputs it changed in place."""
    output: Any = None
    error: str | None = None              # the last lines of the traceback
    not_implemented: bool = False
    mutated: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0


@dataclasses.dataclass
class StudentRun:
    """The calls' results, or why there are none (``failure``: no file, import error, time limit)."""
    calls: list[CallResult]
    failure: str | None = None
    printed: str = ""                     # the first PRINT_LIMIT characters the code printed
    printed_chars: int = 0
    timed_out: bool = False


class _CappedWriter(io.TextIOBase):
    """A stdout that keeps the first PRINT_LIMIT characters and only counts the rest."""

    def __init__(self):
        self.kept: list[str] = []
        self.size = 0

    def write(self, text):
        text = str(text)
        if self.size < PRINT_LIMIT:
            self.kept.append(text[:PRINT_LIMIT - self.size])
        self.size += len(text)
        return len(text)

    def writable(self):
        return True


def _equal(a, b) -> bool:
    import numpy as np
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    if type(a).__module__ == "torch":
        return type(b) is type(a) and a.shape == b.shape and bool(((a == b) | (a.isnan() & b.isnan())).all())
    return a == b


def _mutated(before, after, names: list[str]) -> list[str]:
    """Names of the arguments (params["Wh"] for a dict entry) whose values changed."""
    changed = []
    for name, a, b in zip(names, before, after):
        if isinstance(a, dict) and isinstance(b, dict):
            changed += [f'{name}["{k}"]' for k in a if k in b and not _equal(a[k], b[k])]
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            changed += [f"{name}[{i}]" for i, (x, y) in enumerate(zip(a, b)) if not _equal(x, y)]
        elif not _equal(a, b):
            changed.append(name)
    return changed


def _short_traceback(error: BaseException, path: str) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    where = f"{path}, line {frames[-1].lineno}: " if frames else ""
    return f"{where}{type(error).__name__}: {error}"


def _run_job(job: dict) -> StudentRun:
    path, function = job["file"], job["function"]
    writer = _CappedWriter()
    sys.stdout = sys.stderr = writer
    calls: list[CallResult] = []
    failure = None
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.append(folder)        # the student's other files import each other (after everything else)
    try:
        spec = importlib.util.spec_from_file_location(f"student_{function}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        func = getattr(module, function, None)
        if not callable(func):
            failure = f"{path} defines no function {function}(); keep its name and signature from the stub"
    except BaseException as error:  # noqa: BLE001 - any failure of student code is a report
        failure = f"importing {path} failed: {_short_traceback(error, path)}"
    if failure is None and "cases_of" in job:           # the exercise's own cases, made here
        # The caller names the catalog module (runner stays below the exercises that use it).
        catalog = importlib.import_module(job["catalog"])
        job["calls"] = [(case.args, case.kwargs) for case in catalog.exercise(job["cases_of"]).cases()]
    if failure is None:
        for args, kwargs in job["calls"]:
            names = list(job.get("arg_names") or [])[:len(args)]
            names += [f"argument {i + 1}" for i in range(len(names), len(args))]
            before = copy.deepcopy(args)
            given = copy.deepcopy(args)
            kw = copy.deepcopy(kwargs)
            result = CallResult()
            start = time.perf_counter()
            try:
                result.output = func(*given, **kw)
            except NotImplementedError as error:
                result.error = _short_traceback(error, path)
                result.not_implemented = True
            except BaseException as error:  # noqa: BLE001
                result.error = _short_traceback(error, path)
            result.seconds = time.perf_counter() - start
            result.mutated = _mutated(before, given, names) + _mutated(
                [kwargs[k] for k in kwargs], [kw[k] for k in kwargs], list(kwargs))
            try:
                pickle.dumps(result.output)
            except Exception:  # noqa: BLE001
                result.error = result.error or (f"returned a {type(result.output).__name__}, "
                                                "which cannot be sent back for checking")
                result.output = None
            calls.append(result)
            if result.not_implemented:
                break
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return StudentRun(calls=calls, failure=failure, printed="".join(writer.kept), printed_chars=writer.size)


def _child(request_path: str, result_path: str) -> None:
    sys.dont_write_bytecode = True
    with open(request_path, "rb") as f:
        jobs = pickle.load(f)
    runs = []
    for job in jobs:
        runs.append(_run_job(job))
        with open(result_path + ".part", "wb") as f:     # what is done so far survives a later hang
            pickle.dump(runs, f)
        os.replace(result_path + ".part", result_path)


def run_students(jobs: list[dict], time_limit: float = 10.0, meanwhile=None) -> list[StudentRun]:
    """Several runs in one child process (the import of numpy or torch is paid once): each job is
    {"file", "function", "calls": [(args, kwargs), ...], "arg_names"}. ``time_limit`` is for all
    of them; a job not finished by then reports the time limit, and so do the jobs after it.
    ``meanwhile()`` runs in this process while the child works (the checker computes the
    reference's outputs there, so the two imports of torch overlap on two cores)."""
    jobs = [{**job, "file": os.path.abspath(os.fspath(job["file"]))} for job in jobs]
    missing = {i: StudentRun(calls=[], failure=f"{job['file']} does not exist")
               for i, job in enumerate(jobs) if not os.path.isfile(job["file"])}
    todo = [job for i, job in enumerate(jobs) if i not in missing]
    done: list[StudentRun] = []
    timed_out, died = False, None
    if todo:
        with tempfile.TemporaryDirectory(prefix="seqlab-learn-") as scratch:
            request, result = os.path.join(scratch, "request.pkl"), os.path.join(scratch, "result.pkl")
            with open(request, "wb") as f:
                pickle.dump(todo, f)
            env = dict(os.environ)
            root = str(Path(__file__).resolve().parents[2])
            env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            output = os.path.join(scratch, "fd-output.txt")
            with open(output, "wb") as out:
                child = subprocess.Popen([sys.executable, "-m", "seqlab.learn.runner", request, result],
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env, cwd=scratch)
                started = time.monotonic()
                try:
                    if meanwhile is not None:
                        meanwhile()
                    child.wait(timeout=max(0.0, time_limit - (time.monotonic() - started)))
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                    timed_out = True
            if os.path.exists(result):
                with open(result, "rb") as f:
                    done = pickle.load(f)
            if not timed_out and len(done) < len(todo):
                with open(output, "rb") as f:
                    tail = f.read()[-PRINT_LIMIT:].decode("utf-8", "replace").strip()
                died = f"died (exit status {child.returncode})" + (f": {tail.splitlines()[-1]}" if tail else "")
    elif meanwhile is not None:
        meanwhile()
    runs, k = [], 0
    for i, job in enumerate(jobs):
        if i in missing:
            runs.append(missing[i])
            continue
        if k < len(done):
            runs.append(done[k])
        elif timed_out:
            runs.append(StudentRun(calls=[], timed_out=True, failure=(
                f"{job['function']}() did not finish within {time_limit:g} s: an endless loop? "
                "(a loop whose condition never changes, or a while over the wrong variable)")))
        else:
            runs.append(StudentRun(calls=[], failure=f"the process running {job['function']}() from "
                                                     f"{job['file']} {died}"))
        k += 1
    return runs


def run_student(path: str | os.PathLike, function: str, calls: list[tuple[tuple, dict]],
                time_limit: float = 10.0, arg_names: list[str] | None = None) -> StudentRun:
    """Call ``function`` of the file ``path`` on each ``(args, kwargs)`` of ``calls``, in a child
    process killed after ``time_limit`` seconds. ``arg_names`` name the positional arguments in
    messages about inputs changed in place."""
    return run_students([{"file": path, "function": function, "calls": calls, "arg_names": arg_names}],
                        time_limit)[0]


def jsonable(value: Any) -> Any:
    """Arrays and tensors as nested lists, tuples as lists, bytes as latin-1 text, dict keys as str."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if hasattr(value, "tolist"):
        return value.detach().tolist() if hasattr(value, "detach") else value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def run_student_json(path: str | os.PathLike, function: str, calls: list[tuple[tuple, dict]],
                     time_limit: float = 10.0) -> dict:
    """:func:`run_student` as JSON-able data: {"failure", "timed_out", "printed", "calls": [{"output",
    "error", "not_implemented", "mutated"}]}. For the explorer's "yours" beside the reference."""
    run = run_student(path, function, calls, time_limit)
    return {"failure": run.failure, "timed_out": run.timed_out, "printed": run.printed,
            "calls": [{"output": jsonable(c.output), "error": c.error, "not_implemented": c.not_implemented,
                       "mutated": c.mutated} for c in run.calls]}


if __name__ == "__main__":
    from seqlab.learn.runner import (
        _child as child,  # pickle the classes under their real module
    )
    child(sys.argv[1], sys.argv[2])
