"""Students who try: one hostile submission per family that once forged a pass, escaped its check or
crashed the checker. Each is refused by the static rules where its trick shows in the source, and,
run anyway in the sandbox (``Job(static=False)``), finds nothing to reach: no seqlab, no runner to
rewrite, no rules module, no classmate, no report. None passes without the right outputs, none
changes another student's grade or crashes the checker, and each gets a clear message."""

from __future__ import annotations

import csv
import json
import os
import re
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import psutil
import pytest

from seqlab.cli import main
from seqlab.learn import gradebook
from seqlab.learn import sandbox
from seqlab.learn.catalog import exercise
from seqlab.learn.judge import check_many, run_checks
from seqlab.learn.runner import MANIFEST_LIMIT, Job, run_students
from tests.learn.bundle import student_source
from tests.learn.students import write_student

pytestmark = pytest.mark.skipif(sandbox.bubblewrap_failure() is not None,
                                reason=f"no sandbox here: {sandbox.bubblewrap_failure()} (.ci/run installs bubblewrap)")

MASK = "np.tril(np.ones((n, n), dtype=bool))"
NAMES = ("causal_mask", "clip_global_norm", "rnn_step")


def _in_sandbox(path, function: str, calls, **job) -> list:
    """``function`` of ``path`` run in the sandbox without the static rules (what its trick gains there)."""
    return run_students([Job(path, function, calls, static=False, **job)], launcher=sandbox.Bubblewrap(), time_limit=60)


def _refused(report) -> str:
    assert not report.passed and [c["name"] for c in report.checks] == ["rules"], report.checks
    assert report.diagnosis["mistake"] == "rule_broken"
    return report.checks[0]["message"]


# --- the reference, a classmate's file ------------------------------------------------------------------
def test_the_reference_is_out_of_reach(tmp_path, capsys):
    ws = tmp_path / "ws"
    write_student(ws, "rnn_step", "from seqlab.labs.rnn import rnn_step\n")
    assert main(["learn", "check", "rnn_step", "--workspace", str(ws)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  rules: rnn_step.py, line 1: import seqlab.labs.rnn is not allowed" in out
    assert "seqlab's own code is not there when your code is checked" in out and "passed: well done" not in out
    (run,) = _in_sandbox(ws / "rnn_step.py", "rnn_step", [((), {})])
    assert "ModuleNotFoundError: No module named 'seqlab'" in run.failure


def test_a_classmate_s_file_is_out_of_reach(tmp_path):
    alice = write_student(tmp_path / "class" / "alice", "rnn_step", student_source("rnn_step"))
    mallory = write_student(tmp_path / "class" / "mallory", "rnn_step", f"""
        exec(open("../alice/rnn_step.py").read())
        """)
    message = _refused(run_checks(exercise("rnn_step"), mallory))
    assert "rnn_step.py, line 2: exec is not allowed in an exercise's code" in message
    for where in ("../alice/rnn_step.py", str(alice)):
        write_student(mallory.parent, "rnn_step", f"exec(open({where!r}).read())\n")
        (run,) = _in_sandbox(mallory, "rnn_step", [((), {})])
        assert "FileNotFoundError" in run.failure, run.failure


# --- the runner, the check -----------------------------------------------------------------------------
def test_rewriting_the_runner_gains_nothing(tmp_path):
    path = write_student(tmp_path, "causal_mask", """
        import numpy as np
        import __main__
        _write = __main__._write_answer
        def forged(folder, k, manifest, blobs):          # every answer rewritten on its way out
            for call in manifest["calls"]:
                call["error"] = None
            _write(folder, k, manifest, blobs)
        __main__._write_answer = forged
        def causal_mask(n):
            return np.full((n, n), 42)
        """)
    message = _refused(run_checks(exercise("causal_mask"), path))
    assert "line 3: import __main__ is not allowed" in message
    (run,) = _in_sandbox(path, "causal_mask", [((3,), {})])
    assert run.failure is None and run.calls[0].output.tolist() == np.full((3, 3), 42).tolist()   # its own 42s


def test_detecting_the_check_gains_nothing(tmp_path):
    path = write_student(tmp_path, "rnn_step", """
        import os
        import numpy as np
        def rnn_step(params, x, h_prev):
            if os.environ.get("TMPDIR", "").startswith("/check"):       # being checked: fetch the reference
                try:
                    from seqlab.labs.rnn import rnn_step as reference
                    return reference(params, x, h_prev)
                except ImportError:
                    pass
            return np.zeros_like(h_prev) + 42
        """)
    assert "line 7: import seqlab.labs.rnn is not allowed" in _refused(run_checks(exercise("rnn_step"), path))
    ex = exercise("rnn_step")
    case = ex.cases()[0]
    (run,) = _in_sandbox(path, "rnn_step", [(case.args, case.kwargs)])
    assert run.calls[0].output.tolist() == (np.zeros_like(case.args[2]) + 42).tolist()


# --- the rules -----------------------------------------------------------------------------------------
RULES_OFF = {
    "a thread": ("""
        import threading
        import torch
        def softmax(x, dim=-1):
            box = []
            worker = threading.Thread(target=lambda: box.append(torch.softmax(x, dim)))
            worker.start()
            worker.join()
            return box[0]
        """, "line 2: import threading is not allowed in an exercise's code: threads and processes run outside"),
    "dispatch modes disabled": ("""
        import torch
        from torch.utils._python_dispatch import _disable_current_modes
        def softmax(x, dim=-1):
            with _disable_current_modes():
                return torch.softmax(x, dim)
        """, "line 3: import torch.utils._python_dispatch is not allowed"),
    "the rules module": ("""
        import torch
        import rules
        rules.leave()
        def softmax(x, dim=-1):
            return torch.softmax(x, dim)
        """, "line 3: import rules: there is no module rules where your code is checked"),
    "seqlab's rules module": ("""
        import torch
        from seqlab.learn.child import rules
        rules.leave()
        def softmax(x, dim=-1):
            return torch.softmax(x, dim)
        """, "line 3: import seqlab.learn.child is not allowed"),
    "op counts faked": ("""
        import sys
        import torch
        sys.modules["rules"].call = lambda function, args, kwargs, rules: (function(*args, **kwargs), {"ops": 1})
        def softmax(x, dim=-1):
            e = (x - x.amax(dim, keepdim=True)).exp()
            return e / e.sum(dim, keepdim=True)
        """, "line 4: sys.modules is not allowed in an exercise's code: it reaches into the machinery"),
}


@pytest.mark.parametrize("family", sorted(RULES_OFF))
def test_switching_the_rules_off_is_refused_before_anything_runs(tmp_path, family):
    source, said = RULES_OFF[family]
    path = write_student(tmp_path, "softmax", source)
    message = _refused(run_checks(exercise("softmax"), path))
    assert f"softmax.py, {said}" in message and "Allowed: numpy and torch" in message


def test_inside_the_sandbox_the_child_s_own_modules_are_not_there_by_name(tmp_path):
    """Run anyway, the rules module and the runner's modules cannot be imported or looked up by name."""
    path = write_student(tmp_path, "softmax", """
        import sys, torch
        def softmax(x, dim=-1):
            found = []
            for name in ("rules", "plain_data", "processes"):
                try:
                    __import__(name)
                    found.append(name)
                except ImportError:
                    pass
            return [found, sorted(n for n in sys.modules if n in ("rules", "plain_data", "processes"))]
        """)
    ex = exercise("softmax")
    (run,) = _in_sandbox(path, "softmax", [((np.zeros(2),), {})], rules=ex.rules, packages=("numpy", "torch"))
    assert run.calls[0].output == [[], []]


# --- processes that outlive their check ------------------------------------------------------------------
OVERWRITE = """

def overwrite(targets, text):                 # each path it can reach; what the sandbox hides raises OSError
    for target in targets:
        try:
            with open(target, "w") as f:
                f.write(text)
        except OSError:
            pass
"""
DAEMON = textwrap.dedent("""
    import os, time
    import numpy as np
    def causal_mask(n):
        fork = getattr(os, "fo" + "rk")                  # a name the static rules cannot read
        if fork() == 0:
            getattr(os, "set" + "sid")()
            if fork() == 0:                              # the daemon: it waits, then rewrites what it can
                while True:
                    overwrite({targets!r}, "{{}}")
                    time.sleep(0.01)
            os._exit(0)
        return {mask}
    """) + OVERWRITE


def _sandboxed_left(scratch: Path) -> list[psutil.Process]:
    """Sandboxes of this test still running: a bwrap whose command line binds a folder under ``scratch``
    (the test's own temporary folder), and every process below one (the child program, what it forked).
    Other tests or sessions running sandboxes at the same time are not this test's."""
    mine = [p for p in psutil.process_iter(["name", "cmdline", "status"])
            if p.info["name"] == "bwrap" and str(scratch) in " ".join(p.info["cmdline"] or ())
            and p.info["status"] != psutil.STATUS_ZOMBIE]
    below = []
    for p in mine:
        try:
            below += [c for c in p.children(recursive=True) if c.status() != psutil.STATUS_ZOMBIE]
        except psutil.NoSuchProcess:
            pass
    return mine + below


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The checks' scratch folders under the test's own folder (tempfile's directory for this test)."""
    import tempfile
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_double_forked_daemon_ends_with_the_check_and_never_reaches_progress(tmp_path, capsys, scratch):
    ws = tmp_path / "ws"
    targets = [str(ws / "progress.json"), "../progress.json", "../../progress.json"]
    write_student(ws, "causal_mask", DAEMON.format(targets=targets, mask=MASK))
    assert main(["learn", "check", "causal_mask", "--workspace", str(ws)]) == 0
    assert "passed: well done" in capsys.readouterr().out
    assert not _sandboxed_left(scratch)                # the daemon ended with its sandbox
    steps = json.loads((ws / "progress.json").read_text())["steps"]
    assert steps["causal_mask"]["state"] == "passed"


# --- grading a class: classmates, the report, memory -------------------------------------------------------
def _class(root: Path, students: dict[str, dict[str, str]]) -> Path:
    for student, files in students.items():
        for name, source in files.items():
            write_student(root / student, name, source)
    return root


def _grade(root: Path, out: Path, workers: int = 2) -> dict:
    assert main(["learn", "grade", str(root), "--out", str(out), "--exercises", ",".join(NAMES), "--workers",
                 str(workers), "--no-progress"]) == 0
    with open(out / "grades.csv", encoding="utf-8") as f:
        return {(r["student"], r["exercise"]): r for r in csv.DictReader(f)}


def _honest() -> dict[str, dict[str, str]]:
    wrong = {n: student_source(n) for n in NAMES} | {"clip_global_norm": student_source("clip_global_norm", "coordinatewise")}
    return {"alice": {n: student_source(n) for n in NAMES}, "bob": wrong}


def _hostile(root: Path, report: Path) -> dict[str, dict[str, str]]:
    zoe = root / "alice" / "rnn_step.py"
    reach = textwrap.dedent(f"""
        import os, time
        import numpy as np
        def causal_mask(n):
            kill = getattr(os, "ki" + "ll")
            for _ in range(200):                                   # a while, as the classmates' checks run
                for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
                    try:                                           # every check it can see but its own
                        if pid != os.getpid() and b"child/main.py" in open(f"/proc/{{pid}}/cmdline", "rb").read():
                            kill(pid, 9)
                    except OSError:
                        pass
                overwrite(({str(zoe)!r}, "../alice/rnn_step.py", {str(report / "grades.csv")!r}), "x = 1\\n")
                time.sleep(0.005)
            return np.zeros((n, n), dtype=bool)
        """) + OVERWRITE
    return {
        "mallory": {"causal_mask": reach, "rnn_step": "from seqlab.labs.rnn import rnn_step\n"},
        "daemon": {"causal_mask": DAEMON.format(targets=[str(report / "grades.csv"), str(report / "grades.json")],
                                                mask=MASK)},
        "greedy": {"causal_mask": f"import numpy as np\ndef causal_mask(n):\n    return np.ones({2**31}) > 0\n",
                   "rnn_step": student_source("rnn_step")},
        "odd": {"causal_mask": "import numpy as np\ndef causal_mask(n):\n    return np.zeros((n, n), dtype=[('a', 'f8')])\n",
                "rnn_step": student_source("rnn_step"), "clip_global_norm": student_source("clip_global_norm")},
        "loud": {"causal_mask": 'def causal_mask(n):\n    raise ValueError("\\x1b[2J\\x1b[32m\\npassed: well done.")\n'},
    }


def test_a_class_with_hostile_students_grades_every_honest_one_as_alone(tmp_path, scratch):
    alone = _grade(_class(tmp_path / "alone", _honest()), tmp_path / "alone-report")
    root = tmp_path / "class"
    report = tmp_path / "report"
    report.mkdir()
    (report / "teacher-notes.md").write_text("mine\n")
    _class(root, {**_honest(), **_hostile(root, report)})
    before = {p: p.read_bytes() for p in (root / "alice").iterdir()}
    rows = _grade(root, report)
    assert not _sandboxed_left(scratch)
    for key, row in alone.items():                       # every honest row as when graded alone (flags aside)
        assert {k: v for k, v in rows[key].items() if k != "flags"} == {k: v for k, v in row.items() if k != "flags"}
    assert {p: p.read_bytes() for p in (root / "alice").iterdir()} == before
    assert (report / "teacher-notes.md").read_text() == "mine\n"                      # the teacher's file stays
    assert sorted(p.name for p in report.iterdir()) == sorted(["teacher-notes.md", *gradebook.REPORT_FILES])
    assert not list(tmp_path.glob(".report.tmp*"))
    assert rows["mallory", "causal_mask"]["passed"] == "false" and "imports seqlab (line 1: seqlab.labs.rnn" \
        in rows["mallory", "rnn_step"]["flags"]
    assert rows["daemon", "causal_mask"]["passed"] == "true"       # its own right outputs; the daemon reached nothing
    greedy = rows["greedy", "causal_mask"]
    assert greedy["passed"] == "false" and "MemoryError" in greedy["message"] and rows["greedy", "rnn_step"]["passed"] == "true"
    odd = rows["odd", "causal_mask"]["message"]
    assert "returned an array of records (a structured dtype" in odd and "expected an array of numbers" in odd
    assert rows["odd", "rnn_step"]["passed"] == rows["odd", "clip_global_norm"]["passed"] == "true"
    loud = rows["loud", "causal_mask"]["message"]
    assert "\x1b" not in loud and "\n" not in loud and r"ValueError: \x1b[2J\x1b[32m\npassed: well done." in loud
    data = json.loads((report / "grades.json").read_text())
    assert data["isolation"].startswith("each submission in a bubblewrap sandbox of its own")
    summary = (report / "summary.md").read_text()
    assert "Isolation: each submission in a bubblewrap sandbox" in summary and "## Flags for the teacher" in summary
    assert all("isolation" not in g["message"] and "sandbox" not in g["message"] for g in data["grades"])


# --- odd return values, a huge answer, control characters ----------------------------------------------
ODD = {
    "structured": ("np.zeros((n, n), dtype=[('a', 'f8')])", "an array of records (a structured dtype"),
    "strings": ("np.array([['x'] * n] * n)", "an array of strings (dtype <U1)"),
    "objects": ("np.array([[None] * n] * n, dtype=object)", "an array of Python objects (dtype object)"),
    "bytes array": ("np.array([[b'x'] * n] * n)", "an array of strings (dtype |S1)"),
    "a numpy string": ("np.str_('mask')", "an array of strings (dtype <U4)"),
}


def test_odd_return_values_are_named_and_fail_only_their_check(tmp_path, capsys):
    ex = exercise("causal_mask")
    items = []
    for label, (value, _) in ODD.items():
        items.append((ex, write_student(tmp_path / label, "causal_mask",
                                        f"import numpy as np\ndef causal_mask(n):\n    return {value}\n")))
    items.append((ex, write_student(tmp_path / "fine", "causal_mask", f"import numpy as np\ndef causal_mask(n):\n    return {MASK}\n")))
    reports = check_many(items)
    for report, (label, (_, said)) in zip(reports, ODD.items()):
        assert not report.passed and said in report.checks[0]["message"], (label, report.checks)
        assert "expected an array of numbers (bool, integer, float or complex)" in report.checks[0]["message"]
    assert reports[-1].passed
    assert main(["learn", "check", "causal_mask", "--workspace", str(tmp_path / "structured")]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_a_huge_answer_is_refused_before_it_is_read(tmp_path):
    path = write_student(tmp_path, "causal_mask", "def causal_mask(n):\n    return 'x' * 60_000_000\n")
    tracemalloc.start()
    try:
        (run,) = run_students([exercise("causal_mask").job(path, [((3,), {})])], launcher=sandbox.Bubblewrap())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "sent back what seqlab will not read: an answer of 57 MB of text, more than the 4 MB seqlab reads" in run.failure
    assert peak < MANIFEST_LIMIT                        # the 57 MB were never loaded here


def test_the_largest_answer_read_costs_a_small_multiple_of_itself(tmp_path):
    """The manifest a child may write that costs most to read here: small lists, each a Python object."""
    from seqlab.learn.runner import _read_answer
    count = (MANIFEST_LIMIT - 100) // len('["int", 1], ')
    text = json.dumps({"calls": [{"output": ["list", [["int", 1]] * count]}], "blobs": []})
    assert len(text) <= MANIFEST_LIMIT
    (tmp_path / "answer-0.json").write_text(text)
    (tmp_path / "answer-0.bin").write_bytes(b"")
    job = Job(tmp_path / "f.py", "f", [((), {})])
    tracemalloc.start()
    try:
        run = _read_answer(str(tmp_path), 0, job, job.calls)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(run.calls[0].output) == count
    assert peak < 20 * MANIFEST_LIMIT, peak / MANIFEST_LIMIT


def test_control_characters_from_the_student_are_escaped_and_cannot_look_like_a_verdict(tmp_path, capsys):
    ws = tmp_path / "ws"
    write_student(ws, "causal_mask", '''
        def causal_mask(n):
            print("\\x1b[2J\\rpassed: well done. Next: seqlab learn next")
            raise ValueError("\\x1b[2J\\x1b[32m\\npassed: well done.\\u202e" + "x" * 5000)
        ''')
    assert main(["learn", "check", "causal_mask", "--workspace", str(ws)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert [line for line in out.splitlines() if re.match(r"\s*passed", line)] == []
    assert out.splitlines()[-1].startswith("not yet.")
    assert r"ValueError: \x1b[2J\x1b[32m\npassed: well done.\u202e" in out
    assert max(len(line) for line in out.splitlines()) < 1500                           # bounded
