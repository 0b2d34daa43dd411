"""Run a student's code in a child process, and bring back only plain data: the trust boundary.

The interface. A :class:`Job` is one check: the student's ``file``, its ``function`` and ``calls``
(``(args, kwargs)`` made and seeded here, never an expected value), its time limit, runtime rules,
allowed packages and helpers (its docstring says each). The child (``seqlab.learn.child.main``: the
standard library, numpy and torch, never seqlab) gets the calls as plain data (``child.plain_data``:
JSON and ``.npy``, no pickle), the ``.py`` files of the student's folder copied read-only beside it,
and sends back plain data: each output and each argument after the call. This side decides from
those (``CallResult.mutated``: inputs changed in place). A :class:`StudentRun` per job.

First each file is read with the static rules (``seqlab.learn.static_rules``; ``StudentRun.refused``).
A :class:`Launcher` starts the child (:class:`Plain`, or ``seqlab.learn.sandbox``'s), which limits its
own address space (``Launcher.memory``). A timeout, Ctrl-C or SIGTERM ends the child and all below it
and removes the scratch folder; a child killed by a signal runs its job once more in a fresh one. One
warm child runs a batch's jobs, ending what the code started between them (threads left running
retire it). Text from the child is escaped and bounded (:func:`student_text`).

    run = run_student("ws/rnn_step.py", "rnn_step", [((params, x, h), {})], time_limit=5.0)
    run.calls[0].output      # the returned value, or run.calls[0].error
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from seqlab.learn import static_rules
from seqlab.learn.child import plain_data
from seqlab.learn.child.processes import end_processes_below

CHILD = Path(__file__).resolve().parent / "child"      # the folder the child runs from
PRINT_LIMIT = 4000          # characters of the student's output kept for the report
MESSAGE_LIMIT = 1000        # characters of one error message of the student's code kept
MEMORY_LIMIT = 2 * 2**30    # bytes of address space the child may map (RLIMIT_AS): CPU torch needs about 0.7 GB
PREPARE_LIMIT = 120.0       # seconds for a child to start and make one check's inputs (seqlab's code)
MANIFEST_LIMIT = 4 * 2**20  # bytes of an answer's JSON manifest read at most (arrays travel beside it): about
#                             14 times that in Python objects at the most, whatever the child writes
FOLDER_FILES = 500          # .py files of a student's folder copied at most
FOLDER_BYTES = 20 * 2**20   # ... and their bytes


@dataclasses.dataclass
class Job:
    """One check: ``function`` of the student's ``file`` called on each ``(args, kwargs)`` of ``calls``.

    - ``time_limit``: seconds from the moment the child has made the job's inputs to the moment its
      answer is written (the import of the student's file and every call); None: run_students' own;
    - ``rules``: runtime rules (``seqlab.learn.child.rules``), run in the student's process, so
      advisory; the static rules are read from the source here, before anything runs;
    - ``packages``: the third-party packages the code may import (numpy; torch; ``regex`` where the
      exercise allows it): a sandbox makes only these importable;
    - ``helpers``: allowed helper modules, {import name: source text}, importable in the child where
      their package is not (train_bpe's GPT-2 pre-tokenizer: that module alone, not seqlab);
    - ``arg_names``: the positional arguments' names, for messages about inputs changed in place;
    - ``static``: read the file with the static rules first (False only to test the nets behind them).

    Two values that are not plain data are named here and rebuilt in the child: a
    ``numpy.random.Generator`` (its bit generator and state: get_batch's) and an
    :class:`~seqlab.learn.child.plain_data.InputFile` (train_bpe's text: copied into the child's
    inputs folder)."""
    file: str | os.PathLike
    function: str
    calls: list[tuple[tuple, dict]]
    time_limit: float | None = None       # None: run_students' time_limit
    rules: dict | None = None
    packages: tuple[str, ...] = ("numpy",)
    helpers: dict[str, str] = dataclasses.field(default_factory=dict)
    arg_names: list[str] = dataclasses.field(default_factory=list)
    static: bool = True


@dataclasses.dataclass
class CallResult:
    """What one call did: its output, or the error it raised; the inputs it changed in place;
    ``extra``: plain data the runtime rules returned for the call (op counts); ``broke_rule``: the
    message when the call broke one of the exercise's rules."""
    output: Any = None
    error: str | None = None              # the last lines of the traceback
    not_implemented: bool = False
    mutated: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    extra: dict = dataclasses.field(default_factory=dict)
    broke_rule: str | None = None


@dataclasses.dataclass
class StudentRun:
    """The calls' results, or why there are none (``failure``: no file, import error, time limit;
    ``refused``: the failure is a static rule the file breaks, nothing ran). ``note``: what the
    teacher may want to know and the student need not (a first run killed by a signal)."""
    calls: list[CallResult]
    failure: str | None = None
    failure_said: Any = None              # the failure in words said later (words.Said), where it has them
    printed: str = ""                     # the first PRINT_LIMIT characters the code printed
    printed_chars: int = 0
    timed_out: bool = False
    refused: bool = False
    note: str = ""


def student_text(text, limit: int = MESSAGE_LIMIT, lines: bool = False) -> str:
    """Text the student's code made (a message, what it printed), safe to print among seqlab's own
    lines: control and format characters (ANSI escapes, carriage returns, bidirectional overrides,
    line separators) written as escapes, newlines and tabs too unless ``lines``, at most ``limit``
    characters: "a\\x1b[2J\\npassed" for "a<ESC>[2J<newline>passed"."""
    import unicodedata
    text = str(text)
    out, size = [], 0
    for char in text:
        if char in "\n\t" and lines or unicodedata.category(char) not in _HIDDEN:
            piece = char
        elif ord(char) < 0x100:
            piece = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")
        else:
            piece = f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}"
        if size + len(piece) > limit:
            out.append(f"... ({len(text)} characters in all)")
            break
        out.append(piece)
        size += len(piece)
    return "".join(out)


_HIDDEN = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")     # control, format, separators, surrogates, unassigned


# --- arguments changed in place --------------------------------------------------------------------
def _equal(a, b) -> bool:
    import numpy as np
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape \
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, np.random.Generator):
        return isinstance(b, np.random.Generator) and a.bit_generator.state == b.bit_generator.state
    if type(a).__module__ == "torch":
        return type(b) is type(a) and a.dtype == b.dtype and a.shape == b.shape \
            and bool(((a == b) | (a.isnan() & b.isnan())).all())
    return type(a) is type(b) and a == b


def _entry(name: str, key) -> str:
    """params["Wh"] for a str key, pair_counts[(3, 4)] for another."""
    return f'{name}["{key}"]' if isinstance(key, str) else f"{name}[{key!r}]"


def _changed(name: str, before, after) -> list[str]:
    """The names of what changed between ``before`` (the checker's argument) and ``after`` (the
    child's after the call): params["Wh"] for a dict entry; a key removed or added counts."""
    if isinstance(before, dict) and isinstance(after, dict):
        changed = [_entry(name, k) if k in after else f"{_entry(name, k)} (removed)"
                   for k in before if k not in after or not _equal(before[k], after[k])]
        return changed + [f"{_entry(name, k)} (added)" for k in after if k not in before]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [f"{name}[{i}]" for i, (x, y) in enumerate(zip(before, after)) if not _equal(x, y)]
    return [] if _equal(before, after) else [name]


def mutated(args: tuple, kwargs: dict, after: list, after_kwargs: dict, names: list[str]) -> list[str]:
    """The arguments a call changed in place, by name (the child sends back every argument that can
    change; one it could not send is said as replaced)."""
    found = []
    labelled = list(zip(names, args)) + list(kwargs.items())
    sent = list(after) + [after_kwargs.get(k, _IMMUTABLE) for k in kwargs]
    for (name, before), now in zip(labelled, sent):
        if type(before) in _SKIPPED or now is _IMMUTABLE:
            continue
        if now is _UNSENDABLE:
            found.append(f"{name} (replaced by something that is not plain data)")
        else:
            found += _changed(name, before, now)
    return found


_IMMUTABLE, _UNSENDABLE = object(), object()
# arguments that cannot change in place (an InputFile is a str): the child sends none of them back
_SKIPPED = (type(None), bool, int, float, complex, str, bytes, plain_data.InputFile)


# --- starting the child ----------------------------------------------------------------------------
class Launcher:
    """How a child is started: :meth:`command` gives the argv, environment and working folder of
    ``python main.py ROOT FIRST EVENTS [PATH ...]`` for a batch whose scratch folder is ``root``
    (PATHs: folders the child adds to sys.path). Subclasses (``seqlab.learn.sandbox``) wrap the same
    program; ``describe`` says in words what isolation it gives. The other hooks: :meth:`options`
    (more arguments of ``subprocess.Popen``: a user to run as), :meth:`prepare` (once the scratch
    folder is laid out), :meth:`ended` (after each child has ended), :meth:`signal_of` (the signal a
    wrapper's exit status stands for); ``memory``: the address space the child may map (its RLIMIT_AS)."""

    describe = "a child process of its own, in its own session (no sandbox)"
    memory = MEMORY_LIMIT

    def options(self) -> dict:
        return {}

    def prepare(self, root: str) -> None:
        pass

    def ended(self, root: str) -> None:
        pass

    def signal_of(self, returncode: int | None) -> int | None:
        """The negative signal number a wrapper's exit status stands for, or None (not a wrapper)."""
        return None

    def command(self, root: str, first: int, events: int, jobs: list[Job]) -> tuple[list[str], dict, str]:
        env = dict(os.environ)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["TMPDIR"] = os.path.join(root, "tmp")
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, "1")        # small inputs: threads cost more than they give
        return ([sys.executable, str(CHILD / "main.py"), root, str(first), str(events)], env,
                os.path.join(root, "work"))


Plain = Launcher


def _exited(child: subprocess.Popen) -> bool:
    """Whether the child has exited, without reaping it (its process group id stays its own)."""
    if child.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return child.poll() is not None
    except AttributeError:   # no waitid
        return child.poll() is not None


def _end_child(child: subprocess.Popen, launcher: Launcher | None = None, scratch: str = "") -> None:
    """End the child, its process group and every process below it (and what the launcher knows of:
    the processes of its user); reap the child."""
    if child.returncode is None:
        try:
            os.killpg(child.pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            pass
        end_processes_below(child.pid)
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()
    if launcher is not None:
        launcher.ended(scratch)


_LIVE: dict[int, tuple[subprocess.Popen, str, Launcher]] = {}   # children, their scratch folders and launchers
_LIVE_LOCK = threading.Lock()
_STOPPED = threading.Event()


class Stopped(RuntimeError):
    """Raised by :func:`run_students` after :func:`end_all` (``stop=True``): no new child starts."""


@atexit.register
def end_all(stop: bool = False) -> None:
    """End every child still running and remove its scratch folder (at exit, and for a caller whose
    own signal handler stops a whole batch: ``seqlab learn grade``). ``stop``: no child starts after
    this in this process (threads still grading raise :class:`Stopped`)."""
    if stop:
        _STOPPED.set()
    with _LIVE_LOCK:
        live = list(_LIVE.values())
        _LIVE.clear()
    for child, scratch, launcher in live:
        _end_child(child, launcher, scratch)
        shutil.rmtree(scratch, ignore_errors=True)


def death(returncode: int | None, again: bool = False):
    """How a process ended, in words said later (words.toml's ``run`` and ``signals``): "died (exit
    status 3)", "was killed by SIGKILL (signal 9): a kill that cannot be caught: ..."; ``again``: the
    second time, each in a fresh child."""
    from seqlab.learn.words import entry, said
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        killed = said("run.killed_twice" if again else "run.killed", name=name, number=-returncode)
        try:
            entry(f"signals.{name}")
        except KeyError:
            return killed
        return said("run.killed_meaning", killed=killed, meaning=said(f"signals.{name}"))
    return said("run.died", code=returncode)


# --- the parent ------------------------------------------------------------------------------------
def _said_later(key: str, **values):
    from seqlab.learn.words import said
    return said(key, **values)


def _listed(value, kind, default):
    return value if isinstance(value, kind) else default


_CHILD_FAILURES = {"rules_setup": ("error",), "no_function": ("file", "function"), "import_failed": ("file", "error"),
                   "stopped": ("error",), "prepare": ("function", "error")}


def _failure_said(kind):
    """The child's failure (["no_function", {"file": ..., "function": ...}]) in words said later; None
    for anything else. The values are the student's text, escaped and bounded."""
    from seqlab.learn.words import said
    if not (isinstance(kind, list) and len(kind) == 2 and kind[0] in _CHILD_FAILURES and isinstance(kind[1], dict)):
        return None
    values = {name: student_text(str(kind[1].get(name, "")), 1000) for name in _CHILD_FAILURES[kind[0]]}
    return said(f"run.{kind[0]}", **values)


def _read_answer(folder: str, k: int, job: Job, calls: list[tuple[tuple, dict]]) -> StudentRun:
    """The child's answer to job k, read as plain data; ValueError when it is not of that form. Its
    size is bounded before anything is parsed: the manifest by MANIFEST_LIMIT, the arrays by RESULT_LIMIT."""
    manifest_path, blob_path = os.path.join(folder, f"answer-{k}.json"), os.path.join(folder, f"answer-{k}.bin")
    if os.path.getsize(manifest_path) > MANIFEST_LIMIT:
        raise ValueError(f"an answer of {os.path.getsize(manifest_path) / 2**20:.0f} MB of text, more than the "
                         f"{MANIFEST_LIMIT // 2**20} MB seqlab reads: return what the exercise asks for, not more")
    if os.path.getsize(blob_path) > 2 * plain_data.RESULT_LIMIT:
        raise ValueError(f"an answer of {os.path.getsize(blob_path) / 2**20:.0f} MB of arrays, more than the "
                         f"{2 * plain_data.RESULT_LIMIT // 2**20} MB seqlab reads")
    with open(manifest_path, "rb") as f:
        manifest = json.loads(f.read().decode("utf-8"))
    with open(blob_path, "rb") as f:
        data = f.read()
    if not isinstance(manifest, dict) or not isinstance(manifest.get("calls"), list) or len(manifest["calls"]) > len(calls):
        raise ValueError("not an answer")
    blobs = []
    for pair in _listed(manifest.get("blobs"), list, []):
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(v) is int for v in pair)
                and 0 <= pair[0] <= pair[1] <= len(data)):
            raise ValueError("an array outside the answer")
        blobs.append(data[pair[0]:pair[1]])
    results = []
    names = list(job.arg_names)
    for entry, (args, kwargs) in zip(manifest["calls"], calls):
        if not isinstance(entry, dict):
            raise ValueError("a call that is not an object")
        extra = plain_data.decode(entry.get("extra", ["dict", []]), blobs)
        labels = names[:len(args)] + [f"argument {i + 1}" for i in range(len(names), len(args))]
        after = [_sent(node, blobs) for node in _listed(entry.get("after"), list, [])][:len(args)]
        after += [_IMMUTABLE] * (len(args) - len(after))
        after_kwargs = {pair[0]: _sent(pair[1], blobs) for pair in _listed(entry.get("after_kwargs"), list, [])
                        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)}
        error, broke_rule = _listed(entry.get("error"), str, None), _listed(entry.get("broke_rule"), str, None)
        results.append(CallResult(
            output=plain_data.decode(entry.get("output", ["none"]), blobs),
            error=None if error is None else student_text(error),
            not_implemented=entry.get("not_implemented") is True,
            mutated=mutated(args, kwargs, after, after_kwargs, labels),
            seconds=float(_listed(entry.get("seconds"), (int, float), 0.0)),
            extra=extra if isinstance(extra, dict) else {},
            broke_rule=None if broke_rule is None else student_text(broke_rule)))
    failure = _listed(manifest.get("failure"), str, None)
    return StudentRun(calls=results, failure=None if failure is None else student_text(failure),
                      failure_said=None if failure is None else _failure_said(manifest.get("failure_kind")),
                      printed=student_text(_listed(manifest.get("printed"), str, ""), PRINT_LIMIT, lines=True),
                      printed_chars=int(_listed(manifest.get("printed_chars"), int, 0)))


def _sent(node, blobs):
    """An argument as the child sent it back after the call."""
    if node == ["none"]:
        return _IMMUTABLE
    if node == ["unsendable"]:
        return _UNSENDABLE
    return plain_data.decode(node, blobs)


def _copy_folder(source: Path, dest: Path) -> None:
    """The .py files of ``source`` (and its subfolders, hidden ones and links that leave it aside),
    read-only copies under ``dest``: FOLDER_FILES files and FOLDER_BYTES bytes at most."""
    count = size = 0
    top = source.resolve()
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in sorted(files):
            path = Path(folder) / name
            if not name.endswith(".py") or name.startswith("."):
                continue
            try:
                real = path.resolve()
                if top not in real.parents or not real.is_file():
                    continue                      # a link out of the folder: not the student's file
                size += real.stat().st_size
            except OSError:
                continue
            count += 1
            if count > FOLDER_FILES or size > FOLDER_BYTES:
                return
            target = dest / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(real, target)
            target.chmod(0o444)


def _write_helpers(helpers: dict[str, str], folder: Path) -> None:
    """Each helper module's source at its dotted name's path (its packages made empty)."""
    folder.mkdir()
    for name, source in helpers.items():
        parts = name.split(".")
        for k in range(1, len(parts)):
            package = folder.joinpath(*parts[:k])
            package.mkdir(exist_ok=True)
            (package / "__init__.py").touch()
        folder.joinpath(*parts[:-1], parts[-1] + ".py").write_text(source, encoding="utf-8")


class _Batch:
    """The jobs of one :func:`run_students` call and the children that run them. The scratch folder
    is the child's ROOT (``seqlab.learn.child.main``)."""

    def __init__(self, jobs: list[Job], time_limit: float, launcher: Launcher):
        self.jobs, self.time_limit, self.launcher = jobs, time_limit, launcher
        self.runs: list[StudentRun | None] = [None] * len(jobs)
        self.killed: dict[int, str] = {}        # job -> how its first child died of a signal
        self.scratch = tempfile.mkdtemp(prefix="seqlab-learn-")
        root = Path(self.scratch)
        for name in ("answers", "work", "tmp", "student", "helpers", "inputs"):
            (root / name).mkdir()
        folders: dict[str, int] = {}
        encoder = plain_data.Encoder()
        request = []
        for job in jobs:
            path = Path(job.file)
            key = str(path.parent)
            if key not in folders:
                folders[key] = len(folders)
                _copy_folder(path.parent, root / "student" / str(folders[key]))
            _write_helpers(job.helpers, root / "helpers" / str(len(request)))
            request.append({"index": len(request), "folder": folders[key], "file": path.name, "function": job.function,
                            "rules": job.rules, "packages": list(job.packages),
                            "calls": [[encoder.encode(tuple(args), "the arguments"), encoder.encode(dict(kwargs), "the arguments")]
                                      for args, kwargs in job.calls]})
        for name, source in encoder.files:
            shutil.copyfile(source, root / "inputs" / name)
        offsets, at = [], 0
        for blob in encoder.blobs:
            offsets.append([at, at + len(blob)])
            at += len(blob)
        (root / "request.bin").write_bytes(b"".join(encoder.blobs))
        (root / "request.json").write_text(json.dumps({"jobs": request, "blobs": offsets,
                                                       "limits": {"address_space": launcher.memory}}), encoding="utf-8")
        launcher.prepare(self.scratch)

    def _spawn(self, first: int) -> tuple[subprocess.Popen, int, int]:
        events_r, events_w = os.pipe()
        output_r, output_w = os.pipe()
        try:
            argv, env, cwd = self.launcher.command(self.scratch, first, events_w, self.jobs)
            with _LIVE_LOCK:
                if _STOPPED.is_set():
                    raise Stopped("the checks were stopped")
                child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output_w, stderr=output_w,
                                         pass_fds=(events_w,), env=env, cwd=cwd, start_new_session=True,
                                         **self.launcher.options())
                _LIVE[child.pid] = (child, self.scratch, self.launcher)
        finally:
            os.close(events_w)
            os.close(output_w)
        os.set_blocking(events_r, False)
        os.set_blocking(output_r, False)
        return child, events_r, output_r

    def _limit(self, k: int) -> float:
        return float(self.jobs[k].time_limit or self.time_limit)

    def _finish(self, k: int, run: StudentRun) -> None:
        if self.runs[k] is None:
            if k in self.killed:
                run.note = f"its first run {self.killed[k]}; it was run again in a fresh process"
            self.runs[k] = run

    def _failed(self, k: int, reason="", tail: str = "", timed_out: bool = False) -> None:
        from seqlab.learn.words import said
        job = self.jobs[k]
        if timed_out:
            message = said("run.timed_out", function=job.function, seconds=f"{self._limit(k):g}")
        else:
            last = student_text(tail.strip().splitlines()[-1], 300) if tail.strip() else ""
            message = said("run.process_last" if last else "run.process", function=job.function, file=str(job.file),
                           reason=reason, last=last)
        self._finish(k, StudentRun(calls=[], failure=str(message), failure_said=message, timed_out=timed_out))

    def _answer(self, k: int) -> StudentRun:
        return _read_answer(os.path.join(self.scratch, "answers"), k, self.jobs[k], self.jobs[k].calls)

    def run_from(self, first: int) -> int:
        """Run jobs ``first``, ... in one child until they are done or one of them ends it; returns
        the index of the next job to give a fresh child."""
        child, events_r, output_r = self._spawn(first)
        tail, pending = b"", b""
        k, running = first, False
        deadline = time.monotonic() + PREPARE_LIMIT
        end = len(self.jobs)
        try:
            while True:
                now = time.monotonic()
                readable, _, _ = select.select([events_r, output_r], [], [], max(0.0, min(deadline - now, 0.05)))
                if output_r in readable:
                    tail = (tail + _read_all(output_r))[-PRINT_LIMIT:]
                exited = _exited(child)
                chunk = _read_all(events_r)           # what a child wrote before it exited is all here now
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    words = line.decode("ascii", "replace").split()
                    if k < end and not running and len(words) == 3 and words[:2] == ["start", str(k)]:
                        running = True
                        try:
                            started = float(words[2])
                        except ValueError:
                            started = now
                        now = time.monotonic()
                        deadline = (started if 0 <= now - started < PREPARE_LIMIT else now) + self._limit(k)
                    elif words == ["retire"] and not running:
                        return k                     # this child's student threads live on: a fresh one goes on
                    elif k < end and running and words == ["done", str(k)]:
                        try:
                            self._finish(k, self._answer(k))
                        except (OSError, ValueError, RecursionError, UnicodeDecodeError) as error:
                            said = student_text(error, 300) if type(error) is ValueError else type(error).__name__
                            self._failed(k, _said_later("run.unreadable", what=said))
                        k, running = k + 1, False
                        deadline = time.monotonic() + (PREPARE_LIMIT if k < end else 5.0)
                    else:
                        if k < end:
                            self._failed(k, _said_later("run.protocol"))
                        return k + 1
                if exited:
                    if k < end:
                        _end_child(child, self.launcher, self.scratch)
                        tail = (tail + _read_all(output_r))[-PRINT_LIMIT:]
                        code = self.launcher.signal_of(child.returncode) or child.returncode
                        if code is not None and code < 0 and k not in self.killed:
                            self.killed[k] = death(code)        # a signal from outside fails nothing: once more
                            return k
                        self._failed(k, death(code, again=k in self.killed and code is not None and code < 0), tail.decode("utf-8", "replace"))
                        return k + 1
                    return end
                if time.monotonic() >= deadline:
                    if k < end:
                        if running:
                            self._failed(k, "", timed_out=True)
                        else:
                            self._failed(k, _said_later("run.not_ready", seconds=f"{PREPARE_LIMIT:g}"))
                        return k + 1
                    return end
        finally:
            _end_child(child, self.launcher, self.scratch)
            with _LIVE_LOCK:
                _LIVE.pop(child.pid, None)
            os.close(events_r)
            os.close(output_r)

    def close(self) -> None:
        """End this batch's child, wherever a signal stopped it, and remove the scratch folder."""
        with _LIVE_LOCK:
            mine = [pid for pid, (_, scratch, _) in _LIVE.items() if scratch == self.scratch]
            children = [_LIVE.pop(pid)[0] for pid in mine]
        for child in children:
            _end_child(child, self.launcher, self.scratch)
        shutil.rmtree(self.scratch, ignore_errors=True)



def _read_all(fd: int) -> bytes:
    """What the pipe holds now, at most 1 MB of it (a flood is read on the next turn, its end kept)."""
    data = b""
    for _ in range(16):
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data = (data + chunk)[-4 * PRINT_LIMIT:]
    return data


def stop_signals():
    """SIGINT and SIGTERM raise here (KeyboardInterrupt; SystemExit 143, said on stderr), so that the
    batch's ``finally`` ends the child's group and removes its scratch folder before the command exits."""
    from seqlab.training.interrupt import signals_request_stop

    def stop(signum: int) -> bool:
        if signum == signal.SIGTERM:
            print("SIGTERM: stopped; the student's code and every process it started were ended", file=sys.stderr)
        return False
    return signals_request_stop(stop)


def run_students(jobs: list[Job], time_limit: float = 10.0, meanwhile=None,
                 launcher: Launcher | None = None) -> list[StudentRun]:
    """Several jobs in one warm child process (the import of numpy or torch is paid once).
    ``time_limit`` is for each job without its own: one that runs over reports the time limit, and a
    fresh child goes on with the next. ``meanwhile()`` runs in this process, in a thread, while the
    children work (the checker computes the reference's outputs there); its exception, if any, is
    raised at the end. ``launcher``: how the child starts (default :class:`Plain`; a caller chooses a
    sandbox with ``seqlab.learn.sandbox``)."""
    jobs = [dataclasses.replace(job, file=os.path.abspath(os.fspath(job.file))) for job in jobs]
    runs: list[StudentRun | None] = [
        StudentRun(calls=[], failure=f"{job.file} does not exist", failure_said=_said_later("run.missing", file=str(job.file)))
        if not os.path.isfile(job.file) else None
        for job in jobs]
    for i, job in enumerate(jobs):
        if runs[i] is None and job.static:
            refused = static_rules.refusal(job.file, job.function, job.rules, job.packages, tuple(job.helpers))
            if refused:
                runs[i] = StudentRun(calls=[], failure=refused, failure_said=refused.said, refused=True)
    todo = [i for i, run in enumerate(runs) if run is None]
    helper, box = None, {}
    if meanwhile is not None:
        def work():
            try:
                meanwhile()
            except BaseException as error:  # noqa: BLE001 - raised in the caller's thread below
                box["error"] = error
        helper = threading.Thread(target=work, name="seqlab-learn-meanwhile", daemon=True)
        helper.start()
    if todo:
        with stop_signals():
            batch = _Batch([jobs[i] for i in todo], time_limit, launcher or Plain())
            try:
                k = 0
                while k < len(todo):
                    if _STOPPED.is_set():
                        raise Stopped("the checks were stopped")
                    k = batch.run_from(k)
            finally:
                batch.close()
        for i, run in zip(todo, batch.runs):
            runs[i] = run
    if helper is not None:
        helper.join()
        if "error" in box:
            raise box["error"]
    return runs  # type: ignore[return-value]


def run_student(path: str | os.PathLike, function: str, calls: list[tuple[tuple, dict]],
                time_limit: float = 10.0, arg_names: list[str] | None = None, **job) -> StudentRun:
    """Call ``function`` of the file ``path`` on each ``(args, kwargs)`` of ``calls``, in a child
    process ended after ``time_limit`` seconds; ``job``: the other fields of a :class:`Job`."""
    return run_students([Job(path, function, calls, arg_names=list(arg_names or []), **job)], time_limit)[0]


def run_student_json(path: str | os.PathLike, function: str, calls: list[tuple[tuple, dict]],
                     time_limit: float = 10.0) -> dict:
    """:func:`run_student` as JSON-able data: {"failure", "timed_out", "printed", "calls": [{"output",
    "error", "not_implemented", "mutated", "broke_rule"}]} (arrays as nested lists)."""
    from seqlab.jsonfile import to_json
    run = run_student(path, function, calls, time_limit)
    return {"failure": run.failure, "timed_out": run.timed_out, "printed": run.printed,
            "calls": [{"output": to_json(c.output), "error": c.error, "not_implemented": c.not_implemented,
                       "mutated": c.mutated, "broke_rule": c.broke_rule} for c in run.calls]}
