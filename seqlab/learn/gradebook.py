"""A class's grades and what is written from them: the report a teacher reads and Gradescope's results.

A :class:`Grade` is one student's result on one exercise: passed or not, its status (:data:`STATUSES`),
its score and max_score, the failed checks, the diagnosis, the teacher's flags. :func:`write_report`
writes grades.csv and grades.json (:data:`COLUMNS`), totals.csv, summary.md and summary.png, built
beside REPORT and renamed into place; :func:`gradescope_results` is Gradescope's results.json, the
feedback in the student's language. ``seqlab.learn.grade`` makes the grades.
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import io
import json
import os
import shutil
from collections import Counter
from pathlib import Path

from seqlab.atomic import atomic_path
from seqlab.learn.words import say

REPORT_FILES = ("grades.csv", "grades.json", "totals.csv", "summary.md", "summary.png")
# a row's status, in the order summary.md counts them (see status_of)
STATUSES = ("passed", "wrong", "crashed", "timed out", "not submitted", "refused")


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


def write_report(grades: list[Grade], exercises, out: Path, isolation: str = "", seed: int | None = None) -> list[Path]:
    """grades.csv, grades.json, totals.csv (one row per student: a total row inside grades.csv would
    break a gradebook's import), summary.md and summary.png, built in a folder beside ``out`` and renamed
    into place: the folder whole when ``out`` is new, else each file (a teacher's other files in
    ``out`` stay); nothing else is written. ``isolation``: how the students were kept apart, in words;
    ``seed``: the ``--seed`` the cases were drawn with (None: the course's own cases).
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
                 "grades.json": json.dumps({"isolation": isolation, "seed": seed,
                                            "grades": [g.record() for g in grades]}, indent=1, ensure_ascii=False) + "\n",
                 "totals.csv": _csv(total_rows, ["student", "score", "max_score", "passed", "exercises"]),
                 "summary.md": summary_markdown(grades, exercises, isolation, seed)}
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


def summary_markdown(grades: list[Grade], exercises, isolation: str = "", seed: int | None = None) -> str:
    students = {g.student for g in grades}
    cases = "the course's own" if seed is None else f"drawn again with --seed {seed} (the worked examples kept)"
    lines = [f"# Grades: {len(students)} students, {len(exercises)} exercises", "",
             *([f"Isolation: {isolation}.", ""] if isolation else []), f"Cases: {cases}.", "",
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
