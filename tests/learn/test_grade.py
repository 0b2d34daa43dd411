"""`seqlab learn grade`: a generated class (correct, wrong, crashing, looping, empty and refused
submissions, a zip, a hostile zip) gives the expected table, every status, scores from --points and
the students' totals; summary.png counts whole students; Gradescope's results.json follows its
documented format, in English or Chinese, with the lesson's paragraph inline and no loopback link;
zips are unpacked safely; the references are computed once for the whole class."""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from seqlab.cli import main
from seqlab.learn import grade as grading
from seqlab.learn import gradebook
from seqlab.learn.catalog import exercise
from seqlab.learn.exercise import GENERIC_MISTAKES
from seqlab.learn.words import say
from tests.learn.bundle import student_source
from tests.learn.students import student_children
from tests.model.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("causal_mask", "clip_global_norm", "rnn_step")


def _zip(path: Path, files: dict[str, str | bytes], links: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)          # a symbolic link
            z.writestr(info, "/etc/passwd")
    return path


def test_grading_a_generated_class_gives_the_expected_table(tmp_path, capsys):
    bench = load_benchmark("learn_grade")
    exercises = [exercise(n) for n in NAMES]
    kinds = bench.make_class(tmp_path / "class", len(bench.KINDS), exercises)
    assert sorted(kinds.values()) == sorted(bench.KINDS)
    table = bench.expected(kinds, exercises)
    correct = {f"seqlab-learn/{n}.py": student_source(n) for n in NAMES}
    _zip(tmp_path / "class" / "zara.zip", correct)
    _zip(tmp_path / "class" / "mallory.zip", {"../../escaped.py": "x = 1\n", **correct})
    points = {"causal_mask": 2, "clip_global_norm": 0.5, "rnn_step": 1}
    (tmp_path / "points.toml").write_text("".join(f"{n} = {p}\n" for n, p in points.items()))
    status = main(["learn", "grade", str(tmp_path / "class"), "--out", str(tmp_path / "report"),
                   "--exercises", ",".join(NAMES), "--time-limit", "1", "--workers", "2", "--no-progress",
                   "--points", str(tmp_path / "points.toml")])
    assert status == 0
    students = len(kinds) + 2
    assert f"graded {students} submissions x 3 exercises" in capsys.readouterr().out
    assert not (tmp_path / "escaped.py").exists() and not list(tmp_path.rglob("escaped.py"))
    with open(tmp_path / "report" / "grades.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", "exercise", "passed", "status", "score", "max_score", "failed_checks",
                             "diagnosis", "message", "flags"]
    got = {(r["student"], r["exercise"]): r for r in rows}
    assert len(rows) == students * 3 and len(got) == len(rows)
    for key, (passed, first, diagnosis, status) in table.items():
        row = got[key]
        assert row["passed"] == ("true" if passed else "false"), (key, row)
        assert row["failed_checks"].split("; ")[0] == first if first else True, (key, row)
        assert row["diagnosis"] == diagnosis, (key, row)
        assert row["status"] == status, (key, row)
        assert (row["score"], row["max_score"]) == (f"{points[key[1]] if passed else 0:g}", f"{points[key[1]]:g}")
    assert {r["status"] for r in rows} == set(gradebook.STATUSES)          # the class holds every status
    refused = next(s for s, k in kinds.items() if k == "refused")
    assert "import subprocess is not allowed" in got[refused, "rnn_step"]["message"]
    looping = next(s for s, k in kinds.items() if k == "looping")
    assert "did not finish within 1 s" in got[looping, "causal_mask"]["message"]
    assert got[looping, "rnn_step"]["passed"] == "true"                  # the loop cost only its own check
    empty = next(s for s, k in kinds.items() if k == "empty")
    assert got[empty, "rnn_step"]["message"] == "the submission has no rnn_step.py"
    assert all(got["zara", n]["passed"] == "true" for n in NAMES)
    assert all(got["mallory", n]["failed_checks"] == "submission" and "a path outside the archive" in got["mallory", n]["message"]
               and got["mallory", n]["status"] == "refused" for n in NAMES)
    data = json.loads((tmp_path / "report" / "grades.json").read_text())["grades"]
    assert [(g["student"], g["exercise"], g["passed"], g["status"], f"{g['score']:g}") for g in data] == \
        [(r["student"], r["exercise"], r["passed"] == "true", r["status"], r["score"]) for r in rows]
    # totals.csv: one row per student, its score of the points given (grades.csv holds no total row)
    with open(tmp_path / "report" / "totals.csv", encoding="utf-8") as f:
        totals = {r["student"]: r for r in csv.DictReader(f)}
    assert set(totals) == {r["student"] for r in rows} and all(r["student"] in totals for r in rows)
    for student, t in totals.items():
        mine = [r for r in rows if r["student"] == student]
        assert float(t["score"]) == sum(points[r["exercise"]] for r in mine if r["passed"] == "true")
        assert (float(t["max_score"]), int(t["passed"]), int(t["exercises"])) == \
            (3.5, sum(r["passed"] == "true" for r in mine), 3)
    assert totals["zara"]["score"] == "3.5" and totals["mallory"]["score"] == "0"
    assert all(isinstance(g["failed_checks"], list) for g in data)
    # grades.json also says the mistake and where it shows: the title in the diagnosis column, where beside it
    by_key = {(g["student"], g["exercise"]): g for g in data}
    for key, (passed, _, diagnosis, _) in table.items():
        g = by_key[key]
        assert g["diagnosis"] == diagnosis and (g["where"] != "") == (diagnosis != ""), g
        if diagnosis:
            mistake = next(m for m in (*exercise(key[1]).mistakes, *GENERIC_MISTAKES) if m.title == diagnosis)
            assert g["mistake"] == mistake.id
    summary = (tmp_path / "report" / "summary.md").read_text()
    passed = sum(got[s, "causal_mask"]["passed"] == "true" for s in {k[0] for k in got})
    assert f"| causal_mask | {passed} | {students} | {100 * passed / students:.0f}% |" in summary
    # each status counted, per exercise and over all of them
    assert "| exercise | " + " | ".join(gradebook.STATUSES) + " |" in summary
    for name in NAMES:
        counts = [sum(1 for r in rows if r["exercise"] == name and r["status"] == s) for s in gradebook.STATUSES]
        assert f"| {name} | " + " | ".join(map(str, counts)) + " |" in summary
    every = [sum(1 for r in rows if r["status"] == s) for s in gradebook.STATUSES]
    assert all(every) and "| all exercises | " + " | ".join(map(str, every)) + " |" in summary
    assert f"| zara | 3 | 3 | 3.5 | 3.5 |" in summary
    wrong = next(s for s, k in kinds.items() if k == "wrong")
    assert f"| 1 | causal_mask | {got[wrong, 'causal_mask']['diagnosis']} |" in summary
    assert (tmp_path / "report" / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Gradescope's documented results.json (gradescope-autograders.readthedocs.io, "Autograder
# Specifications", output format), as a JSON schema.
GRADESCOPE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "test_output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "test_name_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "stdout_visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "score": {"type": "number"},
                "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]},
                "name": {"type": "string"},
                "name_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
                "number": {"type": "string"},
                "output": {"type": "string"},
                "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
                "extra_data": {"type": "object"},
            },
            "additionalProperties": False,
        }},
        "leaderboard": {"type": "array", "items": {
            "type": "object", "required": ["name", "value"],
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]},
                           "order": {"enum": ["asc", "desc"]}}}},
    },
    "additionalProperties": False,
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
}


def test_the_schema_rejects_what_gradescope_would_not_read():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tests": [{"name": "a", "score": "1"}]}, GRADESCOPE_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tests": [{"name": "a", "status": "ok"}]}, GRADESCOPE_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"output": "no score, no tests"}, GRADESCOPE_SCHEMA)


def test_gradescope_results_follow_the_documented_format(tmp_path, capsys):
    submission = tmp_path / "autograder" / "submission"
    submission.mkdir(parents=True)
    (submission / "causal_mask.py").write_text(student_source("causal_mask"))
    (submission / "clip_global_norm.py").write_text(student_source("clip_global_norm", "coordinatewise"))
    points = tmp_path / "points.toml"
    points.write_text("causal_mask = 2\nclip_global_norm = 3.5\nrnn_step = 1\n")
    results = tmp_path / "autograder" / "results" / "results.json"
    assert main(["learn", "grade", "--gradescope", "--submission", str(submission), "--results", str(results),
                 "--points", str(points), "--no-progress"]) == 0
    data = json.loads(results.read_text())
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    tests = {t["name"].split(":")[0]: t for t in data["tests"]}
    assert list(tests) == ["rnn_step", "clip_global_norm", "causal_mask"]          # the path's order
    assert (tests["causal_mask"]["score"], tests["causal_mask"]["max_score"], tests["causal_mask"]["status"]) == (2, 2, "passed")
    clip = tests["clip_global_norm"]
    assert (clip["score"], clip["max_score"], clip["status"]) == (0, 3.5, "failed")
    mistake = next(m for m in exercise("clip_global_norm").mistakes if m.id == "coordinatewise")
    assert mistake.title in clip["output"] and "FAIL" in clip["output"]
    # the status and the diagnosis first, then the checks
    assert clip["output"].startswith(f"wrong: {mistake.title}\n  diagnosis: {mistake.title}\n    where: ")
    assert clip["output"].index("diagnosis:") < clip["output"].index("  checks:") < clip["output"].index("PASS  runs")
    assert tests["rnn_step"]["output"].startswith("not submitted: the submission has no rnn_step.py")
    assert data["score"] == 2
    assert "Score 2 of 6.5" in capsys.readouterr().out
    # read on Gradescope, away from the student's machine: no link to the explorer, the lesson's paragraph
    # on the mistake inline, and the command that shows the lesson where seqlab is installed
    _no_loopback(results.read_text())
    assert "http" not in results.read_text()
    assert "    why: " + " ".join(mistake.why[0].split()[:6]) in clip["output"]
    assert " ".join(clip["output"].split()).count(mistake.why[0]) == 1
    assert "seqlab learn show clip_global_norm" in clip["output"]


LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "0.0.0.0")


def _no_loopback(text: str) -> None:
    found = [host for host in LOOPBACK if host in text]
    assert not found, f"the feedback links to this machine ({found}), useless on Gradescope"


def test_the_feedback_that_reaches_students_has_no_loopback_link_in_either_language(tmp_path):
    """The explorer's link is what `seqlab learn check` prints at the student's machine: a grade read on
    Gradescope never has it. --lesson-url links the hosted lessons as URL/LANG/STEP.html#mistake-ID."""
    from seqlab.learn.feedback import report_lines
    from seqlab.learn.views import EXPLORER
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "clip_global_norm.py").write_text(student_source("clip_global_norm", "coordinatewise"))
    (submission / "causal_mask.py").write_text("def causal_mask(n):\n    raise NotImplementedError\n")
    mistake = next(m for m in exercise("clip_global_norm").mistakes if m.id == "coordinatewise")
    for lang in ("en", "zh"):
        results = tmp_path / lang / "results.json"
        assert main(["learn", "grade", "--gradescope", "--submission", str(submission), "--results", str(results),
                     "--exercises", "clip_global_norm,causal_mask", "--lang", lang, "--no-progress",
                     "--lesson-url", "https://course.example.org/seqlab/"]) == 0
        text = results.read_text()
        data = json.loads(text)
        jsonschema.validate(data, GRADESCOPE_SCHEMA)
        _no_loopback(text)
        clip, stub = data["tests"]
        assert clip["output"].count(f"https://course.example.org/seqlab/{lang}/clip_global_norm.html"
                                    "#mistake-coordinatewise") == 1
        why = mistake.why[1] if lang == "zh" else mistake.why[0]
        assert why[:12] in clip["output"]
        title = mistake.title_zh if lang == "zh" else mistake.title
        status = {s: say(f"grade.status.{s}", lang) for s in ("wrong", "not submitted")}
        assert clip["output"].startswith(say("grade.verdict", lang, status=status["wrong"], what=title) + "\n")
        assert stub["output"].startswith(status["not submitted"]) and (status["not submitted"] == "not submitted") \
            == (lang == "en")
        assert data["output"] == say("grade.summary", lang, passed=0, n=2)
        assert (data["output"] == "0 of 2 exercises pass seqlab's checks.") == (lang == "en")
    # what the grade was made from does link the explorer where the student checks it: only Gradescope's is away
    grades = grading.grade_all([("s", submission)], [exercise("clip_global_norm")], workers=1, progress=False)
    assert any(EXPLORER in line for line in report_lines(grades[0].report))
    assert EXPLORER not in grades[0].feedback() and "http" not in grades[0].feedback()


@pytest.mark.parametrize(("extra", "message"), [
    (["--lesson-url", "http://127.0.0.1:8000/"], "is this machine"),
    (["--lesson-url", "http://localhost/course"], "is this machine"),
    (["--lesson-url", "course/site"], "give the http(s) address"),
])
def test_a_lesson_url_students_cannot_reach_is_refused(tmp_path, capsys, extra, message):
    assert main(["learn", "grade", "--gradescope", "--submission", str(tmp_path), "--results",
                 str(tmp_path / "r.json"), *extra]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "r.json").exists()
    assert main(["learn", "grade", str(tmp_path), "--out", str(tmp_path / "report"),
                 "--lesson-url", "https://course.example.org/"]) == 2
    assert "give it with --gradescope" in capsys.readouterr().err


def test_a_points_file_names_the_wrong_entry(tmp_path, capsys):
    points = tmp_path / "points.toml"
    for text, message in (("rnn_stp = 1\n", "no exercise 'rnn_stp'; did you mean rnn_step?"),
                          ("rnn_step = -1\n", "rnn_step = -1; points must be a number >= 0"),
                          ("rnn_step = [\n", "not a TOML table")):
        points.write_text(text)
        assert main(["learn", "grade", "--gradescope", "--submission", str(tmp_path), "--results",
                     str(tmp_path / "r.json"), "--points", str(points)]) == 2
        assert message in capsys.readouterr().err
    assert main(["learn", "grade", str(tmp_path)]) == 2
    assert "give SUBMISSIONS" in capsys.readouterr().err


@pytest.mark.parametrize(("files", "links", "message"), [
    ({"/abs.py": "x"}, (), "a path outside the archive"),
    ({"a/../../up.py": "x"}, (), "a path outside the archive"),
    ({"ok.py": "x"}, ("rnn_step.py",), "a link"),
    ({f"f{i}.py": "x" for i in range(30)}, (), "entries; at most 20"),
    ({"big.py": "#" * 5000}, (), "more than 0 MB"),
])
def test_an_unsafe_zip_is_refused_and_writes_nothing_outside(tmp_path, monkeypatch, files, links, message):
    monkeypatch.setattr(grading, "UNZIP_FILES", 20)
    monkeypatch.setattr(grading, "UNZIP_BYTES", 4000)
    archive = _zip(tmp_path / "student.zip", files, links)
    with pytest.raises(grading.SubmissionError, match=message.replace("(", r"\(")):
        grading.unpack(archive, tmp_path / "out" / "student")
    assert {p.name for p in tmp_path.iterdir()} == {"student.zip", "out"}


def test_a_zip_that_is_not_a_zip_is_a_reason_not_a_crash(tmp_path):
    (tmp_path / "bob.zip").write_bytes(b"PK\x03\x04 not really")
    grades = grading.grade_submission("bob", tmp_path / "bob.zip", [exercise("causal_mask")], tmp_path / "scratch")
    assert not grades[0].passed and grades[0].failed_checks == ["submission"]
    assert "is not a zip that can be read" in grades[0].message


def test_the_reference_is_computed_once_for_the_whole_class(tmp_path):
    base = exercise("rnn_step")
    calls = []
    reference = base.reference()

    def counted(*args, **kwargs):
        calls.append(1)
        return reference(*args, **kwargs)

    counting = dataclasses.replace(base, reference=lambda: counted)
    entries = []
    for student in ("a", "b", "c"):
        (tmp_path / student).mkdir()
        (tmp_path / student / "rnn_step.py").write_text(student_source("rnn_step"))
        entries.append((student, tmp_path / student))
    grades = grading.grade_all(entries, [counting], workers=2, progress=False)
    assert [g.passed for g in grades] == [True, True, True]
    assert len(calls) == len(base.cases())


def test_ctrl_c_stops_the_whole_class_and_leaves_nothing_running(tmp_path):
    import os
    import signal
    import subprocess
    import time

    import psutil

    for student in ("ann", "ben", "cid"):
        (tmp_path / "class" / student).mkdir(parents=True)
        (tmp_path / "class" / student / "causal_mask.py").write_text("def causal_mask(n):\n    while True:\n        pass\n")
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "tmp")}
    grader = subprocess.Popen([sys.executable, "-m", "seqlab", "learn", "grade", str(tmp_path / "class"), "--out",
                               str(tmp_path / "report"), "--exercises", "causal_mask", "--time-limit", "120",
                               "--workers", "2", "--no-progress"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        children: list = []
        while len(children) < 2 and time.monotonic() < deadline:
            children = student_children(grader.pid)
            time.sleep(0.1)
        assert len(children) == 2                     # two submissions at once
        time.sleep(0.5)                               # both inside the student's loop
        grader.send_signal(signal.SIGINT)
        out, err = grader.communicate(timeout=60)
    finally:
        if grader.poll() is None:
            grader.kill()
    assert grader.returncode == 130 and "interrupted" in err, (out, err)
    assert not (tmp_path / "report").exists()
    for child in children:
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert not any((tmp_path / "tmp").iterdir())


def test_the_report_is_built_beside_and_renamed_so_a_failed_write_leaves_the_old_one(tmp_path, monkeypatch):
    ex = exercise("causal_mask")
    out = tmp_path / "report"
    out.mkdir()
    (out / "notes.txt").write_text("the teacher's own file\n")
    first = [gradebook.Grade("ann", "causal_mask", True, [])]
    gradebook.write_report(first, [ex], out, "each submission in a sandbox")
    before = {name: (out / name).read_bytes() for name in gradebook.REPORT_FILES}

    def broken(grades, exercises, path):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(gradebook, "_summary_png", broken)
    with pytest.raises(OSError):
        gradebook.write_report([gradebook.Grade("ann", "causal_mask", False, ["runs"])], [ex], out)
    assert {name: (out / name).read_bytes() for name in gradebook.REPORT_FILES} == before      # the old report whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]                             # no build left beside
    assert (out / "notes.txt").read_text() == "the teacher's own file\n"
    assert json.loads((out / "grades.json").read_text())["isolation"] == "each submission in a sandbox"
    monkeypatch.undo()
    fresh = tmp_path / "new" / "report"
    gradebook.write_report(first, [ex], fresh)                     # a new folder is renamed into place whole
    assert sorted(p.name for p in fresh.iterdir()) == sorted(gradebook.REPORT_FILES)


def test_summary_png_counts_whole_students():
    """Both of summary.png's axes count students: whole numbers only, however few the students."""
    import matplotlib.pyplot as plt
    Grade = gradebook.Grade
    grades = [Grade("ann", "causal_mask", False, ["values (worked example)"], "the mask is shifted"),
              Grade("ann", "rnn_step", True, []),
              Grade("ben", "causal_mask", True, []),
              Grade("ben", "rnn_step", False, ["runs"], status="timed out"),
              Grade("cid", "causal_mask", False, ["file"], status="not submitted"),
              Grade("cid", "rnn_step", False, ["rules"], status="refused")]
    fig = gradebook.summary_figure(grades, [exercise("causal_mask"), exercise("rnn_step")])
    try:
        fig.canvas.draw()
        assert len(fig.axes) == 2
        for ax in fig.axes:
            assert ax.get_xlabel() == "students"
            lo, hi = ax.get_xlim()
            ticks = [t for t in ax.get_xticks() if lo - 1e-9 <= t <= hi + 1e-9]
            assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), (ax.get_title(), ticks)
        status_axis = fig.axes[0]
        assert status_axis.get_xlim()[1] == 3                          # the class, every student one bar's length
        assert sorted(t.get_text() for t in status_axis.get_legend().get_texts()) == \
            sorted(["passed", "wrong", "timed out", "not submitted", "refused"])
    finally:
        plt.close(fig)


def test_a_grade_s_status_agrees_with_whether_it_passed():
    assert gradebook.Grade("a", "rnn_step", True, []).status == "passed"
    assert gradebook.Grade("a", "rnn_step", False, ["values (worked example)"]).status == "wrong"
    for passed, status in ((True, "wrong"), (False, "passed"), (False, "late")):
        with pytest.raises(ValueError):
            gradebook.Grade("a", "rnn_step", passed, [], status=status)


def test_code_that_is_a_catalogued_mistake_exactly_is_wrong_even_where_it_raises(tmp_path):
    """Wx transposed raises on rnn_step's non-square case, as its mutant does: the diagnosis is exact, so
    the row is wrong. An IndexError on every case is crashed. (The old rule, crashed whenever "runs"
    failed, is the mutant: it calls the first one crashed.)"""
    from seqlab.learn.judge import run_checks
    from tests.learn.students import write_student
    transposed = write_student(tmp_path / "a", "rnn_step", "import numpy as np\n\n\ndef rnn_step(params, x, h_prev):\n"
                               "    return np.tanh(params['Wh'] @ h_prev + params['Wx'].T @ x + params['b'])\n")
    raising = write_student(tmp_path / "b", "rnn_step", "def rnn_step(params, x, h_prev):\n    return [][0]\n")
    report = run_checks(exercise("rnn_step"), transposed)
    failed = {c["name"] for c in report.checks if not c["passed"]}
    assert "runs" in failed and report.diagnosis["mistake"] == "input_weight_transposed" and report.diagnosis["exact"]
    assert grading.status_of(report) == "wrong"
    assert grading.status_of(run_checks(exercise("rnn_step"), raising)) == "crashed"
    old_rule = "crashed" if "runs" in failed else "wrong"
    assert old_rule != grading.status_of(report)


def _lookup_student(name: str) -> str:
    """A file that answers rnn_step by looking up seqlab's own cases (their inputs, and the reference's
    outputs the test computes), and returns zeros for any other input."""
    import numpy as np
    ex = exercise(name)
    table = {}
    for case in ex.cases():
        _, x, h = case.args
        out = np.asarray(ex.reference()(*case.args))
        table[repr(np.round(np.asarray(x, dtype=float), 9).tolist() + np.round(h, 9).tolist())] = (out.tolist(), str(out.dtype))
    return ("import numpy as np\n\nTABLE = " + repr(table) + "\n\n\ndef rnn_step(params, x, h_prev):\n"
            "    key = repr(np.round(np.asarray(x, dtype=float), 9).tolist() + np.round(h_prev, 9).tolist())\n"
            "    values, dtype = TABLE.get(key, ([0.0] * len(h_prev), 'float64'))\n"
            "    return np.array(values, dtype=dtype)\n")


def test_grade_seed_draws_the_cases_again_so_a_lookup_table_of_the_course_s_cases_fails(tmp_path, capsys):
    """Without --seed, a file that looks up the course's own cases passes (the cases are in seqlab's
    source); with --seed 7 the random and contract cases are drawn again, the lookup fails, an honest
    file still passes, the worked example is the lesson's, and the report records the seed."""
    from seqlab.learn import kit
    ex = exercise("rnn_step")
    shared = grading.shared(ex, 7)
    own, drawn = ex.cases(), shared.cases()
    assert str(own[0].label) == "the worked example" and all(
        (a == b).all() if hasattr(a, "all") else a == b for a, b in zip(own[0].args[1:], drawn[0].args[1:]))
    assert not any((own[i].args[1] == drawn[i].args[1]).all() for i in range(1, 3))        # drawn again
    with kit.drawn_with(7):
        again = ex.cases()
    assert all((a.args[1] == b.args[1]).all() for a, b in zip(drawn[1:3], again[1:3]))   # the same seed, the same cases
    for student, source in (("lookup", _lookup_student("rnn_step")), ("honest", student_source("rnn_step"))):
        (tmp_path / "class" / student).mkdir(parents=True)
        (tmp_path / "class" / student / "rnn_step.py").write_text(source)
    results = {}
    for seed in (None, 7):
        out = tmp_path / f"report-{seed}"
        argv = ["learn", "grade", str(tmp_path / "class"), "--out", str(out), "--exercises", "rnn_step", "--no-progress"]
        assert main(argv + (["--seed", str(seed)] if seed is not None else [])) == 0
        capsys.readouterr()
        report = json.loads((out / "grades.json").read_text())
        assert report["seed"] == seed
        results[seed] = {g["student"]: g["passed"] for g in report["grades"]}
        summary = (out / "summary.md").read_text()
        assert ("drawn again with --seed 7" in summary) == (seed == 7)
    assert results[None] == {"lookup": True, "honest": True}
    assert results[7] == {"lookup": False, "honest": True}
    assert main(["learn", "grade", str(tmp_path / "class"), "--out", str(tmp_path / "r"), "--seed", "-1"]) == 2
