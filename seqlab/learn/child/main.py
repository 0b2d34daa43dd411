"""The child: runs a student's functions on the checker's cases and writes back plain data.

    python main.py ROOT FIRST EVENTS [PATH ...]

ROOT is the child's folder, laid out by the checker (``seqlab.learn.runner`` documents the request):
``request.json`` and ``request.bin`` (the jobs, their calls as plain data), ``student/K/`` (the .py
files of the job's folder K, read-only in the sandbox), ``helpers/`` (the allowed helper modules),
``inputs/`` (input files), ``answers/`` (written here), ``work/`` (the working folder) and ``tmp/``.
Jobs FIRST, FIRST + 1, ... run one after another; on the file descriptor EVENTS the child says
``start K MONOTONIC`` when job K's inputs are made (the time limit runs from there) and ``done K``
when ``answers/answer-K.json`` and ``.bin`` are in place; ``retire`` when the student's threads
still run, so that a fresh child takes the next job. PATHs (a sandbox's packages) join sys.path. Before
any student code, the child limits its own address space (the request's ``limits``) and can gain
no privilege (PR_SET_NO_NEW_PRIVS); its own modules are not importable by their names.

Nothing here decides whether an answer is right: the checker does, from the outputs and from the
arguments as they are after each call. Replacing this program's functions from the student's code
gains nothing but wrong or missing answers.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)                  # run as a file: plain_data, processes and rules sit beside it
import plain_data  # noqa: E402
import processes  # noqa: E402
import rules as runtime_rules  # noqa: E402 - imports torch only when a job has rules

sys.path.remove(HERE)
for _name in ("plain_data", "processes", "rules"):      # a student's own rules.py is theirs, not these
    sys.modules[f"_seqlab_child_{_name}"] = sys.modules.pop(_name)

PRINT_LIMIT = 4000          # characters of the student's output kept for the report
# kinds of argument a function cannot change in place: not sent back after the call
IMMUTABLE = (type(None), bool, int, float, complex, str, bytes)


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


def _text(error: BaseException) -> str:
    """str(error), or a stand-in when the student's exception cannot say itself."""
    try:
        return str(error)
    except BaseException:  # noqa: BLE001 - its __str__ raised
        return f"<a {type(error).__name__} whose message cannot be printed>"


def _short_traceback(error: BaseException, path: str) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    where = f"{os.path.basename(path)}, line {frames[-1].lineno}: " if frames else ""
    return f"{where}{type(error).__name__}: {_text(error)}"


def _after(encoder: plain_data.Encoder, value, where: str):
    """An argument as it is after the call (["none"] for one that cannot change in place)."""
    if type(value) in IMMUTABLE:
        return ["none"]
    try:
        return encoder.encode(value, where)
    except BaseException:  # noqa: BLE001 - replaced by something that is not plain data
        return ["unsendable"]


def _call(function, args: list, kwargs: dict, rules, rule_set, path: str, encoder) -> dict:
    """One call on its own freshly decoded arguments: its output (or error) and the arguments after it."""
    entry = {"error": None, "not_implemented": False, "broke_rule": None, "output": ["none"], "extra": ["dict", []]}
    output, extra = None, {}
    start = time.perf_counter()
    try:
        if rules is None:
            output = function(*args, **kwargs)
        else:
            output, extra = rules.call(function, args, kwargs, rule_set)
    except NotImplementedError as error:
        entry["error"], entry["not_implemented"] = _short_traceback(error, path), True
    except BaseException as error:  # noqa: BLE001 - any failure of student code is a report
        if type(error).__name__ == "RuleBroken":
            entry["error"] = entry["broke_rule"] = _text(error)
        else:
            entry["error"] = _short_traceback(error, path)
    entry["seconds"] = time.perf_counter() - start
    if entry["error"] is None:
        try:
            entry["output"] = encoder.encode(output)
        except plain_data.Unsendable as error:
            entry["error"] = str(error)
        except BaseException as error:  # noqa: BLE001 - the object fought back
            entry["error"] = (f"returned a {plain_data.type_name(output)}, expected {plain_data.PLAIN} "
                              f"(reading it raised {type(error).__name__})")
    try:
        entry["extra"] = encoder.encode(extra if type(extra) is dict else {}, "extra")
    except BaseException:  # noqa: BLE001 - the rules' record is the student's process's too
        entry["extra"] = ["dict", []]
    entry["after"] = [_after(encoder, a, f"argument {i + 1}") for i, a in enumerate(args)]
    entry["after_kwargs"] = [[k, _after(encoder, v, k)] for k, v in kwargs.items()]
    return entry


def _helpers_wanted(folder: str) -> str | None:
    """The job's helper modules' folder, unless their packages are importable here already (outside a
    sandbox, where seqlab is installed, its own module is the same code)."""
    try:
        tops = [name for name in os.listdir(folder) if not name.startswith(".")]
    except OSError:
        return None
    if not tops or all(importlib.util.find_spec(name.removesuffix(".py")) is not None for name in tops):
        return None
    return folder


def _run_job(root: str, job: dict, calls: list, rules) -> dict:
    """Import the job's file and make its calls; the answer's manifest (its blobs in ``encoder``)."""
    folder = os.path.join(root, "student", str(job["folder"]))
    path = os.path.join(folder, job["file"])
    function_name = job["function"]
    writer = _CappedWriter()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = writer
    encoder = plain_data.Encoder()
    done: list[dict] = []
    failure = None
    kind: list = []                        # the failure's kind and values: the checker says it in the student's language
    helpers = os.path.join(root, "helpers", str(job["index"]))
    added = [p for p in (_helpers_wanted(helpers), folder) if p and p not in sys.path]
    sys.path += added                      # after everything else: a student's numpy.py shadows nothing
    modules_before = set(sys.modules)
    try:
        if rules is not None:
            try:
                rules.enter(job["rules"])
            except BaseException as error:  # noqa: BLE001 - the rules' own failure
                failure = f"the exercise's rules could not be set up: {type(error).__name__}: {_text(error)}"
                kind = ["rules_setup", {"error": f"{type(error).__name__}: {_text(error)}"}]
        if failure is None:
            try:
                spec = importlib.util.spec_from_file_location(f"student_{function_name}", path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module          # as an import does: dataclasses look their module up
                spec.loader.exec_module(module)
                function = getattr(module, function_name, None)
                if not callable(function):
                    failure = f"{job['file']} defines no function {function_name}(); keep its name and signature from the stub"
                    kind = ["no_function", {"file": job["file"], "function": function_name}]
            except BaseException as error:  # noqa: BLE001
                failure = f"importing {job['file']} failed: {_short_traceback(error, path)}"
                kind = ["import_failed", {"file": job["file"], "error": _short_traceback(error, path)}]
        if failure is None:
            for args, kwargs in calls:
                done.append(_call(function, args, kwargs, rules, job["rules"], path, encoder))
                if done[-1]["not_implemented"]:
                    break
    except BaseException as error:  # noqa: BLE001 - whatever stopped the calls is the check's failure
        if failure is None:
            failure = f"the check stopped: {type(error).__name__}: {_text(error)}"
            kind = ["stopped", {"error": f"{type(error).__name__}: {_text(error)}"}]
    finally:
        if rules is not None:
            try:
                rules.leave()
            except BaseException:  # noqa: BLE001 - the next job enters afresh
                pass
        sys.stdout, sys.stderr = saved
        for p in added:
            if p in sys.path:
                sys.path.remove(p)
        sys.modules.pop(f"student_{function_name}", None)
        for name in set(sys.modules) - modules_before:   # the next job's folder may have files of these names
            where = os.path.abspath(str(getattr(sys.modules.get(name), "__file__", "") or ""))
            if any(where.startswith(p + os.sep) for p in added):
                del sys.modules[name]
    manifest = {"failure": failure, "failure_kind": kind, "printed": "".join(writer.kept), "printed_chars": writer.size,
                "calls": done}
    return manifest, encoder.blobs


def _write_answer(folder: str, k: int, manifest: dict, blobs: list[bytes]) -> None:
    offsets, at = [], 0
    for blob in blobs:
        offsets.append([at, at + len(blob)])
        at += len(blob)
    manifest["blobs"] = offsets
    for name, data in ((f"answer-{k}.bin", b"".join(blobs)), (f"answer-{k}.json", json.dumps(manifest).encode())):
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


def _read_request(root: str) -> tuple[list[dict], list[bytes], dict]:
    with open(os.path.join(root, "request.json"), "rb") as f:
        manifest = json.loads(f.read().decode("utf-8"))
    with open(os.path.join(root, "request.bin"), "rb") as f:
        data = f.read()
    return manifest["jobs"], [data[a:b] for a, b in manifest["blobs"]], manifest.get("limits", {})


def _limit_memory(limits: dict) -> None:
    """RLIMIT_AS, soft and hard (the student's code cannot raise it again)."""
    size = limits.get("address_space") if isinstance(limits, dict) else None
    if isinstance(size, int) and size > 0:
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
        except (ImportError, ValueError, OSError):     # not POSIX, or a limit below this one already
            pass


def main(argv: list[str]) -> None:
    root, first, events = argv[0], int(argv[1]), int(argv[2])
    sys.dont_write_bytecode = True
    _prctl(36, 1)                    # PR_SET_CHILD_SUBREAPER: the student's orphaned processes come to us
    _prctl(1, signal.SIGKILL)        # PR_SET_PDEATHSIG: end with the checker, should it be killed
    _prctl(38, 1)                    # PR_SET_NO_NEW_PRIVS: no setuid program gives the code more rights
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd(), HERE)] + argv[3:]  # the student's folder: per job
    jobs, blobs, limits = _read_request(root)
    _limit_memory(limits)
    import numpy  # noqa: F401 - every exercise uses it, and answers are written with it
    inputs = os.path.join(root, "inputs")
    threads = threading.active_count()
    for k in range(first, len(jobs)):
        job, rules = jobs[k], None
        try:
            calls = [(list(plain_data.decode(args, blobs, inputs=inputs)), plain_data.decode(kwargs, blobs, inputs=inputs))
                     for args, kwargs in job["calls"]]
            rules = runtime_rules if job.get("rules") else None
        except BaseException as error:  # noqa: BLE001 - the request could not be read; say so
            calls, failure = None, f"the check of {job['function']}() could not be prepared: {type(error).__name__}: {error}"
            kind = ["prepare", {"function": job["function"], "error": f"{type(error).__name__}: {error}"}]
        os.write(events, f"start {k} {time.monotonic()!r}\n".encode())
        if calls is None:
            manifest, answer_blobs = {"failure": failure, "failure_kind": kind, "printed": "", "printed_chars": 0,
                                      "calls": []}, []
        else:
            manifest, answer_blobs = _run_job(root, job, calls, rules)
        _write_answer(os.path.join(root, "answers"), k, manifest, answer_blobs)
        processes.end_processes_below(os.getpid())
        os.write(events, f"done {k}\n".encode())
        if threading.active_count() > threads and k + 1 < len(jobs):
            os.write(events, b"retire\n")     # the student's threads still run: the next check gets a fresh child
            break
    sys.stdout.flush()
    os._exit(0)                      # no atexit handler or thread of the student's runs after this


if __name__ == "__main__":
    main(sys.argv[1:])
