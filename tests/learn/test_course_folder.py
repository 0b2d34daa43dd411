"""A teacher's own course: the folder docs/learn.md ("Write an exercise") writes out, copied from the docs
and followed through every view, each in a process of its own (a process follows one course)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.model.benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
CORRECT = ("import numpy as np\n\n\ndef layer_norm(x, gamma, beta, eps=1e-5):\n"
           "    mean = x.mean(-1, keepdims=True)\n"
           "    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta\n")
EPS_OUTSIDE = ("import numpy as np\n\n\ndef layer_norm(x, gamma, beta, eps=1e-5):\n"
               "    mean = x.mean(-1, keepdims=True)\n"
               "    return (x - mean) / (x.std(-1, keepdims=True) + eps) * gamma + beta\n")


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """The course folder exactly as the docs write it (every `readme-test: file my-course/...` block)."""
    root = tmp_path_factory.mktemp("docs")
    blocks = [b for b in load_benchmark("readme_commands").read_blocks((ROOT / "docs" / "learn.md").read_text(encoding="utf-8"),
                                                        "docs/learn.md") if b.action == "file"]
    written = [b.file for b in blocks if b.file.startswith("my-course/")]
    assert written == ["my-course/path.toml", "my-course/layer_norm/step.toml", "my-course/layer_norm/check.py",
                       "my-course/layer_norm/lesson.en.md", "my-course/layer_norm/lesson.zh.md"]
    for b in blocks:
        (root / b.file).parent.mkdir(parents=True, exist_ok=True)
        (root / b.file).write_text(b.text, encoding="utf-8")
    return root / "my-course"


def seqlab(*argv, cwd: Path) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "SEQLAB_COURSE"}
    environment["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "seqlab", *argv], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=300)


def test_the_path_keeps_seqlab_s_steps_and_puts_the_new_part_after_attention(course, tmp_path):
    done = seqlab("learn", "--course", str(course), "--workspace", "ws", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line.split()[-2] for line in done.stdout.splitlines()[1:-1]]
    assert len(rows) == 48 and rows[:2] == ["trace_recurrence", "scalar_recurrence"]
    attention_last = rows.index("multihead_attention")
    assert rows[attention_last + 1] == "layer_norm" and rows[attention_last + 2] == "choose_merge"
    remembered = json.loads((tmp_path / "ws" / "progress.json").read_text())["course"]
    assert remembered == str(course.resolve())


def test_show_start_check_and_hint_work_on_the_new_exercise_in_both_languages(course, tmp_path):
    shown = seqlab("learn", "--course", str(course), "show", "layer_norm", cwd=tmp_path)
    assert shown.returncode == 0 and "LayerNorm: each position on its own scale" in shown.stdout
    assert "Normalised over the wrong axis" in shown.stdout            # the mistakes, from step.toml
    zh = seqlab("learn", "--course", str(course), "show", "layer_norm", "--lang", "zh", cwd=tmp_path)
    assert "层归一化：每个位置各用自己的尺度" in zh.stdout and "沿错误的轴归一化" in zh.stdout
    assert seqlab("learn", "--course", str(course), "start", "layer_norm", cwd=tmp_path).returncode == 0
    stub = (tmp_path / "seqlab-learn" / "layer_norm.py").read_text()
    assert "eps goes inside the square root, so a row of equal values gives beta, not NaN." in stub
    (tmp_path / "seqlab-learn" / "layer_norm.py").write_text(EPS_OUTSIDE)
    wrong = seqlab("learn", "check", "layer_norm", cwd=tmp_path)          # the workspace remembers the course
    assert wrong.returncode == 1 and "diagnosis: ε added outside the square root" in wrong.stdout
    (tmp_path / "seqlab-learn" / "layer_norm.py").write_text(CORRECT)
    right = seqlab("learn", "check", "layer_norm", cwd=tmp_path)
    assert right.returncode == 0 and "PASS  constant rows" in right.stdout
    hint = seqlab("learn", "hint", "layer_norm", cwd=tmp_path)
    assert "hint 1 of 3: The idea: subtract each row's mean" in hint.stdout


def test_grade_and_the_notebook_work_on_the_course(course, tmp_path):
    for student, source in (("ann", CORRECT), ("ben", EPS_OUTSIDE)):
        (tmp_path / "class" / student).mkdir(parents=True)
        (tmp_path / "class" / student / "layer_norm.py").write_text(source)
    graded = seqlab("learn", "grade", "class", "--out", "report", "--course", str(course), "--exercises", "layer_norm",
                    "--no-progress", cwd=tmp_path)
    assert graded.returncode == 0, graded.stderr
    with open(tmp_path / "report" / "grades.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["ann"]["passed"] == "true" and rows["ben"]["passed"] == "false"
    assert rows["ben"]["diagnosis"] == "ε added outside the square root"
    graded = seqlab("learn", "grade", "class", "--out", "seeded", "--course", str(course), "--exercises", "layer_norm",
                    "--no-progress", "--seed", "5", cwd=tmp_path)           # the course's cases drawn again
    assert graded.returncode == 0, graded.stderr
    report = json.loads((tmp_path / "seeded" / "grades.json").read_text())
    assert report["seed"] == 5 and {g["student"]: g["passed"] for g in report["grades"]} == {"ann": True, "ben": False}
    code = ("import sys\nimport numpy as np\nfrom seqlab.learn import courses\ncourses.use(sys.argv[1])\n"
            "from seqlab.learn.catalog import exercise\nfrom seqlab.learn.grade import shared\n"
            "own, drawn = exercise('layer_norm').cases(), shared(exercise('layer_norm'), 5).cases()\n"
            "print([bool(np.array_equal(a.args[0], b.args[0])) for a, b in zip(own, drawn)])\n")
    done = subprocess.run([sys.executable, "-c", code, str(course)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[True, False, False, True]", done.stderr      # the worked example and the
    #                                                   hand-written contract case kept, the random ones drawn again
    wrote = seqlab("learn", "notebook", "normalisation", "--out", "nb", "--course", str(course), cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    notebook = json.loads(next((tmp_path / "nb").glob("*.ipynb")).read_text())
    text = "".join("".join(cell["source"]) for cell in notebook["cells"])
    assert "layer_norm" in text and "LayerNorm: each position on its own scale" in text


def test_the_lesson_s_numbers_are_recomputed_from_the_course_s_reference(course):
    code = ("import sys\nfrom seqlab.learn import courses\ncourses.use(sys.argv[1])\n"
            "from seqlab.learn import lesson_checks\nprint(lesson_checks.number_problems('layer_norm'))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, str(course)], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr
    lesson = course / "layer_norm" / "lesson.en.md"
    original = lesson.read_text()
    lesson.write_text(original.replace("-0.534522 0 1.603565 =", "-0.534522 0 1.603567 ="))
    try:
        done = subprocess.run([sys.executable, "-c", code, str(course)], env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        lesson.write_text(original)
    assert "the lesson prints 1.603567" in done.stdout


def test_a_broken_course_folder_is_named_and_seqlab_s_own_course_is_untouched(course, tmp_path):
    broken = tmp_path / "broken"
    (broken / "oops").mkdir(parents=True)
    (broken / "path.toml").write_text('[[part]]\nid = "x"\ntitle.en = "X"\nsteps = ["oops", "nowhere"]\n')
    (broken / "oops" / "step.toml").write_text('kind = "implement"\ntitle.en = "Oops"\n')
    done = seqlab("learn", "--course", str(broken), "--workspace", "ws", cwd=tmp_path)
    assert done.returncode == 2 and "names nowhere" in done.stderr and str(broken / "path.toml") in done.stderr
    plain = seqlab("learn", "--workspace", "other", cwd=tmp_path)
    assert plain.returncode == 0 and "layer_norm" not in plain.stdout and len(plain.stdout.splitlines()) == 49


def test_the_explorer_s_course_page_follows_the_course(course, tmp_path):
    import urllib.request
    environment = {**{k: v for k, v in os.environ.items() if k != "SEQLAB_COURSE"}, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "seqlab", "explore", "--course", str(course), "--no-browser",
                               "--port", "0", "--workspace", "ws"], cwd=tmp_path, env=environment,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline()                       # "seqlab explorer at http://127.0.0.1:PORT/ ..."
        url = first.split(" at ", 1)[1].split()[0]

        def post(name: str, body: dict) -> dict:
            request = urllib.request.Request(url + "api/" + name, json.dumps(body).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=120) as answer:
                return json.loads(answer.read())
        steps = [s["id"] for s in post("learn/path", {})["steps"]]
        assert len(steps) == 48 and steps[steps.index("multihead_attention") + 1] == "layer_norm"
        page = post("learn/lesson", {"step": "layer_norm", "lang": "zh"})
        assert "层归一化" in json.dumps(page, ensure_ascii=False)
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_the_static_site_follows_the_course(course, tmp_path):
    done = seqlab("learn", "site", "--course", str(course), "--out", "site", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for lang in ("en", "zh"):
        page = (tmp_path / "site" / lang / "layer_norm.html").read_text(encoding="utf-8")
        assert '"anchor": "mistake-' in page and "127.0.0.1" not in page
    assert (tmp_path / "site" / "en" / "trace_recurrence.html").is_file()          # seqlab's own steps kept
