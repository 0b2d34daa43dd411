"""`seqlab learn grade`: a generated class (correct, wrong, crashing, looping and empty submissions,
a zip, a hostile zip) gives the expected table; Gradescope's results.json follows its documented
format; zips are unpacked safely; the references are computed once for the whole class."""

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
from seqlab.learn.catalog import exercise
from tests.learn.bundle import student_source
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
    kinds = bench.make_class(tmp_path / "class", 5, exercises)
    assert sorted(kinds.values()) == sorted(bench.KINDS)
    table = bench.expected(kinds, exercises)
    correct = {f"seqlab-learn/{n}.py": student_source(n) for n in NAMES}
    _zip(tmp_path / "class" / "zara.zip", correct)
    _zip(tmp_path / "class" / "mallory.zip", {"../../escaped.py": "x = 1\n", **correct})
    status = main(["learn", "grade", str(tmp_path / "class"), "--out", str(tmp_path / "report"),
                   "--exercises", ",".join(NAMES), "--time-limit", "1", "--workers", "2", "--no-progress"])
    assert status == 0
    assert "graded 7 submissions x 3 exercises" in capsys.readouterr().out
    assert not (tmp_path / "escaped.py").exists() and not list(tmp_path.rglob("escaped.py"))
    with open(tmp_path / "report" / "grades.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", "exercise", "passed", "failed_checks", "diagnosis", "message", "flags"]
    got = {(r["student"], r["exercise"]): r for r in rows}
    assert len(rows) == 7 * 3 and len(got) == len(rows)
    for key, (passed, first, diagnosis) in table.items():
        row = got[key]
        assert row["passed"] == ("true" if passed else "false"), (key, row)
        assert row["failed_checks"].split("; ")[0] == first if first else True, (key, row)
        assert row["diagnosis"] == diagnosis, (key, row)
    looping = next(s for s, k in kinds.items() if k == "looping")
    assert "did not finish within 1 s" in got[looping, "causal_mask"]["message"]
    assert got[looping, "rnn_step"]["passed"] == "true"                  # the loop cost only its own check
    empty = next(s for s, k in kinds.items() if k == "empty")
    assert got[empty, "rnn_step"]["message"] == "the submission has no rnn_step.py"
    assert all(got["zara", n]["passed"] == "true" for n in NAMES)
    assert all(got["mallory", n]["failed_checks"] == "submission" and "a path outside the archive" in got["mallory", n]["message"]
               for n in NAMES)
    data = json.loads((tmp_path / "report" / "grades.json").read_text())["grades"]
    assert [(g["student"], g["exercise"], g["passed"]) for g in data] == \
        [(r["student"], r["exercise"], r["passed"] == "true") for r in rows]
    assert all(isinstance(g["failed_checks"], list) for g in data)
    # grades.json also says the mistake and where it shows: the title in the diagnosis column, where beside it
    by_key = {(g["student"], g["exercise"]): g for g in data}
    for key, (passed, _, diagnosis) in table.items():
        g = by_key[key]
        assert g["diagnosis"] == diagnosis and (g["where"] != "") == (diagnosis != ""), g
        if diagnosis:
            mistake = next(m for m in exercise(key[1]).mistakes if m.title == diagnosis)
            assert g["mistake"] == mistake.id
    summary = (tmp_path / "report" / "summary.md").read_text()
    passed = sum(got[s, "causal_mask"]["passed"] == "true" for s in {k[0] for k in got})
    assert f"| causal_mask | {passed} | 7 | {100 * passed / 7:.0f}% |" in summary
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
    # the diagnosis first, then the checks
    assert clip["output"].startswith(f"failed: {mistake.title}\n  diagnosis: {mistake.title}\n    where: ")
    assert clip["output"].index("diagnosis:") < clip["output"].index("  checks:") < clip["output"].index("PASS  runs")
    assert tests["rnn_step"]["output"].startswith("failed: the submission has no rnn_step.py")
    assert data["score"] == 2
    assert "Score 2 of 6.5" in capsys.readouterr().out


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
            children = [p for p in psutil.Process(grader.pid).children(recursive=True)      # not bwrap's own
                        if "child/main.py" in " ".join(p.cmdline()) and p.name() != "bwrap"]
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
    first = [grading.Grade("ann", "causal_mask", True, [])]
    grading.write_report(first, [ex], out, "each submission in a sandbox")
    before = {name: (out / name).read_bytes() for name in grading.REPORT_FILES}

    def broken(grades, exercises, path):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(grading, "_summary_png", broken)
    with pytest.raises(OSError):
        grading.write_report([grading.Grade("ann", "causal_mask", False, ["runs"])], [ex], out)
    assert {name: (out / name).read_bytes() for name in grading.REPORT_FILES} == before      # the old report whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]                             # no build left beside
    assert (out / "notes.txt").read_text() == "the teacher's own file\n"
    assert json.loads((out / "grades.json").read_text())["isolation"] == "each submission in a sandbox"
    monkeypatch.undo()
    fresh = tmp_path / "new" / "report"
    grading.write_report(first, [ex], fresh)                     # a new folder is renamed into place whole
    assert sorted(p.name for p in fresh.iterdir()) == sorted(grading.REPORT_FILES)
