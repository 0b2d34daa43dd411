"""The trust boundary of `seqlab learn check`: the student's code runs only in a child process, what
comes back is plain data, nothing it starts outlives its check, and it cannot forge a pass.

Each test writes a hostile student file, checks it, and looks at the machine afterwards (psutil). The
static rules refuse most of these files before they run (tests/learn/test_hostile.py); here they run
anyway (``Job(static=False)``, or a name the rules cannot read), to test the nets behind the rules."""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch

from seqlab.cli import main
from seqlab.learn import compare
from seqlab.learn.catalog import exercise
from seqlab.learn.judge import run_checks as check
from seqlab.learn.child.plain_data import Encoder, Unsendable, decode
from seqlab.learn.runner import Job, death, run_student, run_students
from tests.learn.students import student_children, write_student

ROOT = Path(__file__).resolve().parents[2]
CORRECT_MASK = "np.tril(np.ones((n, n), dtype=bool))"


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_for(path: Path, seconds: float = 60.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


# --- plain data ------------------------------------------------------------------------------------
def _round_trip(value):
    encoder = Encoder()
    tree = encoder.encode(value)
    return decode(json.loads(json.dumps(tree)), encoder.blobs)


def test_plain_data_comes_back_as_itself_types_dtypes_and_keys_kept():
    value = {
        "f64": np.arange(6, dtype=np.float64).reshape(2, 3), "f32": np.array([1.5, -0.0], dtype=np.float32),
        "bool": np.array([[True, False]]), "zero_d": np.array(3, dtype=np.int16), "scalar": np.float32(2.5),
        "int64": np.int64(-7), "npbool": np.bool_(True), (1, b"ab"): (None, True, 3, 2.0, float("nan"), -0.0),
        7: [b"\x00\xff", "中文", [1, [2, [3]]]], "big": 2 ** 100,
        "tensor": torch.tensor([[1.0, 2.0]], dtype=torch.float64), "half": torch.tensor([0.1], dtype=torch.bfloat16),
        "ids": torch.tensor([3, 4]), "param": torch.nn.Parameter(torch.ones(2, dtype=torch.float32)),
    }
    back = _round_trip(value)
    assert list(back) == list(value)                     # the keys, their order and their types
    for key, original in value.items():
        got = back[key]
        if isinstance(original, torch.Tensor):
            assert type(got) is torch.Tensor and got.dtype == original.dtype and got.shape == original.shape
            assert torch.equal(got, original.detach()) and not got.requires_grad
        elif isinstance(original, (np.ndarray, np.generic)):
            assert type(got) is type(original) and got.dtype == original.dtype and np.shape(got) == np.shape(original)
            assert np.array_equal(got, original)
    assert back[(1, b"ab")][:4] == (None, True, 3, 2.0) and type(back[(1, b"ab")]) is tuple
    assert np.isnan(back[(1, b"ab")][4]) and np.copysign(1, back[(1, b"ab")][5]) == -1
    assert back[7] == [b"\x00\xff", "中文", [1, [2, [3]]]] and back["big"] == 2 ** 100


class Weird(np.ndarray):
    pass


class Payload:
    def __reduce__(self):
        return (os.system, ("echo owned",))


@pytest.mark.parametrize(("value", "words"), [
    (np.eye(2).view(Weird), ["returned a", "Weird (a subclass of numpy.ndarray), expected a plain numpy.ndarray"]),
    ({"w": Payload()}, ["returned a", "Payload as output['w'], expected plain data"]),
    ((x for x in range(3)), ["returned a generator, expected plain data"]),
    ([{1, 2}], ["returned a set as output[0], expected plain data"]),
    (np.array([object()]), ["array of Python objects (dtype object) as output"]),
    (np.ma.masked_array([1.0]), ["MaskedArray (a subclass of numpy.ndarray)"]),
])
def test_anything_else_is_named_and_refused(value, words):
    with pytest.raises(Unsendable) as error:
        Encoder().encode(value)
    for word in words:
        assert word in str(error.value)


def test_deep_nesting_and_huge_values_are_refused(monkeypatch):
    nested: list = []
    for _ in range(100):
        nested = [nested]
    with pytest.raises(Unsendable, match="nested more than"):
        Encoder().encode(nested)
    import seqlab.learn.child.plain_data as plain_data
    monkeypatch.setattr(plain_data, "RESULT_LIMIT", 1000)
    with pytest.raises(Unsendable, match="more than 0 MB"):
        Encoder().encode(np.zeros(200))


@pytest.mark.parametrize("blob", [
    pickle.dumps(np.array([1.0])),                                     # a pickle: never loaded
    b"\x93NUMPY\x01\x00" + b"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }".ljust(118) + b"\n" + b"x" * 8,
    b"not an array at all",
])
def test_the_reader_refuses_what_is_not_plain_data(blob):
    with pytest.raises(ValueError):
        decode(["ndarray", 0], [blob])
    with pytest.raises(ValueError):
        decode(["object", "os.system"], [])
    npz = io.BytesIO()
    np.savez(npz, a=np.ones(2))
    with pytest.raises(ValueError):
        decode(["ndarray", 0], [npz.getvalue()])


# --- hostile student code ---------------------------------------------------------------------------
def test_a_return_value_that_would_run_code_when_unpickled_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "unpickled"
    path = write_student(tmp_path / "ws", "causal_mask", f"""
        import numpy as np

        class Sneaky:
            # unpickled, this would replace the checker's comparison with one that always agrees
            def __reduce__(self):
                return (exec, ("import seqlab.learn.compare as c; c.agrees = c.first_difference = lambda *a, **k: None; "
                               "open({str(marker)!r}, 'w').write('ran')",))

        def causal_mask(n):
            return Sneaky()
        """)
    (run,) = run_students([Job(path, "causal_mask", [((3,), {})], static=False)], time_limit=30)
    assert "returned a student_causal_mask.Sneaky, expected plain data" in run.calls[0].error
    assert not marker.exists()
    assert compare.first_difference(np.ones(1), np.zeros(1), "x") is not None


def test_an_ndarray_subclass_from_a_helper_module_gets_a_clear_message(tmp_path):
    ws = tmp_path / "ws"
    write_student(ws, "helper", """
        import numpy as np
        class Mask(np.ndarray):
            def __reduce__(self):
                raise RuntimeError("the checker must never pickle me")
        """)
    path = write_student(ws, "causal_mask", f"""
        import numpy as np
        from helper import Mask
        def causal_mask(n):
            return {CORRECT_MASK}.view(Mask)
        """)
    report = check(exercise("causal_mask"), path, time_limit=30)
    failed = next(c for c in report.checks if not c["passed"])
    assert "returned a helper.Mask (a subclass of numpy.ndarray), expected a plain numpy.ndarray" in failed["message"]
    assert "np.asarray" in failed["message"]


def test_a_fork_that_spins_does_not_outlive_its_check(tmp_path):
    pids = tmp_path / "pids"
    path = write_student(tmp_path / "ws", "causal_mask", f"""
        import os
        import numpy as np

        def causal_mask(n):
            if os.fork() == 0:                       # a child that spins
                if os.fork() == 0:                   # and a daemon that leaves the session
                    os.setsid()
                    with open({str(pids)!r} + ".daemon", "w") as f:
                        f.write(str(os.getpid()))
                    while True:
                        pass
                with open({str(pids)!r} + ".spinner", "w") as f:
                    f.write(str(os.getpid()))
                while True:
                    pass
            import time
            time.sleep(0.3)
            return {CORRECT_MASK}
        """)
    (run,) = run_students([Job(path, "causal_mask", [((3,), {})], static=False)], time_limit=30)
    assert run.failure is None and run.calls[0].output.tolist() == np.tril(np.ones((3, 3), dtype=bool)).tolist()
    spinner, daemon = int(_wait_for(Path(f"{pids}.spinner"))), int(_wait_for(Path(f"{pids}.daemon")))
    deadline = time.monotonic() + 5
    while not (_gone(spinner) and _gone(daemon)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(spinner) and _gone(daemon)


def test_a_check_that_loops_in_its_import_is_timed_and_its_forks_end_with_it(tmp_path):
    pids = tmp_path / "pid"
    path = write_student(tmp_path / "ws", "causal_mask", f"""
        import os
        if os.fork() == 0:
            open({str(pids)!r}, "w").write(str(os.getpid()))
        while True:                                  # the import itself never ends
            pass
        """)
    ok = write_student(tmp_path / "ok", "causal_mask", f"import numpy as np\ndef causal_mask(n):\n    return {CORRECT_MASK}\n")
    runs = run_students([Job(path, "causal_mask", [((3,), {})], static=False), Job(ok, "causal_mask", [((2,), {})])],
                        time_limit=1.0)
    assert runs[0].timed_out and "did not finish within 1 s" in runs[0].failure
    assert runs[1].failure is None and runs[1].calls[0].output.tolist() == [[True, False], [True, True]]
    forked = int(_wait_for(pids))
    assert _gone(forked)


def test_a_child_killed_by_a_signal_runs_again_and_only_a_second_death_fails_it(tmp_path):
    always = write_student(tmp_path / "always", "causal_mask", """
        import os, signal
        def causal_mask(n):
            os.kill(os.getpid(), signal.SIGKILL)
        """)
    # killed once, as a signal from outside would: the scratch folder's tmp/ outlives the first child
    once = write_student(tmp_path / "once", "causal_mask", f"""
        import os, signal
        import numpy as np
        def causal_mask(n):
            marker = os.path.join(os.environ["TMPDIR"], "killed-once")
            if not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            return {CORRECT_MASK}
        """)
    dies, lives = run_students([Job(always, "causal_mask", [((3,), {})], static=False),
                                Job(once, "causal_mask", [((3,), {})], static=False)], time_limit=30)
    assert "was killed by SIGKILL (signal 9) twice, each time in a fresh process: a kill that cannot be caught" \
        in dies.failure and "out-of-memory killer" in dies.failure
    assert lives.failure is None and lives.calls[0].output.tolist() == np.tril(np.ones((3, 3), dtype=bool)).tolist()
    assert lives.note == "its first run was killed by SIGKILL (signal 9): a kill that cannot be caught: from the code " \
        "itself (os.kill), or from the machine (its out-of-memory killer, an administrator); more memory than the " \
        "limit raises MemoryError instead; it was run again in a fresh process"
    assert str(death(-signal.SIGSEGV)).startswith("was killed by SIGSEGV (signal 11): a crash inside native code")
    assert str(death(3)) == "died (exit status 3)"


def test_a_student_file_cannot_forge_progress(tmp_path, capsys):
    ws = tmp_path / "ws"
    path = write_student(ws, "causal_mask", """
        import hashlib, json, pathlib
        here = pathlib.Path(__file__)
        digest = hashlib.sha256(here.read_bytes()).hexdigest()
        steps = {name: {"state": "passed", "sha256": digest} for name in ("causal_mask", "rnn_step", "attention")}
        (here.parent / "progress.json").write_text(json.dumps({"steps": steps}))
        def causal_mask(n):
            return None                              # wrong
        """)
    (ws / "progress.json").write_text(json.dumps({"steps": {"trace_recurrence": {"state": "passed"}}}))
    assert main(["learn", "check", "causal_mask", "--workspace", str(ws)]) == 1
    assert "passed: well done" not in capsys.readouterr().out
    steps = json.loads((ws / "progress.json").read_text())["steps"]
    assert set(steps) == {"trace_recurrence", "causal_mask"} and steps["causal_mask"]["state"] == "started"
    assert main(["learn", "--workspace", str(ws)]) == 0
    assert "1 of" in capsys.readouterr().out
    assert path.is_file()


@pytest.mark.parametrize("sandboxed", [True, False], ids=["in the sandbox", "without one"])
def test_the_explorer_s_panel_undoes_what_the_student_s_code_writes_to_progress(tmp_path, monkeypatch, sandboxed):
    """In the sandbox the write cannot happen (the student's folder is read-only there, progress.json
    not in it); without one (no bwrap on PATH) it is undone."""
    from seqlab.explorer.learn_api import yours
    from seqlab.learn import sandbox
    from tests.learn.machine import no_bwrap
    if sandboxed and sandbox.bubblewrap_failure() is not None:
        pytest.skip(f"no sandbox here: {sandbox.bubblewrap_failure()}")
    if not sandboxed:
        monkeypatch.setenv("PATH", no_bwrap(tmp_path / "bin"))
        monkeypatch.setattr(sandbox, "_TRIED", {})          # this test's PATH is tried afresh, and forgotten after
    ws = tmp_path / "ws"
    write_student(ws, "causal_mask", """
        import pathlib
        (pathlib.Path(__file__).parent / "progress.json").write_text('{"steps": {"causal_mask": {"state": "passed"}}}')
        import numpy as np
        def causal_mask(n):
            return np.tril(np.ones((n, n), dtype=bool))
        """)
    result = yours({"widget": "causal_mask", "exercise": "causal_mask", "inputs": {"tokens": ["a", "b"]}}, str(ws))
    if sandboxed:
        assert not result["implemented"] and "Error" in result["failure"]       # a read-only folder
    else:
        assert result["implemented"] and result["calls"][0]["difference"] is None
    assert not (ws / "progress.json").exists()


def test_a_workspace_file_that_links_outside_is_refused(tmp_path, capsys):
    from seqlab.explorer.learn_api import yours
    from seqlab.explorer.validation import RequestError
    elsewhere = write_student(tmp_path / "elsewhere", "causal_mask", f"import numpy as np\ndef causal_mask(n):\n    return {CORRECT_MASK}\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "causal_mask.py").symlink_to(elsewhere)
    assert main(["learn", "check", "causal_mask", "--workspace", str(ws)]) == 1
    err = capsys.readouterr().err
    assert "is a link to" in err and "outside the workspace" in err
    with pytest.raises(RequestError, match="outside the workspace"):
        yours({"widget": "causal_mask", "exercise": "causal_mask", "inputs": {}}, str(ws))


def test_the_runtime_rules_enter_before_the_import_count_each_call_and_leave(tmp_path):
    """The child's own rules module (seqlab.learn.child.rules): a function bound at import time is
    caught, a call that keeps the rules is counted, and a job without rules finds torch as it was."""
    uses = write_student(tmp_path / "a", "f", """
        import torch
        from torch.nn.functional import softmax          # bound at import: after the rules entered
        def f(x):
            return softmax(x, dim=-1)
        """)
    fine = write_student(tmp_path / "b", "f", """
        import torch
        def f(x):
            e = (x - x.amax(-1, keepdim=True)).exp()
            return e / e.sum(-1, keepdim=True)
        """)
    after = write_student(tmp_path / "c", "f", "import torch\ndef f(x):\n    return torch.softmax(x, -1)\n")
    calls = [((torch.tensor([[1.0, 2.0], [0.0, 0.0]]),), {})]
    rules = {"forbid": ["functional", "softmax"]}
    runs = run_students([Job(uses, "f", calls, rules=rules, packages=("numpy", "torch"), static=False),
                         Job(fine, "f", calls, rules=rules, packages=("numpy", "torch")),
                         Job(after, "f", calls, packages=("numpy", "torch"))], time_limit=60)
    broke = runs[0].calls[0]
    assert broke.broke_rule == broke.error and "torch.nn.functional.softmax breaks this exercise's rule" in broke.error
    good = runs[1].calls[0]
    assert good.broke_rule is None and good.error is None
    assert torch.allclose(good.output, torch.tensor([[1.0, 2.0], [0.0, 0.0]]).softmax(-1))
    assert good.extra["ops"] > 0 and good.extra["ops_before"] is None
    plain = runs[2].calls[0]                      # leave() put torch back; without rules, extra is empty
    assert plain.error is None and plain.extra == {} and plain.broke_rule is None


def _checker(ws: Path, tmp: Path, body: str) -> tuple[subprocess.Popen, Path]:
    """`seqlab learn check causal_mask` in its own process, with TMPDIR in ``tmp`` (its scratch folders)."""
    write_student(ws, "causal_mask", body)
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    return subprocess.Popen([sys.executable, "-m", "seqlab", "learn", "check", "causal_mask", "--workspace", str(ws)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), tmp


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_and_sigterm_end_the_child_its_forks_and_the_scratch_folder(tmp_path, signum, status):
    checker, tmp = _checker(tmp_path / "ws", tmp_path / "tmp", """
        import os
        def causal_mask(n):
            getattr(os, "fo" + "rk")()               # a fork the static rules cannot read: both spin
            while True:
                pass
        """)
    try:
        deadline, running = time.monotonic() + 60, []
        while len(running) < 2 and time.monotonic() < deadline:       # the child and its fork, in their loop
            below = psutil.Process(checker.pid).children(recursive=True)   # every process, for the end
            running = student_children(checker.pid, cpu_seconds=0.05)
            time.sleep(0.05)
        assert len(running) == 2 and any(tmp.iterdir())           # the scratch folder exists
        checker.send_signal(signum)
        out, err = checker.communicate(timeout=60)
    finally:
        if checker.poll() is None:
            checker.kill()
    assert checker.returncode == status, (out, err)
    assert "Traceback" not in err
    assert ("interrupted" if signum == signal.SIGINT else "SIGTERM: stopped; the student's code and every process "
            "it started were ended") in err
    assert all(_gone(p.pid) for p in below)
    assert not any(tmp.iterdir())                          # the scratch folder is removed


def test_one_warm_child_runs_a_batch_unless_a_check_leaves_threads_running(tmp_path):
    pid = "import os\ndef f():\n    return os.getpid()\n"
    threads = ("import os, threading\ndef spin():\n    while True:\n        pass\n"
               "def f():\n    threading.Thread(target=spin, daemon=True).start()\n    return os.getpid()\n")
    a, b, c = (write_student(tmp_path / name, "f", text) for name, text in (("a", pid), ("b", threads), ("c", pid)))
    runs = run_students([Job(path, "f", [((), {})], static=False) for path in (a, a, b, c)], time_limit=30)
    pids = [run.calls[0].output for run in runs]
    assert pids[0] == pids[1] == pids[2]             # one warm child for the first three checks
    assert pids[3] != pids[2]                         # the spinning thread's child was retired
    assert all(run.failure is None for run in runs)


def test_an_exception_that_cannot_say_itself_and_an_argument_that_cannot_be_compared(tmp_path):
    path = write_student(tmp_path, "f", """
        class Mute(Exception):
            def __str__(self):
                raise RuntimeError("no")

        class Odd:
            def __eq__(self, other):
                raise RuntimeError("no comparison")

        def f(params):
            if params.get("raise"):
                raise Mute()
            params["w"] = Odd()
            return 1
        """)
    run = run_student(path, "f", [(({"raise": True},), {}), (({"w": 1},), {})], time_limit=30)
    assert "Mute: <a Mute whose message cannot be printed>" in run.calls[0].error
    assert run.calls[1].error is None and run.calls[1].output == 1
    assert run.calls[1].mutated == ["argument 1 (replaced by something that is not plain data)"]
