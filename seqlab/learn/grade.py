"""Grade a class: every student's workspace checked the same way, each student apart, with the reason.

``seqlab learn grade SUBMISSIONS --out REPORT``: SUBMISSIONS holds one folder (or .zip) per student,
named after the student. Each submission is checked in a sandbox of its own (``seqlab.learn.sandbox``:
bubblewrap, else a user of its own, else only with ``--no-sandbox``), one per core; reference outputs
are computed once per exercise for the whole class (:func:`shared`). progress.json is never read.

After every sandbox has ended, the parent writes REPORT, built beside it and renamed into place
(a teacher's other files in it stay): grades.csv and grades.json (``gradebook.COLUMNS``: student,
exercise, passed, status (``gradebook.STATUSES``), score, max_score (``--points FILE``, 1 each by default),
failed_checks, diagnosis, message, flags; grades.json also the mistake's id, where, the isolation
and notes), totals.csv (each student's score), summary.md (the statuses counted) and summary.png.
The grades and the files written from them are ``seqlab.learn.gradebook``'s.
``flags`` (``seqlab.learn.flags``) tell the teacher what to look at and never change a grade.
``--gradescope`` grades /autograder/submission into /autograder/results/results.json (only that
file): the feedback in ``--lang``, with the lesson's paragraph inline and no loopback link
(``--lesson-url``: a hosted site); the isolation is said on stdout, which students do not see.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import pickle
import shutil
import stat
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path, PurePosixPath

from seqlab.atomic import atomic_write_text
from seqlab.learn.gradebook import (
    Grade, gradescope_results, lesson_url_problem, read_points, set_points, write_report,
)

UNZIP_BYTES = 20 * 2**20      # bytes of .py files one zip may unpack to
UNZIP_FILES = 500             # entries one zip may hold
class SubmissionError(ValueError):
    """A submission that cannot be graded as it is (a zip that is too large, holds links or paths
    outside itself); the message is the reason every one of its exercises fails."""


# --- submissions -----------------------------------------------------------------------------------
def submissions(folder: Path) -> list[tuple[str, Path]]:
    """(student, folder or .zip) for each entry of ``folder``, by name; hidden entries are skipped."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SubmissionError(f"{folder} is not a folder of submissions (one folder or .zip per student)")
    found = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name.startswith("__"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            found.append((entry.name, entry))
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            found.append((entry.stem, entry))
    return found


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack the .py files of ``archive`` into ``dest`` (made here); returns ``dest``. Refused
    (SubmissionError): absolute paths, "..", links, more than UNZIP_FILES entries or UNZIP_BYTES
    bytes unpacked (counted as they are read, whatever the zip's headers say)."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(archive) as z:
            members = z.infolist()
            if len(members) > UNZIP_FILES:
                raise SubmissionError(f"{archive.name} holds {len(members)} entries; at most {UNZIP_FILES} are unpacked")
            total = 0
            for info in members:
                name = info.filename.replace("\\", "/")
                if info.is_dir() or not name.endswith(".py") or name.startswith("__MACOSX/"):
                    continue
                parts = PurePosixPath(name).parts
                if name.startswith("/") or ".." in parts or any(":" in p for p in parts):
                    raise SubmissionError(f"{archive.name} holds {info.filename!r}, a path outside the archive")
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise SubmissionError(f"{archive.name} holds {info.filename!r}, a link; put the file itself in the zip")
                target = dest.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as source, open(target, "wb") as out:
                    while chunk := source.read(65536):
                        total += len(chunk)
                        if total > UNZIP_BYTES:
                            raise SubmissionError(f"{archive.name} unpacks to more than {UNZIP_BYTES // 2**20} MB of .py files")
                        out.write(chunk)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError) as error:
        raise SubmissionError(f"{archive.name} is not a zip that can be read ({error})") from None
    return dest


def workspace_in(folder: Path, names: list[str]) -> Path:
    """The folder of a submission that holds its exercise files: ``folder`` itself, or the one folder
    inside it (one or two levels down) with the most of them."""
    def count(f: Path) -> int:
        return sum((f / f"{n}.py").is_file() or (f / f"{n}.py").is_symlink() for n in names)
    if count(folder):
        return folder
    inner = [d for d in folder.glob("*") if d.is_dir() and not d.is_symlink()]
    inner += [d for d in folder.glob("*/*") if d.is_dir() and not d.is_symlink()]
    best = max(inner, key=count, default=None)
    return best if best is not None and count(best) else folder


# --- reference outputs shared by every submission ----------------------------------------------------
class _Memo:
    """``function``'s outputs by the bytes of its arguments, computed once for the whole class; each
    caller gets its own copy. Arguments that cannot be pickled are computed afresh each time."""

    def __init__(self, function):
        self.function = function
        self.outputs: dict[bytes, object] = {}
        self.lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        try:
            key = hashlib.sha256(pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)).digest()
        except Exception:  # noqa: BLE001 - not picklable: no caching
            return self.function(*args, **kwargs)
        with self.lock:
            if key in self.outputs:
                return copy.deepcopy(self.outputs[key])
        output = self.function(*args, **kwargs)
        with self.lock:
            self.outputs[key] = output
        return copy.deepcopy(output)


def _per_case(function):
    """``function(case)`` computed once per case object (the shared cases are kept, so ids stay theirs)."""
    done, lock = {}, threading.Lock()

    def cached(case):
        with lock:
            if id(case) not in done:
                done[id(case)] = (case, function(case))
            return done[id(case)][1]
    return cached


def shared(exercise, seed: int | None = None):
    """The exercise with its cases made once, and its reference, catalogued mistakes and per-case
    computations (finite-difference gradients, per-step terms) done once per input for every
    submission of a class. ``seed`` (``grade --seed``): the cases are drawn again from it
    (``seqlab.learn.kit.drawn_with``), but for the worked example, which stays the lesson's."""
    from seqlab.learn.kit import drawn_with
    from seqlab.learn.words import said
    cases = exercise.cases()
    if seed is not None:
        with drawn_with(seed):
            drawn = exercise.cases()
        worked = said("cases.worked")
        cases = [own if not own.spec and own.label == worked else new for own, new in zip(cases, drawn)]

    def made_cases():
        return cases
    made_cases.__dict__.update(getattr(exercise.cases, "__dict__", {}))   # what the exercise marked on its own
    reference = _Memo(exercise.reference())
    mistakes = tuple(dataclasses.replace(m, implementation=_Memo(m.implementation))
                     if m.implementation is not None else m for m in exercise.mistakes)
    changes = {"cases": made_cases, "reference": lambda: reference, "mistakes": mistakes}
    fields = {f.name for f in dataclasses.fields(exercise)}
    for name in ("gradients", "step_terms"):
        if name in fields and getattr(exercise, name) is not None:
            changes[name] = _per_case(getattr(exercise, name))
    return dataclasses.replace(exercise, **changes)


# --- grading -----------------------------------------------------------------------------------------
def status_of(report) -> str:
    """A checked exercise's status (STATUSES): passed; refused (a rule, read before anything ran or
    met at run time: the "rules" check failed); not submitted (the function is the stub as handed
    out); timed out; crashed (it raised on the exercise's own cases, did not import, or its process
    died); else wrong (it ran, and what it returned is not right). Code that is a catalogued mistake
    exactly (its mutant gives the same outputs on every case, and raises where it raises: Wx transposed
    fails on a non-square case) is wrong, not crashed: the raise is part of the wrong formula."""
    failed = {c["name"] for c in report.checks if not c["passed"]}
    if report.passed:
        return "passed"
    if "rules" in failed:
        return "refused"
    if report.not_implemented:
        return "not submitted"
    if report.timed_out:
        return "timed out"
    exact = bool((report.diagnosis or {}).get("exact"))
    return "crashed" if "runs" in failed and not exact else "wrong"


def _failed(student: str, exercise: str, check: str, message, status: str) -> Grade:
    """A grade with no check run: one failed ``check`` saying ``message`` (a words.Said or English)."""
    from seqlab.learn.judge import Report
    report = Report(exercise=exercise, file="")
    report.add(check, False, message)
    return Grade(student, exercise, False, [check], "", str(message), status=status, report=report)


def _grades_of(student: str, exercises, reports: dict, missing: dict[str, object], files: dict[str, str]) -> list[Grade]:
    from seqlab.learn.feedback import diagnosis_title, first_failure
    grades = []
    for ex in exercises:
        if ex.name in missing:
            grades.append(_failed(student, ex.name, "file", missing[ex.name], "not submitted"))
            continue
        report = reports[ex.name]
        d = report.diagnosis or {}
        grades.append(Grade(student, ex.name, report.passed, [c["name"] for c in report.checks if not c["passed"]],
                            diagnosis_title(report), first_failure(report), d.get("mistake"), status_of(report),
                            where=str(d.get("where") or ""), note=report.note, file=files[ex.name], report=report))
    return grades


def grade_submission(student: str, source: Path, exercises, scratch: Path, time_limit: float | None = None,
                     launcher=None) -> list[Grade]:
    """The grades of one submission (a folder or a .zip); every failure is a grade, never an exception.
    ``launcher``: how its child starts (its own sandbox)."""
    from seqlab.learn.judge import check_many
    from seqlab.learn.words import said
    from seqlab.learn.workspace import WorkspaceError, exercise_file
    names = [ex.name for ex in exercises]
    try:
        unpacked = scratch / "unzipped" / hashlib.sha1(str(source).encode()).hexdigest()[:16]
        folder = unpack(source, unpacked) if source.is_file() else source
        workspace = workspace_in(folder, names)
        zips = sorted(folder.glob("*.zip")) if folder.is_dir() else []
        if workspace == folder and not any((folder / f"{n}.py").exists() for n in names) and len(zips) == 1:
            workspace = workspace_in(unpack(zips[0], unpacked), names)     # a zip uploaded as it was
        items, missing = [], {}           # missing: exercise -> why there is no file (English, or words said later)
        for ex in exercises:
            try:
                path = exercise_file(workspace, ex.name)
            except WorkspaceError as error:
                missing[ex.name] = str(error).replace(str(workspace) + os.sep, "")
                continue
            if path.is_file():
                items.append((ex, path))
            else:
                missing[ex.name] = said("grade.no_file", name=ex.name)
        reports = dict(zip((ex.name for ex, _ in items),
                           check_many(items, time_limit=time_limit, launcher=launcher))) if items else {}
        return _grades_of(student, exercises, reports, missing, {ex.name: str(path) for ex, path in items})
    except SubmissionError as error:
        reason, status = str(error), "refused"
    except Exception as error:  # noqa: BLE001 - one submission's failure never stops the others
        from seqlab.learn.runner import Stopped
        if isinstance(error, Stopped):
            raise
        reason, status = f"the grader could not check this submission: {type(error).__name__}: {error}", "crashed"
    return [_failed(student, ex.name, "submission", reason, status) for ex in exercises]


def grade_all(entries: list[tuple[str, Path]], exercises, *, workers: int | None = None,
              time_limit: float | None = None, progress: bool = True, isolation=None,
              seed: int | None = None) -> list[Grade]:
    """Grade every (student, folder or zip), ``workers`` at a time (default: the cores), each in its
    own sandbox (``isolation``, a ``seqlab.learn.sandbox.Isolation``; default: ``for_grade()``), with a
    progress bar on stderr; the grades in the order of ``entries``, flagged (``seqlab.learn.flags``)
    once every child has ended. ``seed``: the cases drawn again for the whole class (:func:`shared`). Ctrl-C or SIGTERM ends every child at once
    (:func:`seqlab.learn.runner.end_all`) and raises as usual."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm import tqdm

    from seqlab.learn.flags import flag_grades
    from seqlab.learn.runner import end_all, stop_signals
    from seqlab.learn.sandbox import for_grade
    isolation = isolation or for_grade()
    workers = max(1, workers or os.cpu_count() or 1)
    exercises = [shared(ex, seed) for ex in exercises]
    results: dict[int, list[Grade]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="seqlab-grade-"))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="seqlab-grade")
    try:
        with stop_signals(), tqdm(total=len(entries), desc="grading", unit="submission", disable=not progress,
                                   file=sys.stderr) as bar:
            futures = {pool.submit(grade_submission, student, source, exercises, scratch, time_limit,
                                   isolation.launcher(i)): i
                       for i, (student, source) in enumerate(entries)}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                bar.update(1)
        pool.shutdown(wait=True)
        end_all()                                   # every child has ended: nothing of a student's runs on
        grades = [g for i in range(len(entries)) for g in results[i]]
        flag_grades(grades, exercises)
        return grades
    except BaseException:
        end_all(stop=True)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        shutil.rmtree(scratch, ignore_errors=True)


# --- the command ---------------------------------------------------------------------------------------
def run_grade_command(args) -> int:
    """``seqlab learn grade`` (see the module's docstring)."""
    from seqlab.learn.catalog import all_exercises
    every = all_exercises()
    known = [ex.name for ex in every]
    if args.time_limit is not None and not args.time_limit > 0:
        return _usage(f"--time-limit must be > 0, got {args.time_limit}")
    if args.workers is not None and args.workers < 1:
        return _usage(f"--workers must be >= 1, got {args.workers}")
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed < 2**63:
        return _usage(f"--seed must be an integer from 0 to 2**63 - 1, got {seed}")
    chosen = known
    if args.exercises:
        chosen = [n.strip() for n in args.exercises.split(",") if n.strip()]
        unknown = [n for n in chosen if n not in known]
        if unknown:
            import difflib
            close = difflib.get_close_matches(unknown[0], known, n=1)
            return _usage(f"--exercises: no exercise {unknown[0]!r}" + (f"; did you mean {close[0]}?" if close else ""))
    points = {}
    if args.points is not None:
        try:
            points = read_points(args.points, known)
        except OSError as error:
            return _failure(f"cannot read --points {args.points}: {error.strerror or error}")
        except ValueError as error:
            return _usage(str(error))
        if not args.exercises:
            chosen = [n for n in known if n in points]      # the table names what is graded
    exercises = [ex for ex in every if ex.name in chosen]
    lesson_url = getattr(args, "lesson_url", None)
    if lesson_url is not None and not args.gradescope:
        return _usage("--lesson-url is for the feedback students read on Gradescope: give it with --gradescope")
    if lesson_url is not None and lesson_url_problem(lesson_url):
        return _usage(lesson_url_problem(lesson_url))
    start = time.monotonic()
    from seqlab.learn.sandbox import NoIsolation, for_grade
    if args.gradescope:
        if args.submissions is not None or args.out is not None:
            return _usage("--gradescope reads /autograder/submission and writes /autograder/results/results.json; "
                          "give no SUBMISSIONS or --out with it")
        isolation = for_grade(no_sandbox=args.no_sandbox, gradescope=True)     # never fails for lack of one
        grades = grade_all([("submission", args.submission)], exercises, workers=1, time_limit=args.time_limit,
                           progress=not args.no_progress, isolation=isolation, seed=seed)
        set_points(grades, points)
        results = gradescope_results(grades, exercises, time.monotonic() - start, getattr(args, "lang", "en"),
                                     lesson_url)
        args.results.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.results, json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        print(f"{results['output']} Score {results['score']:g} of {sum(t['max_score'] for t in results['tests']):g}; "
              f"wrote {args.results}")
        print(f"isolation: {isolation.report()}")                 # stdout: the teacher's, hidden from students
        if seed is not None:
            print(f"cases drawn with --seed {seed} (the worked examples kept)")
        for g in grades:
            if g.flags or g.note:
                print(f"{g.exercise}: " + "; ".join(g.flags + ([g.note] if g.note else [])))
        return 0
    if args.submissions is None or args.out is None:
        return _usage("give SUBMISSIONS (a folder with one workspace folder or .zip per student) and --out REPORT, "
                      "or --gradescope")
    try:
        entries = submissions(args.submissions)
    except SubmissionError as error:
        return _failure(str(error))
    if not entries:
        return _failure(f"{args.submissions} holds no submission (one folder or .zip per student)")
    try:
        isolation = for_grade(no_sandbox=args.no_sandbox)
    except NoIsolation as error:
        return _failure(str(error))
    grades = grade_all(entries, exercises, workers=args.workers, time_limit=args.time_limit,
                       progress=not args.no_progress, isolation=isolation, seed=seed)
    set_points(grades, points)
    paths = write_report(grades, exercises, args.out, isolation.report(), seed)
    passed = sum(g.passed for g in grades)
    print(f"graded {len(entries)} submissions x {len(exercises)} exercises in {time.monotonic() - start:.0f} s: "
          f"{passed} of {len(grades)} pass ({isolation.kind} isolation; {sum(bool(g.flags) for g in grades)} flagged). "
          "Wrote " + ", ".join(str(p) for p in paths))
    return 0


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _failure(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1
