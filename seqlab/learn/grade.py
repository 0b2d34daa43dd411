"""Grade a class: every student's workspace checked the same way, each student apart, with the reason.

``seqlab learn grade SUBMISSIONS --out REPORT``: SUBMISSIONS holds one folder (or .zip) per student,
named after the student. Each submission is checked in a sandbox of its own (``seqlab.learn.sandbox``:
bubblewrap, else a user of its own, else only with ``--no-sandbox``), one per core; reference outputs
are computed once per exercise for the whole class (:func:`shared`). progress.json is never read.

After every sandbox has ended, the parent writes REPORT, built beside it and renamed into place
(a teacher's other files in it stay): grades.csv and grades.json (:data:`COLUMNS`: student,
exercise, passed, status (:data:`STATUSES`), score, max_score (``--points FILE``, 1 each by default),
failed_checks, diagnosis, message, flags; grades.json also the mistake's id, where, the isolation
and notes), totals.csv (each student's score), summary.md (the statuses counted) and summary.png.
``flags`` (``seqlab.learn.flags``) tell the teacher what to look at and never change a grade.
``--gradescope`` grades /autograder/submission into /autograder/results/results.json (only that
file): the feedback in ``--lang``, with the lesson's paragraph inline and no loopback link
(``--lesson-url``: a hosted site); the isolation is said on stdout, which students do not see.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import glob
import hashlib
import io
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
from collections import Counter
from pathlib import Path, PurePosixPath

from seqlab.atomic import atomic_path, atomic_write_text
from seqlab.learn.words import say

UNZIP_BYTES = 20 * 2**20      # bytes of .py files one zip may unpack to
UNZIP_FILES = 500             # entries one zip may hold
REPORT_FILES = ("grades.csv", "grades.json", "totals.csv", "summary.md", "summary.png")
# a row's status, in the order summary.md counts them (see status_of)
STATUSES = ("passed", "wrong", "crashed", "timed out", "not submitted", "refused")


class SubmissionError(ValueError):
    """A submission that cannot be graded as it is (a zip that is too large, holds links or paths
    outside itself); the message is the reason every one of its exercises fails."""


@dataclasses.dataclass
class Grade:
    student: str
    exercise: str
    passed: bool
    failed_checks: list[str]
    diagnosis: str = ""            # the catalogued mistake's title, "" when none fits
    message: str = ""              # the first failed check's message
    mistake: str | None = None     # the catalogued mistake's id
    status: str = ""               # one of STATUSES ("": passed or wrong, from ``passed``)
    max_score: float = 1.0         # the exercise's points (--points)
    where: str = ""                # the diagnosis's where: what differs and where (also when no mistake fits)
    flags: list[str] = dataclasses.field(default_factory=list)   # for the teacher (seqlab.learn.flags)
    note: str = ""                 # for the teacher: the check's first run was killed from outside, ...
    file: str = ""                 # the file graded (not in the report)
    report: object = dataclasses.field(default=None, repr=False, compare=False)   # the check's Report (feedback)

    def __post_init__(self) -> None:
        self.status = self.status or ("passed" if self.passed else "wrong")
        if self.status not in STATUSES or (self.status == "passed") != bool(self.passed):
            raise ValueError(f"a grade that {'passed' if self.passed else 'failed'} has status {self.status!r}")

    @property
    def score(self) -> float:
        return self.max_score if self.passed else 0.0

    def feedback(self, lang: str = "en", lesson_url: str | None = None) -> str:
        """What the student reads away from seqlab (Gradescope): ``report_lines`` with no explorer link,
        the lesson's paragraph on the mistake inline, links to ``lesson_url``'s site where given."""
        from seqlab.learn.feedback import report_lines
        return "\n".join(report_lines(self.report, lang, lesson_url, away=True)) if self.report is not None else ""

    def row(self) -> dict:
        """grades.csv's columns, as values (COLUMNS)."""
        return {name: value(self) for name, (value, _) in COLUMNS.items()}

    def record(self) -> dict:
        """grades.json's entry: the row, the mistake's id, the diagnosis's where and the note."""
        return {**self.row(), "mistake": self.mistake, "where": self.where, "note": self.note}


def _joined(items: list[str]) -> str:
    return "; ".join(items)


def _number(value: float) -> str:
    return f"{value:g}"


# grades.csv's columns: name -> (its value of a Grade, the value as the CSV writes it); a column added
# here is in grades.csv and grades.json
COLUMNS = {
    "student": (lambda g: g.student, str),
    "exercise": (lambda g: g.exercise, str),
    "passed": (lambda g: g.passed, lambda v: "true" if v else "false"),
    "status": (lambda g: g.status, str),
    "score": (lambda g: g.score, _number),
    "max_score": (lambda g: g.max_score, _number),
    "failed_checks": (lambda g: list(g.failed_checks), _joined),
    "diagnosis": (lambda g: g.diagnosis, str),
    "message": (lambda g: g.message, str),
    "flags": (lambda g: list(g.flags), _joined),
}


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


def shared(exercise):
    """The exercise with its cases made once, and its reference, catalogued mistakes and per-case
    computations (finite-difference gradients, per-step terms) done once per input for every
    submission of a class."""
    cases = exercise.cases()

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
    died); else wrong (it ran, and what it returned is not right)."""
    failed = {c["name"] for c in report.checks if not c["passed"]}
    if report.passed:
        return "passed"
    if "rules" in failed:
        return "refused"
    if report.not_implemented:
        return "not submitted"
    if report.timed_out:
        return "timed out"
    return "crashed" if "runs" in failed else "wrong"


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
              time_limit: float | None = None, progress: bool = True, isolation=None) -> list[Grade]:
    """Grade every (student, folder or zip), ``workers`` at a time (default: the cores), each in its
    own sandbox (``isolation``, a ``seqlab.learn.sandbox.Isolation``; default: ``for_grade()``), with a
    progress bar on stderr; the grades in the order of ``entries``, flagged (``seqlab.learn.flags``)
    once every child has ended. Ctrl-C or SIGTERM ends every child at once
    (:func:`seqlab.learn.runner.end_all`) and raises as usual."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm import tqdm

    from seqlab.learn.flags import flag_grades
    from seqlab.learn.runner import end_all, stop_signals
    from seqlab.learn.sandbox import for_grade
    isolation = isolation or for_grade()
    workers = max(1, workers or os.cpu_count() or 1)
    exercises = [shared(ex) for ex in exercises]
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


# --- the report -------------------------------------------------------------------------------------
def totals(grades: list[Grade]) -> list[dict]:
    """totals.csv's rows, one per student in the grades' order: student, score, max_score, passed
    (exercises passed), exercises."""
    rows: dict[str, dict] = {}
    for g in grades:
        row = rows.setdefault(g.student, {"student": g.student, "score": 0.0, "max_score": 0.0, "passed": 0,
                                          "exercises": 0})
        row["score"] += g.score
        row["max_score"] += g.max_score
        row["passed"] += g.passed
        row["exercises"] += 1
    return list(rows.values())


def _csv(rows: list[dict], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_report(grades: list[Grade], exercises, out: Path, isolation: str = "") -> list[Path]:
    """grades.csv, grades.json, totals.csv (one row per student: a total row inside grades.csv would
    break a gradebook's import), summary.md and summary.png, built in a folder beside ``out`` and renamed
    into place: the folder whole when ``out`` is new, else each file (a teacher's other files in
    ``out`` stay); nothing else is written. ``isolation``: how the students were kept apart, in words.
    Returns the paths."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_builds(out)
    build = out.with_name(f".{out.name}.tmp{os.getpid()}")
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir()
    try:
        rows = [{name: COLUMNS[name][1](value) for name, value in g.row().items()} for g in grades]
        total_rows = [{**t, "score": _number(t["score"]), "max_score": _number(t["max_score"])} for t in totals(grades)]
        texts = {"grades.csv": _csv(rows, list(COLUMNS)),
                 "grades.json": json.dumps({"isolation": isolation, "grades": [g.record() for g in grades]},
                                           indent=1, ensure_ascii=False) + "\n",
                 "totals.csv": _csv(total_rows, ["student", "score", "max_score", "passed", "exercises"]),
                 "summary.md": summary_markdown(grades, exercises, isolation)}
        for name, text in texts.items():
            (build / name).write_text(text, encoding="utf-8", errors="backslashreplace")
        _summary_png(grades, exercises, build / "summary.png")
        if out.exists():
            for name in REPORT_FILES:
                os.replace(build / name, out / name)
            build.rmdir()
        else:
            os.replace(build, out)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return [out / name for name in REPORT_FILES]


def _remove_stale_builds(out: Path) -> None:
    """What a killed grader left of this report's own build (``.REPORT.tmpPID``), and nothing else."""
    for path in out.parent.glob(f".{glob.escape(out.name)}.tmp*"):
        pid = path.name[len(out.name) + 5:]
        if pid.isdigit() and not _alive(int(pid)) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pass_rates(grades: list[Grade], exercises) -> list[tuple[str, int, int]]:
    """(exercise, passed, students) in the exercises' order."""
    return [(ex.name, sum(g.passed for g in grades if g.exercise == ex.name),
             sum(1 for g in grades if g.exercise == ex.name)) for ex in exercises]


def status_counts(grades: list[Grade], exercises) -> list[tuple[str, dict[str, int]]]:
    """(exercise, {status: students}) in the exercises' order, every status of STATUSES counted."""
    return [(ex.name, {status: sum(1 for g in grades if g.exercise == ex.name and g.status == status)
                       for status in STATUSES}) for ex in exercises]


def common_diagnoses(grades: list[Grade], limit: int = 15) -> list[tuple[str, str, int]]:
    """(exercise, diagnosis, students) of the most common diagnoses."""
    counts = Counter((g.exercise, g.diagnosis) for g in grades if not g.passed and g.diagnosis)
    return [(ex, d, n) for (ex, d), n in counts.most_common(limit)]


def summary_markdown(grades: list[Grade], exercises, isolation: str = "") -> str:
    students = {g.student for g in grades}
    lines = [f"# Grades: {len(students)} students, {len(exercises)} exercises", "",
             *([f"Isolation: {isolation}.", ""] if isolation else []),
             "## Pass rate per exercise", "", "| exercise | passed | of | rate |", "| --- | ---: | ---: | ---: |"]
    for name, passed, total in pass_rates(grades, exercises):
        lines.append(f"| {name} | {passed} | {total} | {100 * passed / total if total else 0:.0f}% |")
    counts = status_counts(grades, exercises)
    lines += ["", "## Status per exercise", "",
              "Wrong: it ran and returned something else; crashed: it raised, did not import or its process "
              "died; not submitted: no file, or the stub as handed out; refused: it breaks a rule (read "
              "before it ran, or met as it ran), or the submission could not be unpacked.", "",
              "| exercise | " + " | ".join(STATUSES) + " |", "| --- |" + " ---: |" * len(STATUSES)]
    lines += [f"| {name} | " + " | ".join(str(n[s]) for s in STATUSES) + " |" for name, n in counts]
    lines.append("| all exercises | " + " | ".join(str(sum(n[s] for _, n in counts)) for s in STATUSES) + " |")
    lines += ["", "## The most common diagnoses", ""]
    common = common_diagnoses(grades)
    if common:
        lines += ["| students | exercise | diagnosis |", "| ---: | --- | --- |"]
        lines += [f"| {n} | {ex} | {d} |" for ex, d, n in common]
    else:
        lines.append("No failure was diagnosed as a catalogued mistake.")
    lines += ["", "## Students", "", "Their totals are in totals.csv.", "",
              "| student | passed | of | score | max score |", "| --- | ---: | ---: | ---: | ---: |"]
    for t in totals(grades):
        lines.append(f"| {t['student']} | {t['passed']} | {t['exercises']} | {t['score']:g} | {t['max_score']:g} |")
    flagged = [g for g in grades if g.flags]
    lines += ["", "## Flags for the teacher", ""]
    if flagged:
        lines += ["A flag never changes a grade: it says what to look at.", "",
                  "| student | exercise | flags |", "| --- | --- | --- |"]
        lines += [f"| {g.student} | {g.exercise} | {'; '.join(g.flags)} |" for g in flagged]
    else:
        lines.append("No submission is flagged.")
    noted = [g for g in grades if g.note]
    if noted:
        lines += ["", "## Notes", ""] + [f"- {g.student}, {g.exercise}: {g.note}" for g in noted]
    return "\n".join(lines) + "\n"


# summary.png's colour of each status
STATUS_COLOURS = {"passed": "#54a24b", "wrong": "#e45756", "crashed": "#b279a2", "timed out": "#f58518",
                  "not submitted": "#bab0ac", "refused": "#4c78a8"}


def summary_figure(grades: list[Grade], exercises):
    """summary.png's figure: the students of each status per exercise (stacked), and the most common
    diagnoses; both axes count whole students (integer ticks)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    counts = status_counts(grades, exercises)
    common = common_diagnoses(grades, limit=10)
    fig, axes = plt.subplots(1, 2, figsize=(13, max(4.0, 0.28 * len(counts) + 2.2)),
                             gridspec_kw={"width_ratios": [1, 1.3]})
    names = [name for name, _ in counts][::-1]
    left = [0] * len(names)
    for status in STATUSES:
        widths = [n[status] for _, n in counts][::-1]
        if any(widths):
            axes[0].barh(names, widths, left=left, color=STATUS_COLOURS[status], label=status)
            left = [a + b for a, b in zip(left, widths)]
    axes[0].set_xlim(0, max([*left, 1]))
    axes[0].set_xlabel("students")
    axes[0].set_title("Status per exercise")
    axes[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 1.2 / fig.get_figheight() / 4), ncol=3,
                   fontsize="small", frameon=False)
    if common:
        labels = [f"{ex}: {d[:50]}" for ex, d, _ in common][::-1]
        axes[1].barh(labels, [n for _, _, n in common][::-1], color="#e45756")
        axes[1].set_xlabel("students")
    else:
        axes[1].text(0.5, 0.5, "no catalogued mistake diagnosed", ha="center", va="center")
        axes[1].set_axis_off()
    axes[1].set_title("The most common diagnoses")
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    return fig


def _summary_png(grades: list[Grade], exercises, path: Path) -> None:
    import matplotlib.pyplot as plt
    fig = summary_figure(grades, exercises)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=100)
    finally:
        plt.close(fig)


# --- Gradescope -------------------------------------------------------------------------------------
def read_points(path: Path, known: list[str]) -> dict[str, float]:
    """A TOML table exercise = points; ValueError naming the file and the entry that is wrong."""
    import difflib
    import tomllib
    text = Path(path).read_text(encoding="utf-8", errors="replace")     # OSError: the caller's runtime failure
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not a TOML table of exercise = points ({error})") from None
    points = {}
    for name, value in table.items():
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            raise ValueError(f"{path}: no exercise {name!r}" + (f"; did you mean {close[0]}?" if close else ""))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{path}: {name} = {value!r}; points must be a number >= 0")
        points[name] = float(value)
    if not points:
        raise ValueError(f"{path}: no exercise is given points (write lines like  rnn_step = 2)")
    return points


def set_points(grades: list[Grade], points: dict[str, float]) -> None:
    """Each grade's max_score: its exercise's points (``read_points``), 1 where the table has none."""
    for g in grades:
        g.max_score = points.get(g.exercise, 1.0)


def verdict(g: Grade, lang: str = "en") -> str:
    """The first line a student reads of a grade: its status, then the mistake's title or what the
    first failed check said ("wrong: the tanh is missing"), in ``lang``."""
    from seqlab.learn.feedback import check_message, check_name, diagnosis_words
    status = say(f"grade.status.{g.status}", lang)
    if g.passed or g.report is None:
        return status
    d = g.report.diagnosis or {}
    failed = next((c for c in g.report.checks if not c["passed"]), None)
    if d.get("mistake"):
        what = diagnosis_words(d, g.exercise, lang)[0]
    elif failed is not None:
        what = check_message(failed, lang) or check_name(failed["name"], g.exercise, lang)
    else:
        return status
    return say("grade.verdict", lang, status=status, what=what)


def gradescope_results(grades: list[Grade], exercises, seconds: float, lang: str = "en",
                       lesson_url: str | None = None) -> dict:
    """Gradescope's results.json: one test per exercise (name, number, score, max_score, status, output),
    the output in ``lang``: the verdict, then :meth:`Grade.feedback` (no loopback link; links to
    ``lesson_url``'s copy of the lessons where given)."""
    titles = {ex.name: (ex.title_zh or ex.title) if lang == "zh" else ex.title for ex in exercises}
    tests = []
    for number, g in enumerate(grades, 1):
        tests.append({"name": f"{g.exercise}: {titles.get(g.exercise, g.exercise)}", "number": str(number),
                      "score": g.score, "max_score": g.max_score, "status": "passed" if g.passed else "failed",
                      "output": f"{verdict(g, lang)}\n{g.feedback(lang, lesson_url)}".rstrip()})
    passed = sum(g.passed for g in grades)
    return {"score": sum(t["score"] for t in tests), "execution_time": round(seconds, 2),
            "output": say("grade.summary", lang, passed=passed, n=len(grades)), "stdout_visibility": "hidden",
            "tests": tests}


def lesson_url_problem(url: str) -> str:
    """Why ``url`` cannot be where students read the lessons ("" when it can): an http(s) address of a
    host that is not this machine (a loopback address is useless on Gradescope)."""
    import ipaddress
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--lesson-url {url!r}: give the http(s) address of a hosted copy of the lessons (seqlab learn site)"
    host = parts.hostname
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost" or host.endswith(".localhost")
    if loopback:
        return f"--lesson-url {url!r} is this machine: students on Gradescope cannot reach it; host the site"
    return ""


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
                           progress=not args.no_progress, isolation=isolation)
        set_points(grades, points)
        results = gradescope_results(grades, exercises, time.monotonic() - start, getattr(args, "lang", "en"),
                                     lesson_url)
        args.results.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.results, json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        print(f"{results['output']} Score {results['score']:g} of {sum(t['max_score'] for t in results['tests']):g}; "
              f"wrote {args.results}")
        print(f"isolation: {isolation.report()}")                 # stdout: the teacher's, hidden from students
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
                       progress=not args.no_progress, isolation=isolation)
    set_points(grades, points)
    paths = write_report(grades, exercises, args.out, isolation.report())
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
