"""Run a student's code in a child process, and bring back only plain data.

The trust boundary of ``seqlab learn``: the student's file is imported and called only in a child
process. What crosses back is plain data (:mod:`seqlab.learn.plain_data`: JSON and ``.npy`` without
pickle); anything else is the call's error, "returned a TYPE, expected ...". The time limit is per
check (one job: one file's function on its calls), from the moment the child has made the check's
inputs to the moment its answer is written; a check that runs over ends the child, and a fresh
child goes on with the next. One warm child runs a batch's checks one after another (numpy and
torch imported once); between checks it ends every process the student's code started (it is their
subreaper), and a check that leaves threads running retires it. The child runs in its own session,
its working folder and TMPDIR in a scratch folder; a timeout, Ctrl-C or SIGTERM ends its whole
group and every process below it and removes the scratch folder (then KeyboardInterrupt, or exit
status 143). The parent writes the request (the jobs) with pickle; only the child reads it.

    run = run_student("ws/rnn_step.py", "rnn_step", [((params, x, h), {})], time_limit=5.0)
    run.calls[0].output      # the returned value, or run.calls[0].error (a traceback's last lines)

:func:`run_students` runs several jobs in one warm child; a job may name a rules module (see it).
"""

from __future__ import annotations

import atexit
import copy
import dataclasses
import importlib
import importlib.util
import io
import json
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from seqlab.learn.plain_data import PLAIN, RESULT_LIMIT, Encoder, Unsendable, decode, type_name

PRINT_LIMIT = 4000          # characters of the student's output kept for the report
PREPARE_LIMIT = 120.0       # seconds for a child to start and make one check's inputs (seqlab's code)


@dataclasses.dataclass
class CallResult:
    """What one call did: its output, or the error it raised; the inputs it changed in place;
    ``extra``: plain data a rules module returned for the call; ``broke_rule``: the message when
    the call broke one of the exercise's rules."""
    output: Any = None
    error: str | None = None              # the last lines of the traceback
    not_implemented: bool = False
    mutated: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    extra: dict = dataclasses.field(default_factory=dict)
    broke_rule: str | None = None


@dataclasses.dataclass
class StudentRun:
    """The calls' results, or why there are none (``failure``: no file, import error, time limit)."""
    calls: list[CallResult]
    failure: str | None = None
    printed: str = ""                     # the first PRINT_LIMIT characters the code printed
    printed_chars: int = 0
    timed_out: bool = False


# --- the child ------------------------------------------------------------------------------------
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


def _entry(name: str, key) -> str:
    """params["Wh"] for a str key, pair_counts[(3, 4)] for another."""
    return f'{name}["{key}"]' if isinstance(key, str) else f"{name}[{key!r}]"


def _mutated(before, after, names: list[str]) -> list[str]:
    """Names of the arguments (params["Wh"] for a dict entry) whose values changed; a dict's key
    removed or added counts ("pair_counts[(3, 4)] (removed)")."""
    changed = []
    for name, a, b in zip(names, before, after):
        if isinstance(a, dict) and isinstance(b, dict):
            changed += [_entry(name, k) if k in b else f"{_entry(name, k)} (removed)"
                        for k in a if k not in b or not _equal(a[k], b[k])]
            changed += [f"{_entry(name, k)} (added)" for k in b if k not in a]
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            changed += [f"{name}[{i}]" for i, (x, y) in enumerate(zip(a, b)) if not _equal(x, y)]
        elif not _equal(a, b):
            changed.append(name)
    return changed


def _text(error: BaseException) -> str:
    """str(error), or a stand-in when the student's exception cannot say itself."""
    try:
        return str(error)
    except BaseException:  # noqa: BLE001 - its __str__ raised
        return f"<a {type(error).__name__} whose message cannot be printed>"


def _short_traceback(error: BaseException, path: str) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    where = f"{path}, line {frames[-1].lineno}: " if frames else ""
    return f"{where}{type(error).__name__}: {_text(error)}"


def _call(func, args, kwargs, names, job, rules, path) -> CallResult:
    """One call on its own deep copies of the arguments; notes the arguments it changed."""
    before = copy.deepcopy(args)
    given, kw = copy.deepcopy(args), copy.deepcopy(kwargs)
    result = CallResult()
    start = time.perf_counter()
    try:
        if rules is None:
            result.output = func(*given, **kw)
        else:
            result.output, result.extra = rules.call(func, given, kw, job["rules"])
    except NotImplementedError as error:
        result.error = _short_traceback(error, path)
        result.not_implemented = True
    except BaseException as error:  # noqa: BLE001 - any failure of student code is a report
        if type(error).__name__ == "RuleBroken":
            result.error = result.broke_rule = _text(error)
        else:
            result.error = _short_traceback(error, path)
    result.seconds = time.perf_counter() - start
    try:
        result.mutated = _mutated(before, given, names) + _mutated(
            [kwargs[k] for k in kwargs], [kw[k] for k in kwargs], list(kwargs))
    except Exception:  # noqa: BLE001 - an argument replaced by something that cannot be compared
        result.mutated = ["an argument (replaced by an object that cannot be compared with it)"]
    return result


class _RulesFailed(Exception):
    """The rules module's enter() failed (seqlab's code, not the student's)."""


def _run_job(job: dict, calls: list, rules) -> StudentRun:
    path, function = job["file"], job["function"]
    writer = _CappedWriter()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = writer
    done: list[CallResult] = []
    failure = None
    folder = os.path.dirname(path)
    added = folder not in sys.path
    if added:
        sys.path.append(folder)        # the student's other files import each other (after everything else)
    modules_before = set(sys.modules)
    try:
        if rules is not None:
            try:
                rules.enter(job["rules"])
            except BaseException as error:  # noqa: BLE001 - the rules module's own failure
                raise _RulesFailed(f"the exercise's rules could not be set up: {type(error).__name__}: "
                                   f"{_text(error)}") from None
        try:
            spec = importlib.util.spec_from_file_location(f"student_{function}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            func = getattr(module, function, None)
            if not callable(func):
                failure = f"{path} defines no function {function}(); keep its name and signature from the stub"
        except BaseException as error:  # noqa: BLE001
            failure = f"importing {path} failed: {_short_traceback(error, path)}"
        if failure is None:
            for args, kwargs in calls:
                names = list(job.get("arg_names") or [])[:len(args)]
                names += [f"argument {i + 1}" for i in range(len(names), len(args))]
                done.append(_call(func, args, kwargs, names, job, rules, path))
                if done[-1].not_implemented:
                    break
    except BaseException as error:  # noqa: BLE001 - whatever stopped the calls is the check's failure
        failure = failure or (str(error) if isinstance(error, _RulesFailed)
                              else f"the check stopped: {type(error).__name__}: {_text(error)}")
    finally:
        if rules is not None:
            try:
                rules.leave()
            except BaseException:  # noqa: BLE001 - the next job enters afresh
                pass
        sys.stdout, sys.stderr = saved
        if added and folder in sys.path:
            sys.path.remove(folder)
        for name in set(sys.modules) - modules_before:   # the next job's folder may have files of these names
            if os.path.dirname(str(getattr(sys.modules.get(name), "__file__", "") or "")) == folder:
                del sys.modules[name]
    return StudentRun(calls=done, failure=failure, printed="".join(writer.kept), printed_chars=writer.size)


def _answer(run: StudentRun) -> tuple[dict, list[bytes]]:
    """A run as the manifest and the arrays the parent reads (:func:`_read_answer`)."""
    encoder = Encoder()
    calls = []
    for call in run.calls:
        entry = {"error": call.error, "not_implemented": call.not_implemented, "mutated": call.mutated,
                 "seconds": call.seconds, "broke_rule": call.broke_rule, "output": ["none"], "extra": ["dict", []]}
        if call.error is None:
            try:
                entry["output"] = encoder.encode(call.output)
            except Unsendable as error:
                entry["error"] = str(error)
            except BaseException as error:  # noqa: BLE001 - the object fought back
                entry["error"] = (f"returned a {type_name(call.output)}, expected {PLAIN} "
                                  f"(reading it raised {type(error).__name__})")
        try:
            entry["extra"] = encoder.encode(call.extra if type(call.extra) is dict else {}, "extra")
        except BaseException as error:  # noqa: BLE001
            entry["error"] = entry["error"] or f"the rules module's record of the call is not plain data: {error}"
        calls.append(entry)
    return {"failure": run.failure, "printed": run.printed, "printed_chars": run.printed_chars, "calls": calls}, \
        encoder.blobs


def _write_answer(folder: str, k: int, run: StudentRun) -> None:
    manifest, blobs = _answer(run)
    offsets, at = [], 0
    for blob in blobs:
        offsets.append([at, at + len(blob)])
        at += len(blob)
    manifest["blobs"] = offsets
    for name, data in ((f"answer-{k}.bin", b"".join(blobs)),
                       (f"answer-{k}.json", json.dumps(manifest).encode("utf-8"))):
        path = os.path.join(folder, name)
        with open(path + ".part", "wb") as f:
            f.write(data)
        os.replace(path + ".part", path)


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):   # not Linux
        pass


def _child_main(argv: list[str]) -> None:
    scratch, first, events = argv[0], int(argv[1]), int(argv[2])
    sys.dont_write_bytecode = True
    _prctl(36, 1)                    # PR_SET_CHILD_SUBREAPER: the student's orphaned processes come to us
    _prctl(1, signal.SIGKILL)        # PR_SET_PDEATHSIG: end with the checker, should it be killed
    here = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", here)]   # nothing the student writes here is imported
    with open(os.path.join(scratch, "request.pkl"), "rb") as f:
        jobs = pickle.load(f)
    import numpy  # noqa: F401 - every exercise uses it, and answers are written with it
    answers = os.path.join(scratch, "answers")
    cases: dict[str, list] = {}
    threads = threading.active_count()
    for k in range(first, len(jobs)):
        job, failure, rules = jobs[k], None, None
        calls = job.get("calls")
        try:
            if "cases_of" in job:       # the exercise's own cases, made here (the caller names the catalog)
                name = job["cases_of"]
                if name not in cases:
                    catalog = importlib.import_module(job["catalog"])
                    cases[name] = [(case.args, case.kwargs) for case in catalog.exercise(name).cases()]
                calls = cases[name]
            if "rules" in job:
                rules = importlib.import_module(job.get("rules_module", "seqlab.learn.rules"))
        except BaseException as error:  # noqa: BLE001 - seqlab's own code failed; say so
            failure = f"seqlab could not prepare the check of {job['function']}(): {type(error).__name__}: {error}"
        os.write(events, f"start {k} {time.monotonic()!r}\n".encode())
        run = StudentRun(calls=[], failure=failure) if failure else _run_job(job, calls, rules)
        _write_answer(answers, k, run)
        _end_processes_below(os.getpid())
        os.write(events, f"done {k}\n".encode())
        if threading.active_count() > threads and k + 1 < len(jobs):
            os.write(events, b"retire\n")     # the student's threads still run: the next check gets a fresh child
            break
    sys.stdout.flush()
    os._exit(0)                      # no atexit handler or thread of the student's runs after this


# --- processes ---------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc; [] elsewhere)."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                found += [int(p) for p in f.read().split()]
        except FileNotFoundError:
            if os.path.isdir(f"/proc/{pid}/task/{task}"):   # a kernel without the children file
                return _children_by_scan(pid)
        except OSError:
            continue
    return found


def _children_by_scan(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2:].split()[1]) == pid:   # the field after the state
                found.append(int(entry))
    return found


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        found += kids
        todo += kids
    return found


def _signal(pids, signum) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _end_processes_below(pid: int) -> None:
    """Stop, then kill, every process below ``pid``; reap the ones that are ours."""
    for _ in range(10):
        below = _descendants(pid)
        if not below:
            break
        _signal(below, signal.SIGSTOP)          # none of them forks again while we look
        below = sorted(set(below) | set(_descendants(pid)))
        _signal(below, signal.SIGKILL)
        if pid == os.getpid():
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                try:
                    reaped, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if reaped == 0:
                    time.sleep(0.001)
        else:
            time.sleep(0.01)


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


def _end_child(child: subprocess.Popen) -> None:
    """End the child, its process group and every process below it; reap the child."""
    if child.returncode is None:
        try:
            os.killpg(child.pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            pass
        _end_processes_below(child.pid)
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()


_LIVE: dict[int, tuple[subprocess.Popen, str]] = {}   # children (and their scratch folders) still running
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
    for child, scratch in live:
        _end_child(child)
        shutil.rmtree(scratch, ignore_errors=True)


SIGNAL_MEANINGS = {
    "SIGKILL": "usually the out-of-memory killer: the code asked for more memory than the machine has "
               "(an array far larger than the exercise's, or a list that grows without end)",
    "SIGSEGV": "a crash inside native code (memory it may not touch: ctypes, np.lib.stride_tricks, or a bug "
               "in an extension)",
    "SIGABRT": "an abort inside native code (a failed internal check of a library)",
    "SIGBUS": "a bus error: memory mapped from a file became unreadable (is the disk full?)",
    "SIGFPE": "an arithmetic fault in native code (an integer division by zero)",
    "SIGXCPU": "the machine's CPU-time limit (ulimit -t)",
    "SIGXFSZ": "the machine's file-size limit (ulimit -f): the code wrote a huge file",
    "SIGTERM": "another process asked it to end",
}


def death(returncode: int | None) -> str:
    """How a process ended, in words: "died (exit status 3)", "was killed by SIGKILL (signal 9):
    usually the out-of-memory killer: ..."."""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        meaning = SIGNAL_MEANINGS.get(name)
        return f"was killed by {name} (signal {-returncode})" + (f": {meaning}" if meaning else "")
    return f"died (exit status {returncode})"


# --- the parent ------------------------------------------------------------------------------------
def _listed(value, kind, default):
    return value if isinstance(value, kind) else default


def _read_answer(folder: str, k: int) -> StudentRun:
    """The child's answer to job k, read as plain data; ValueError when it is not of that form."""
    manifest_path, blob_path = os.path.join(folder, f"answer-{k}.json"), os.path.join(folder, f"answer-{k}.bin")
    sizes = [os.path.getsize(p) for p in (manifest_path, blob_path)]
    if max(sizes) > 2 * RESULT_LIMIT:
        raise ValueError(f"an answer of {max(sizes) // 2**20} MB")
    with open(manifest_path, "rb") as f:
        manifest = json.loads(f.read().decode("utf-8"))
    with open(blob_path, "rb") as f:
        data = f.read()
    if not isinstance(manifest, dict) or not isinstance(manifest.get("calls"), list):
        raise ValueError("not an answer")
    blobs = []
    for pair in _listed(manifest.get("blobs"), list, []):
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(v) is int for v in pair)
                and 0 <= pair[0] <= pair[1] <= len(data)):
            raise ValueError("an array outside the answer")
        blobs.append(data[pair[0]:pair[1]])
    calls = []
    for entry in manifest["calls"]:
        if not isinstance(entry, dict):
            raise ValueError("a call that is not an object")
        extra = decode(entry.get("extra", ["dict", []]), blobs)
        calls.append(CallResult(
            output=decode(entry.get("output", ["none"]), blobs),
            error=_listed(entry.get("error"), str, None),
            not_implemented=entry.get("not_implemented") is True,
            mutated=[m for m in _listed(entry.get("mutated"), list, []) if isinstance(m, str)],
            seconds=float(_listed(entry.get("seconds"), (int, float), 0.0)),
            extra=extra if isinstance(extra, dict) else {},
            broke_rule=_listed(entry.get("broke_rule"), str, None)))
    return StudentRun(calls=calls, failure=_listed(manifest.get("failure"), str, None),
                      printed=_listed(manifest.get("printed"), str, "")[:PRINT_LIMIT],
                      printed_chars=int(_listed(manifest.get("printed_chars"), int, 0)))


class _Batch:
    """The jobs of one :func:`run_students` call and the children that run them."""

    def __init__(self, jobs: list[dict], time_limit: float):
        self.jobs, self.time_limit = jobs, time_limit
        self.runs: list[StudentRun | None] = [None] * len(jobs)
        self.scratch = tempfile.mkdtemp(prefix="seqlab-learn-")
        for name in ("answers", "work", "tmp"):
            os.mkdir(os.path.join(self.scratch, name))
        with open(os.path.join(self.scratch, "request.pkl"), "wb") as f:
            pickle.dump(jobs, f)

    def _spawn(self, first: int) -> tuple[subprocess.Popen, int, int]:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["TMPDIR"] = os.path.join(self.scratch, "tmp")
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, "1")        # small inputs: threads cost more than they give
        events_r, events_w = os.pipe()
        output_r, output_w = os.pipe()
        try:
            with _LIVE_LOCK:
                if _STOPPED.is_set():
                    raise Stopped("the checks were stopped")
                child = subprocess.Popen(
                    [sys.executable, "-m", "seqlab.learn.runner", self.scratch, str(first), str(events_w)],
                    stdin=subprocess.DEVNULL, stdout=output_w, stderr=output_w, pass_fds=(events_w,), env=env,
                    cwd=os.path.join(self.scratch, "work"), start_new_session=True)
                _LIVE[child.pid] = (child, self.scratch)
        finally:
            os.close(events_w)
            os.close(output_w)
        os.set_blocking(events_r, False)
        os.set_blocking(output_r, False)
        return child, events_r, output_r

    def _limit(self, k: int) -> float:
        return float(self.jobs[k].get("time_limit") or self.time_limit)

    def _finish(self, k: int, run: StudentRun) -> None:
        if self.runs[k] is None:
            self.runs[k] = run

    def _failed(self, k: int, reason: str, tail: str = "", timed_out: bool = False) -> None:
        job = self.jobs[k]
        if timed_out:
            message = (f"{job['function']}() did not finish within {self._limit(k):g} s: an endless loop? "
                       "(a loop whose condition never changes, or a while over the wrong variable)")
        else:
            last = tail.strip().splitlines()[-1] if tail.strip() else ""
            message = f"the process running {job['function']}() from {job['file']} {reason}" + (f": {last}" if last else "")
        self._finish(k, StudentRun(calls=[], failure=message, timed_out=timed_out))

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
                            self._finish(k, _read_answer(os.path.join(self.scratch, "answers"), k))
                        except (OSError, ValueError, RecursionError, UnicodeDecodeError) as error:
                            self._failed(k, f"sent back something seqlab cannot read ({type(error).__name__})")
                        k, running = k + 1, False
                        deadline = time.monotonic() + (PREPARE_LIMIT if k < end else 5.0)
                    else:
                        if k < end:
                            self._failed(k, "broke the checker's protocol (it wrote to seqlab's own channel)")
                        return k + 1
                if exited:
                    if k < end:
                        _end_child(child)
                        tail = (tail + _read_all(output_r))[-PRINT_LIMIT:]
                        self._failed(k, death(child.returncode), tail.decode("utf-8", "replace"))
                        return k + 1
                    return end
                if time.monotonic() >= deadline:
                    if k < end:
                        if running:
                            self._failed(k, "", timed_out=True)
                        else:
                            self._failed(k, f"did not get ready within {PREPARE_LIMIT:g} s (is the machine overloaded?)")
                        return k + 1
                    return end
        finally:
            _end_child(child)
            with _LIVE_LOCK:
                _LIVE.pop(child.pid, None)
            os.close(events_r)
            os.close(output_r)

    def close(self) -> None:
        """End this batch's child, wherever a signal stopped it, and remove the scratch folder."""
        with _LIVE_LOCK:
            mine = [pid for pid, (_, scratch) in _LIVE.items() if scratch == self.scratch]
            children = [_LIVE.pop(pid)[0] for pid in mine]
        for child in children:
            _end_child(child)
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


def run_students(jobs: list[dict], time_limit: float = 10.0, meanwhile=None) -> list[StudentRun]:
    """Several runs in one warm child process (the import of numpy or torch is paid once): each job
    is {"file", "function", "calls": [(args, kwargs), ...], "arg_names"}, or "cases_of" and "catalog"
    (the exercise whose cases the child makes) instead of "calls"; "time_limit": this job's own.
    ``time_limit`` is for each job: one that runs over reports the time limit, and a fresh child goes
    on with the next. ``meanwhile()`` runs in this process, in a thread, while the children work
    (the checker computes the reference's outputs there); its exception, if any, is raised at the end.

    A job with "rules" and "rules_module": in the child, ``rules_module.enter(rules)`` runs before the
    student's file is imported, each call is ``output, extra = rules_module.call(function, args,
    kwargs, rules)`` (``extra``: plain data, the call's ``CallResult.extra``), and ``leave()`` runs
    after the job; an exception whose class is named ``RuleBroken`` sets ``CallResult.broke_rule``."""
    jobs = [{**job, "file": os.path.abspath(os.fspath(job["file"]))} for job in jobs]
    runs: list[StudentRun | None] = [
        StudentRun(calls=[], failure=f"{job['file']} does not exist") if not os.path.isfile(job["file"]) else None
        for job in jobs]
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
            batch = _Batch([jobs[i] for i in todo], time_limit)
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
                time_limit: float = 10.0, arg_names: list[str] | None = None) -> StudentRun:
    """Call ``function`` of the file ``path`` on each ``(args, kwargs)`` of ``calls``, in a child
    process killed after ``time_limit`` seconds. ``arg_names`` name the positional arguments in
    messages about inputs changed in place."""
    return run_students([{"file": path, "function": function, "calls": calls, "arg_names": arg_names}],
                        time_limit)[0]


def run_student_json(path: str | os.PathLike, function: str, calls: list[tuple[tuple, dict]],
                     time_limit: float = 10.0) -> dict:
    """:func:`run_student` as JSON-able data: {"failure", "timed_out", "printed", "calls": [{"output",
    "error", "not_implemented", "mutated", "broke_rule"}]} (arrays as nested lists)."""
    from seqlab.jsonfile import to_json
    run = run_student(path, function, calls, time_limit)
    return {"failure": run.failure, "timed_out": run.timed_out, "printed": run.printed,
            "calls": [{"output": to_json(c.output), "error": c.error, "not_implemented": c.not_implemented,
                       "mutated": c.mutated, "broke_rule": c.broke_rule} for c in run.calls]}


if __name__ == "__main__":
    _child_main(sys.argv[1:])
