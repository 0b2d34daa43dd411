"""Grade a generated class with `seqlab learn grade` (goal: 40 submissions x all 30 Implement
exercises in at most 10 minutes on 2 cores), and print the time per check beside the time of one
`seqlab learn check NAME` as a student runs it today.

The class (:func:`make_class`): students whose files are correct (seqlab's own functions), wrong (a
catalogued mistake in every exercise, so each has a known diagnosis), crashing (every function
raises; one exercise ends its process), looping (two exercises never return: one NumPy, one PyTorch),
empty (no file at all) and refused (every function imports subprocess: the static rules refuse it);
one correct student hands in a .zip. Correct and wrong files are self-contained
(``tests.learn.bundle``): the grader's sandbox has no seqlab to import.
:func:`expected` gives the table the grades must equal, so the benchmark also checks what it times.

    python benchmarks/learn_grade.py [--students 40] [--workers 2] [--exercises a,b,...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("correct", "wrong", "crashing", "looping", "empty", "refused")
# 40 students: 22 correct, 8 wrong, 4 crashing, 4 looping, 2 empty, 2 refused
MIX = ("correct",) * 3 + ("wrong",) + ("correct",) * 2 + ("wrong",) + ("crashing", "correct", "looping") \
    + ("correct",) * 3 + ("wrong",) + ("correct",) * 2 + ("wrong",) + ("empty", "refused", "crashing", "looping")
# each kind's status in grades.csv where it fails (seqlab.learn.gradebook.STATUSES)
STATUS = {"wrong": "wrong", "crashing": "crashed", "looping": "timed out", "empty": "not submitted",
          "refused": "refused"}


def kind_of(i: int, students: int) -> str:
    """The kind of student number i; a class of len(KINDS) or fewer has one of each kind."""
    return KINDS[i % len(KINDS)] if students <= len(KINDS) else MIX[i % len(MIX)]


def _mutant(exercise, i: int):
    """Student i's catalogued mistake of ``exercise``: one with a mutant written in the mistakes module
    (a mistake recognised only from its structure, or a convention the stub accepts, has none)."""
    written = [m for m in exercise.mistakes if m.implementation is not None and not m.accepted]
    return written[i % len(written)]


def _looping(exercises) -> set[str]:
    """The exercises a looping student's code never returns from: the first NumPy and first PyTorch one."""
    picked = [next((e.name for e in exercises if e.kind == kind), None) for kind in ("numpy", "torch")]
    return {name for name in picked if name}


def source_of(kind: str, exercise, i: int, exercises) -> str | None:
    """Student i's file for ``exercise`` (None: no file)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.learn.bundle import student_source
    if kind == "correct" or (kind == "looping" and exercise.name not in _looping(exercises)):
        return student_source(exercise.name)
    if kind == "looping":
        return f"def {exercise.name}(*args, **kwargs):\n    while True:\n        pass\n"
    if kind == "wrong":
        return student_source(exercise.name, _mutant(exercise, i).id)
    if kind == "crashing":
        if exercise.name == exercises[-1].name:
            return f"import os\n\n\ndef {exercise.name}(*args, **kwargs):\n    os._exit(7)\n"
        return f"def {exercise.name}(*args, **kwargs):\n    return [1, 2][5]\n"
    if kind == "refused":                 # the static rules refuse it before anything runs
        return f"def {exercise.name}(*args, **kwargs):\n    import subprocess\n    return subprocess.run(['true'])\n"
    return None


def make_class(folder: Path, students: int, exercises) -> dict[str, str]:
    """Write the class into ``folder``; returns {student: kind}."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds = {}
    for i in range(students):
        kind = kind_of(i, students)
        student = f"student{i:02d}-{kind}"
        kinds[student] = kind
        files = {f"{e.name}.py": source_of(kind, e, i, exercises) for e in exercises}
        if i == 0 and kind == "correct" and students > len(KINDS):          # one student hands in a zip
            with zipfile.ZipFile(folder / f"{student}.zip", "w") as z:
                for name, text in files.items():
                    z.writestr(f"seqlab-learn/{name}", text)
            continue
        (folder / student).mkdir()
        for name, text in files.items():
            if text is not None:
                (folder / student / name).write_text(text, encoding="utf-8")
    return kinds


def expected(kinds: dict[str, str], exercises) -> dict[tuple[str, str], tuple[bool, str, str, str]]:
    """(student, exercise) -> (passed, the first failed check, the diagnosis title, the status)."""
    from seqlab.learn.exercise import GENERIC_MISTAKES
    rule_broken = next(m.title for m in GENERIC_MISTAKES if m.id == "rule_broken")     # what a refusal is diagnosed as
    table = {}
    for i, (student, kind) in enumerate(kinds.items()):
        for e in exercises:
            if kind == "correct" or (kind == "looping" and e.name not in _looping(exercises)):
                table[student, e.name] = (True, "", "", "passed")
            elif kind == "wrong":
                mistake = _mutant(e, i)
                table[student, e.name] = (False, "", mistake.title, "wrong")
            elif kind == "empty":
                table[student, e.name] = (False, "file", "", "not submitted")
            elif kind == "refused":
                table[student, e.name] = (False, "rules", rule_broken, "refused")
            else:
                table[student, e.name] = (False, "runs", "", STATUS[kind])
    return table


def wall(command: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--exercises", default=None, help="comma-separated (default: every Implement exercise)")
    parser.add_argument("--time-limit", type=float, default=None, help="per check (default: each exercise's own)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of today's `seqlab learn check` to time")
    parser.add_argument("--keep", type=Path, default=None, help="write the class and the report here")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from seqlab.learn.catalog import all_exercises

    exercises = [e for e in all_exercises() if args.exercises is None or e.name in args.exercises.split(",")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        class_dir, report = base / "class", base / "report"
        kinds = make_class(class_dir, args.students, exercises)
        command = [sys.executable, "-m", "seqlab", "learn", "grade", str(class_dir), "--out", str(report),
                   "--workers", str(args.workers), "--exercises", ",".join(e.name for e in exercises), "--no-progress"]
        if args.time_limit:
            command += ["--time-limit", str(args.time_limit)]
        start = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=tmp, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"seqlab learn grade exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        with open(report / "grades.csv", encoding="utf-8") as f:
            rows = {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}
        wrong = []
        for key, (passed, first, diagnosis, status) in expected(kinds, exercises).items():
            row = rows.get(key)
            if row is None or (row["passed"] == "true") != passed or (first and not row["failed_checks"].startswith(first)) \
                    or row["diagnosis"] != diagnosis or row["status"] != status:
                wrong.append(f"{key}: expected {(passed, first, diagnosis, status)}, got "
                             f"{row and (row['passed'], row['failed_checks'], row['diagnosis'], row['status'])}")
        checks = len(kinds) * len(exercises)
        print(f"graded {len(kinds)} submissions x {len(exercises)} exercises = {checks} checks with "
              f"{args.workers} workers in {seconds:.1f} s (goal for 40 x 30 on 2 cores: 600 s): "
              f"{seconds / checks:.3f} s per check")
        print("grades as expected" if not wrong else f"{len(wrong)} grades NOT as expected:\n  " + "\n  ".join(wrong[:20]))
        # today's `seqlab learn check NAME`, one NumPy and one PyTorch exercise, as a student runs it
        ws = Path(tmp) / "ws"
        ws.mkdir()
        from tests.learn.bundle import student_source
        for kind in ("numpy", "torch"):
            e = next((x for x in exercises if x.kind == kind), None)
            if e is None:
                continue
            (ws / f"{e.name}.py").write_text(student_source(e.name))
            single = statistics.median(
                wall([sys.executable, "-m", "seqlab", "learn", "check", e.name, "--workspace", str(ws)], env, tmp)
                for _ in range(args.repeats))
            print(f"one `seqlab learn check {e.name}` ({kind}): {single:.2f} s, median of {args.repeats}")
        print(f"load average now {os.getloadavg()[0]:.2f}")
        if wrong:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
