"""progress.json loses nothing: each read-modify-write holds the workspace's lock (twelve commands at once
lose no entry, and a command waits for the holder); a malformed entry is refused with the advice to
move the file away; `learn start` on a folder says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.learn.questions import QUESTION_BY_ID
from seqlab.learn.workspace import ProgressError, progress_lock, read_progress, set_state
from tests.learn.bundle import student_source
from tests.learn.students import write_student

ROOT = Path(__file__).resolve().parents[2]


def _seqlab(*args) -> list[str]:
    return [sys.executable, "-m", "seqlab", "learn", *map(str, args)]


def test_twelve_commands_at_once_lose_no_entry(tmp_path):
    ws = tmp_path / "ws"
    for name in ("causal_mask", "clip_global_norm"):
        write_student(ws, name, student_source(name))
    question = QUESTION_BY_ID["trace_recurrence"]
    commands = {name: _seqlab("check", name, "--workspace", ws) for name in ("causal_mask", "clip_global_norm")}
    commands |= {name: _seqlab("start", name, "--workspace", ws) for name in ("rnn_step", "rnn_forward", "attention",
                                                                            "gru_bptt")}
    commands |= {name: _seqlab("hint", name, "--workspace", ws) for name in ("rnn_bptt", "lstm_bptt", "softmax",
                                                                           "train_bpe", "choose_merge")}
    commands[question.id] = _seqlab("answer", question.id, f"{question.answer()[0]:.4f}", "--workspace", ws)
    assert len(commands) == 12
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    running = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for c in commands.values()]
    results = [p.communicate(timeout=600) for p in running]
    assert [p.returncode for p in running] == [0] * 12, results
    steps = read_progress(ws)["steps"]
    assert set(steps) == set(commands)
    assert steps["causal_mask"]["state"] == steps["clip_global_norm"]["state"] == steps[question.id]["state"] == "passed"
    assert all(steps[name]["hints"] == 1 for name in ("rnn_bptt", "lstm_bptt", "softmax", "train_bpe", "choose_merge"))


def _waiting_on_a_lock(pid: int) -> bool:
    """Whether process ``pid`` waits for a file lock (/proc/locks lists a waiter with "->")."""
    with open("/proc/locks") as f:
        return any("->" in line and line.split()[5 if line.split()[1] == "->" else 4] == str(pid) for line in f)


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="Linux's /proc/locks shows who waits for a lock")
def test_a_command_waits_for_the_lock_and_then_reads_what_the_holder_wrote(tmp_path):
    ws = tmp_path / "ws"
    set_state(ws, "causal_mask", "started")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with progress_lock(ws):
        hint = subprocess.Popen(_seqlab("hint", "rnn_step", "--workspace", ws), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not _waiting_on_a_lock(hint.pid) and hint.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _waiting_on_a_lock(hint.pid), hint.communicate()
        progress = read_progress(ws)                   # another command's write, while the hint waits
        progress["steps"]["attention"] = {"state": "passed"}
        (ws / "progress.json").write_text(json.dumps(progress))
    assert hint.wait(timeout=120) == 0
    assert set(read_progress(ws)["steps"]) == {"causal_mask", "attention", "rnn_step"}


@pytest.mark.parametrize("entry", ['"passed"', "3", "[1, 2]", "null"])
def test_a_malformed_step_entry_is_a_clear_error(tmp_path, capsys, entry):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "progress.json").write_text('{"steps": {"rnn_step": ' + entry + '}}')
    with pytest.raises(ProgressError, match="the entry of step 'rnn_step' is a .*not an object; move the file away"):
        read_progress(ws)
    assert main(["learn", "--workspace", str(ws)]) == 1
    assert main(["learn", "hint", "rnn_step", "--workspace", str(ws)]) == 0     # shown; progress not saved, said
    err = capsys.readouterr().err
    assert "move the file away to start the progress afresh" in err and "Traceback" not in err


def test_start_on_a_folder_or_a_dangling_link_says_so(tmp_path, capsys):
    ws = tmp_path / "ws"
    (ws / "rnn_step.py").mkdir(parents=True)
    assert main(["learn", "start", "rnn_step", "--workspace", str(ws)]) == 1
    err = capsys.readouterr().err
    assert f"{ws / 'rnn_step.py'} is a folder, not a Python file; move it away, then: seqlab learn start rnn_step" in err
    (ws / "attention.py").symlink_to(tmp_path / "nowhere.py")
    assert main(["learn", "start", "attention", "--workspace", str(ws)]) == 1
    assert "is a link to nothing, not a Python file" in capsys.readouterr().err
    assert main(["learn", "start", "causal_mask", "--workspace", str(ws)]) == 0
