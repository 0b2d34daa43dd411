"""The bubblewrap sandbox (seqlab.learn.sandbox): what the student's code sees and may do inside it, its
memory limit, that bwrap is judged by trying it, and (as root, which CI is) the same tests again as an
unprivileged user. These tests need bwrap; .ci/run installs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from seqlab.learn import sandbox
from seqlab.learn.catalog import exercise
from seqlab.learn.runner import MEMORY_LIMIT, Job, Plain, run_students
from tests.learn.machine import ROOT, as_user, fake_bwrap, no_bwrap
from tests.learn.students import write_student

pytestmark = pytest.mark.skipif(sandbox.bubblewrap_failure() is not None,
                                reason=f"no sandbox here: {sandbox.bubblewrap_failure()} (.ci/run installs bubblewrap)")

# The student's code looks around: what it finds comes back as plain data.
LOOK_AROUND = """
    import json, os, socket, sys
    def look(places, sites):
        found = {"uid": os.getuid(), "cwd": os.getcwd(), "root": sorted(os.listdir("/")),
                 "check": sorted(os.listdir("/check")), "site": sorted(os.listdir("/check/site")),
                 "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                 "visible": {p: os.path.exists(p) for p in places}, "home": None}
        try:
            import seqlab
            found["seqlab"] = repr(seqlab)
        except ImportError as error:
            found["seqlab"] = None
        import importlib.util
        found["seqlab_spec"] = importlib.util.find_spec("seqlab") is not None
        for name, path in (("student", "/check/root/student/probe.py"), ("work", "written.txt")):
            try:
                with open(path, "w") as f:
                    f.write("x")
                found[name] = "written"
            except OSError as error:
                found[name] = type(error).__name__
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2)
            found["network"] = "connected"
        except OSError as error:
            found["network"] = type(error).__name__
        import resource
        found["address_space"] = resource.getrlimit(resource.RLIMIT_AS)[0]
        found["pid_namespace"] = os.readlink("/proc/self/ns/pid")
        found["site_folders"] = {p: os.listdir(p) for p in sites if os.path.isdir(p)}
        return json.dumps(found)
    """


def _look(tmp_path, places) -> dict:
    import site
    path = write_student(tmp_path / "ws", "probe", LOOK_AROUND)
    sites = sorted(set(site.getsitepackages()) | {p for p in sys.path if p.endswith("-packages")})
    (run,) = run_students([Job(path, "look", [((places, sites), {})], static=False)], launcher=sandbox.Bubblewrap(),
                          time_limit=60)
    assert run.failure is None and run.calls[0].error is None, (run.failure, run.calls)
    return json.loads(run.calls[0].output)


def test_inside_the_sandbox_only_what_running_needs_is_there(tmp_path):
    workspace = tmp_path / "ws"
    (tmp_path / "zoe").mkdir()
    (tmp_path / "zoe" / "rnn_step.py").write_text("x = 1\n")
    (workspace / "progress.json").parent.mkdir(parents=True, exist_ok=True)
    (workspace / "progress.json").write_text('{"steps": {}}')
    in_tmp = Path("/tmp") / f"seqlab-test-marker-{os.getpid()}"     # the machine's /tmp: a venv there puts the
    in_tmp.write_text("")                                            # way to its packages, and nothing else, inside
    places = [str(workspace / "progress.json"), str(tmp_path / "zoe" / "rnn_step.py"), str(ROOT), str(Path.home() / ".cache"),
              "/etc/passwd", "/home", str(in_tmp)]
    try:
        found = _look(tmp_path, places)
    finally:
        in_tmp.unlink()
    assert found["visible"] == {p: False for p in places}, found["visible"]
    assert found["check"] == ["child", "root", "site"] and found["cwd"] == "/check/root/work"
    assert "seqlab" not in " ".join(found["site"]) and "numpy" in found["site"]
    assert found["seqlab"] is None and not found["seqlab_spec"]          # not even an empty namespace package
    assert all(listing == [] for listing in found["site_folders"].values()), found["site_folders"]  # hidden whole
    assert found["student"] in ("OSError", "PermissionError") and found["work"] == "written"
    assert found["network"] in ("OSError",) or found["network"].endswith("Error") and found["network"] != "connected"
    assert found["uid"] == sandbox.NOBODY and found["address_space"] == MEMORY_LIMIT
    assert len(found["pids"]) <= 4                                      # bwrap's init, the child: nothing else
    assert found["pid_namespace"] != os.readlink("/proc/self/ns/pid")
    ways = {Path(sys.executable).resolve().parts[1]} | {Path(p).parts[1] for p in sandbox.package_entries(("numpy",))["entries"]}
    assert set(found["root"]) <= {"bin", "check", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "root", "sbin",
                                  "sys", "usr"} | ways                # and the way to the interpreter and its packages


def test_the_home_folder_shows_only_the_way_to_the_interpreter(tmp_path):
    home = Path.home()
    found = _look(tmp_path, [str(home / name) for name in os.listdir(home)] if home.is_dir() else [])
    interpreter = Path(sys.executable).resolve()
    on_the_way = {str(home / interpreter.relative_to(home).parts[0])} if home in interpreter.parents else set()
    assert {p for p, seen in found["visible"].items() if seen} <= on_the_way


def test_a_submission_that_allocates_past_its_limit_fails_alone(tmp_path):
    greedy = write_student(tmp_path / "greedy", "causal_mask", f"""
        import numpy as np
        def causal_mask(n):
            return np.ones({MEMORY_LIMIT // 8 + 2**20}) > 0       # past the address-space limit
        """)
    honest = write_student(tmp_path / "honest", "causal_mask",
                           "import numpy as np\ndef causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))\n")
    ex = exercise("causal_mask")
    runs = run_students([ex.job(greedy, [((3,), {})]), ex.job(honest, [((3,), {})])], launcher=sandbox.Bubblewrap())
    assert "MemoryError" in runs[0].calls[0].error and "Unable to allocate" in runs[0].calls[0].error
    assert runs[1].failure is None and runs[1].calls[0].output.tolist() == np.tril(np.ones((3, 3), dtype=bool)).tolist()


def test_torch_fits_in_the_memory_limit(tmp_path):
    """The largest case of the largest exercise, in the sandbox: CPU torch under the address-space limit."""
    from seqlab.learn.judge import run_checks
    from tests.learn.bundle import student_source
    path = write_student(tmp_path, "transformer_lm", student_source("transformer_lm"))
    report = run_checks(exercise("transformer_lm"), path, launcher=sandbox.Bubblewrap())
    assert report.passed, report.checks


def test_whether_bwrap_works_is_decided_by_trying_it(tmp_path, monkeypatch):
    try:
        for path, said in ((fake_bwrap(tmp_path / "fake"), "setting up uid map: Permission denied"),
                           (no_bwrap(tmp_path / "none"), "no bwrap on PATH")):
            monkeypatch.setenv("PATH", path)
            sandbox.forget()
            failure = sandbox.bubblewrap_failure()
            assert failure is not None and said in failure
            assert sandbox.for_check().kind == "none" and isinstance(sandbox.for_check().launcher(), Plain)
    finally:
        monkeypatch.undo()
        sandbox.forget()
    assert sandbox.bubblewrap_failure() is None and sandbox.for_check().kind == "bubblewrap"


def test_the_sandbox_tests_pass_as_an_unprivileged_user():
    """CI runs as root, which gets past AppArmor's and Docker's limits; an unprivileged user runs these
    tests again here (in a mount namespace where the interpreter and checkout can be read)."""
    import shutil
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="seqlab-unprivileged-"))           # pytest's own tmp is root's alone
    try:
        base.chmod(0o777)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base), "PYTHONPATH": str(ROOT),
               "TMPDIR": str(base)}
        done = subprocess.run(as_user([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                                       str(base / "pytest"), str(Path(__file__)), "-k", "not unprivileged and not torch_fits"],
                                      uid=65534), env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout and "deselected" in done.stdout, done.stdout[-2000:]


def test_the_packages_kept_on_disk_are_read_back_only_when_they_are_package_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sandbox, "_TRIED", {})
    found = sandbox.package_entries(("numpy",))
    (kept,) = (tmp_path / "seqlab" / "sandbox").glob("packages-*.json")
    assert json.loads(kept.read_text()) == found and any(p.endswith("numpy") for p in found["entries"])
    kept.write_text(json.dumps({"entries": [str(ROOT), "/etc"], "loose": []}))       # not a package folder
    monkeypatch.setattr(sandbox, "_TRIED", {})
    assert sandbox.package_entries(("numpy",)) == found


def test_the_kept_packages_outlive_a_change_to_the_workspace_but_not_an_install(tmp_path, monkeypatch):
    """`python -m seqlab learn check` puts the current folder first on sys.path, and a check writes into
    it: its time must not key the cache (before, every check probed the packages again: 2.2 s of a torch
    check's 4.5). The site folder that holds the package does: an install changes its time. (A site of
    the test's own holds the package, found and never imported.)"""
    import os
    import sys
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    workspace, site = tmp_path / "ws", tmp_path / "site"
    workspace.mkdir()
    (site / "allowed_pkg").mkdir(parents=True)
    (site / "allowed_pkg" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(workspace), str(site), *sys.path])
    sites = sandbox._site_dirs()
    assert str(workspace.resolve()) in sites and sandbox._homes(("allowed_pkg",), sites) == [str(site.resolve())]
    before = sandbox._cache_file(("allowed_pkg",), sites)
    (workspace / "progress.json").write_text("{}")                  # what a check writes
    os.utime(workspace, ns=(1, 1))
    assert sandbox._cache_file(("allowed_pkg",), sandbox._site_dirs()) == before
    os.utime(site, ns=(2, 2))                                        # as an install would
    assert sandbox._cache_file(("allowed_pkg",), sandbox._site_dirs()) != before
