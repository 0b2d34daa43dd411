"""Where bwrap will not run: a ``bwrap`` on PATH that fails as AppArmor makes it fail, and none at all
(tests/learn/machine.py). `learn check` works as before, with a note once per workspace, and undoes
what the student's code writes to progress.json; `learn grade` runs each submission as a user of its
own where it can (root), refuses otherwise unless given --no-sandbox, and --gradescope still writes
results.json. The report says which isolation was used; the students' feedback never does."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.learn import sandbox
from tests.learn.bundle import student_source
from tests.learn.machine import ROOT, as_user, fake_bwrap, no_bwrap
from tests.learn.students import write_student

WAYS = {"a bwrap that fails": fake_bwrap, "no bwrap": no_bwrap}


WHY = {"a bwrap that fails": "setting up uid map: Permission denied", "no bwrap": "no bwrap on PATH"}


@pytest.fixture(params=sorted(WAYS))
def without_bwrap(request, tmp_path, monkeypatch):
    """PATH with a failing bwrap, or none; the trial forgotten before and after. Gives the way's name."""
    monkeypatch.setenv("PATH", WAYS[request.param](tmp_path / "bin"))
    sandbox.forget()
    yield request.param
    monkeypatch.undo()
    sandbox.forget()


def test_check_works_with_a_note_once_per_workspace_and_undoes_writes_to_progress(tmp_path, capsys, without_bwrap):
    ws = tmp_path / "ws"
    write_student(ws, "causal_mask", student_source("causal_mask"))
    write_student(ws, "rnn_step", """
        import json, pathlib
        (pathlib.Path(__file__).parent / "progress.json").write_text(json.dumps({"steps": {"rnn_step": {"state": "passed"}}}))
        def rnn_step(params, x, h_prev):
            return None
        """)
    assert main(["learn", "check", "causal_mask", "--workspace", str(ws)]) == 0
    out = capsys.readouterr().out
    said = " ".join(out.split())                                      # the note is wrapped
    assert "note: your code ran without a sandbox on this machine (" in said and "passed: well done" in said
    assert WHY[without_bwrap] in said
    assert main(["learn", "check", "rnn_step", "--workspace", str(ws)]) == 1
    out = capsys.readouterr().out
    assert "without a sandbox" not in out                             # once per workspace
    steps = json.loads((ws / "progress.json").read_text())["steps"]
    assert steps["causal_mask"]["state"] == "passed" and steps["rnn_step"]["state"] == "started"
    assert list(json.loads((ws / "progress.json").read_text())["notes"]) == ["no sandbox"]


def _class(root: Path) -> Path:
    write_student(root / "alice", "causal_mask", student_source("causal_mask"))
    write_student(root / "bob", "causal_mask", "def causal_mask(n):\n    return 0\n")
    return root


def _grade_command(*args) -> list[str]:
    return [sys.executable, "-m", "seqlab", "learn", "grade", *map(str, args), "--no-progress", "--exercises", "causal_mask"]


@pytest.fixture
def shared_tmp():
    """A folder every user may enter (pytest's own tmp is root's alone)."""
    base = Path(tempfile.mkdtemp(prefix="seqlab-shared-"))
    base.chmod(0o777)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _unprivileged(argv: list[str]) -> list[str]:
    """``argv`` as an unprivileged user: as it is when this is one, else as nobody (tests/learn/machine.py)."""
    return argv if os.geteuid() != 0 else as_user(argv, uid=65534)


@pytest.mark.parametrize("way", sorted(WAYS))
def test_grade_without_any_isolation_refuses_unless_told_and_gradescope_still_writes(shared_tmp, way):
    path = WAYS[way](shared_tmp / "bin")
    env = {"PATH": path, "HOME": str(shared_tmp), "PYTHONPATH": str(ROOT), "TMPDIR": str(shared_tmp)}
    classroom = _class(shared_tmp / "class")          # readable to all; the grader writes beside it (0777)
    run = lambda argv: subprocess.run(_unprivileged(argv), env=env, capture_output=True, text=True, timeout=600)  # noqa: E731
    refused = run(_grade_command(classroom, "--out", shared_tmp / "report"))
    assert refused.returncode == 1 and "the students' code cannot be kept apart here" in refused.stderr
    assert "--no-sandbox" in refused.stderr and not (shared_tmp / "report").exists()
    told = run(_grade_command(classroom, "--out", shared_tmp / "report", "--no-sandbox"))
    assert told.returncode == 0, told.stderr
    with open(shared_tmp / "report" / "grades.csv", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["alice"]["passed"] == "true" and rows["bob"]["passed"] == "false"
    summary = (shared_tmp / "report" / "summary.md").read_text()
    assert "Isolation: no isolation: every submission ran as this user" in summary
    assert all("isolation" not in r["message"] for r in rows.values())
    results = shared_tmp / "results" / "results.json"
    graded = run(_grade_command("--gradescope", "--submission", classroom / "alice", "--results", results))
    assert graded.returncode == 0, graded.stderr
    data = json.loads(results.read_text())
    assert data["score"] == 1 and "isolation" not in json.dumps(data)               # the students read results.json
    assert "isolation: no isolation" in graded.stdout                               # the teacher reads stdout
    assert sorted(p.name for p in results.parent.iterdir()) == ["results.json"]


def test_as_root_each_submission_runs_as_a_user_of_its_own(tmp_path):
    path = fake_bwrap(tmp_path / "bin")
    env = {"PATH": path, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    classroom = _class(tmp_path / "class")
    report = tmp_path / "report"
    alice = classroom / "alice" / "causal_mask.py"
    write_student(classroom / "mallory", "causal_mask", f"""
        import os
        import numpy as np
        def causal_mask(n):
            for target in ({str(alice)!r}, {str(report / "grades.csv")!r}, "/etc/seqlab-was-here"):
                try:
                    with open(target, "w") as f:
                        f.write("x = 1\\n")
                except OSError:
                    pass
            kill = getattr(os, "ki" + "ll")
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
                try:
                    if pid != os.getpid() and b"child/main.py" in open(f"/proc/{{pid}}/cmdline", "rb").read():
                        kill(pid, 9)
                except OSError:
                    pass
            return np.tril(np.ones((n, n), dtype=bool))
        """)
    before = alice.read_bytes()
    done = subprocess.run(as_user(_grade_command(classroom, "--out", report)), env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "(user isolation" in done.stdout
    summary = (report / "summary.md").read_text()
    assert "Isolation: each submission as a user of its own (bubblewrap could not run" in summary
    assert "setting up uid map: Permission denied" in summary
    with open(report / "grades.csv", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["alice"]["passed"] == "true" and rows["bob"]["passed"] == "false"
    assert rows["mallory"]["passed"] == "true"                     # its own right outputs; it reached nothing
    assert alice.read_bytes() == before and not Path("/etc/seqlab-was-here").exists()
    assert not [p for p in _processes_of_users() if p >= sandbox.USER_BASE]


def _processes_of_users() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            found.append(os.stat(f"/proc/{entry}").st_uid) if entry.isdigit() else None
        except OSError:
            continue
    return found
