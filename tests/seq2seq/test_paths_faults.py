"""``seqlab paths`` loses nothing and stops as a whole (issue 21): each fault is injected.

- a non-empty ``--out`` that is not a paths experiment's, or one with other settings, is refused
  (its files untouched) unless ``--overwrite``;
- an experiment stopped midway (a step callback, a signal between models, SIGTERM or Ctrl-C to the
  command, a kill between training and evaluation) continues when the same command runs again:
  finished models are not retrained, the interrupted one resumes exactly (its weights and numbers
  equal those of an uninterrupted experiment);
- a second invocation with other ``--tasks`` adds them: results.json and report.md keep the first.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from seqlab.cli import main
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.seq2seq.paths import PathsSettings, run_paths
from seqlab.seq2seq.paths import experiment as experiment_module
from tests.conftest import held, wait_for_hold

pytestmark = pytest.mark.usefixtures("one_thread")
REPO = Path(__file__).resolve().parents[2]
# no time cap (budget_minutes=None): the schedule follows steps only, so a resumed run is bit-exact
TINY = PathsSettings(train_lengths=(1, 4), test_max_len=5, train_size=200, test_per_length=6, dates_test_size=20,
                     reference_d_model=16, layers=1, num_heads=2, symbol_steps=12, dates_steps=12, batch_size=16,
                     lr=1e-2, warmup_steps=2, budget_minutes=None)
ARCHS = ["rnn", "rnn-attention", "transformer"]


def _quiet(message: str) -> None:
    pass


def _run(out: Path, **kwargs) -> dict:
    return run_paths(out, settings=kwargs.pop("settings", TINY), tasks=kwargs.pop("tasks", ("reverse",)),
                     progress=False, say=kwargs.pop("say", _quiet), **kwargs)


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def _numbers(record: dict) -> dict:
    """A model's record without its wall time."""
    return {k: v for k, v in record.items() if k != "train_seconds"}


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return read_checkpoint(run / "checkpoints" / "latest.pt")["model"]


def _signature(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted experiment on reverse: the oracle of every resumed one."""
    out = tmp_path_factory.mktemp("reference") / "paths"
    results = _run(out)
    assert results["status"] == "completed" and list(results["tasks"]["reverse"]["archs"]) == ARCHS
    return out


def test_a_foreign_non_empty_out_is_refused_and_left_alone(tmp_path, capsys):
    out = tmp_path / "mine"
    (out / "runs" / "reverse_rnn" / "checkpoints").mkdir(parents=True)
    (out / "notes.txt").write_text("my notes")
    (out / "runs" / "reverse_rnn" / "checkpoints" / "latest.pt").write_bytes(b"someone else's run")
    with pytest.raises(FileExistsError, match=r"already holds files \(notes.txt, runs\) and no results.json, so it is "
                                              r"not a `seqlab paths` experiment's folder.*--overwrite"):
        _run(out)
    assert main(["paths", "--out", str(out), "--fast", "--no-progress"]) == 1
    assert "not a `seqlab paths` experiment's folder" in capsys.readouterr().err
    assert (out / "runs" / "reverse_rnn" / "checkpoints" / "latest.pt").read_bytes() == b"someone else's run"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "runs"]
    # --overwrite writes the experiment there: its own runs are replaced, other files stay
    results = _run(out, overwrite=True)
    assert results["status"] == "completed" and (out / "notes.txt").read_text() == "my notes"
    assert read_checkpoint(out / "runs" / "reverse_rnn" / "checkpoints" / "latest.pt")["iteration"] == TINY.symbol_steps


def test_other_settings_are_refused_until_overwrite(reference, tmp_path, capsys):
    out = tmp_path / "paths"
    shutil.copytree(reference, out)
    before = (out / "results.json").read_text()
    with pytest.raises(FileExistsError, match=r"holds a `seqlab paths` experiment with other settings \(--seed 0 there, "
                                              r"1 now\); rerun it with its own settings"):
        _run(out, seed=1)
    other = PathsSettings(**{**TINY.__dict__, "symbol_steps": 20})
    with pytest.raises(FileExistsError, match=r"symbol_steps 12 there, 20 now"):
        _run(out, settings=other)
    assert main(["paths", "--out", str(out), "--fast", "--tasks", "reverse", "--no-progress"]) == 1
    assert "not --fast there, --fast now" in capsys.readouterr().err
    assert (out / "results.json").read_text() == before  # nothing was touched
    # a damaged results.json names the file and the line
    (out / "results.json").write_text('{"settings": {}, \n"tasks": [')
    with pytest.raises(ValueError, match=r"results.json, line 2: invalid JSON .*--overwrite to start the experiment over"):
        _run(out)
    (out / "results.json").write_text(before)
    results = _run(out, seed=1, overwrite=True)  # starts over: every model is trained anew
    assert results["seed"] == 1 and list(results["tasks"]) == ["reverse"]
    mine, theirs = _weights(out / "runs" / "reverse_rnn"), _weights(reference / "runs" / "reverse_rnn")
    assert any(not torch.equal(mine[k], theirs[k]) for k in mine)  # another seed: other weights


def test_stopped_midway_and_rerun_gives_the_uninterrupted_experiment(reference, tmp_path):
    out = tmp_path / "paths"

    def stop_attention_at_6(engine, step):
        if engine.config.out_dir.endswith("reverse_rnn-attention") and step == 6:
            engine.request_stop("test stop")

    first = _run(out, step_callbacks=[stop_attention_at_6])
    assert first["status"] == "interrupted" and first["stop_signal"] is None
    saved = _results(out)
    assert saved["status"] == "interrupted" and list(saved["tasks"]["reverse"]["archs"]) == ["rnn"]
    assert read_checkpoint(out / "runs" / "reverse_rnn-attention" / "checkpoints" / "latest.pt")["iteration"] == 6
    assert not (out / "runs" / "reverse_transformer").exists()  # nothing started after the stop
    assert "Unfinished" in (out / "report.md").read_text()
    rnn_checkpoint = _signature(out / "runs" / "reverse_rnn" / "checkpoints" / "latest.pt")
    lines: list[str] = []
    second = _run(out, say=lines.append)
    assert second["status"] == "completed"
    assert any("1 of 3 models done earlier" in line for line in lines)
    assert any("reverse / rnn-attention: resuming at step 6 of 12" in line for line in lines)
    assert not any("reverse / rnn: d_model" in line for line in lines)  # the finished model was not retrained
    assert _signature(out / "runs" / "reverse_rnn" / "checkpoints" / "latest.pt") == rnn_checkpoint
    expected = _results(reference)["tasks"]["reverse"]["archs"]
    for arch in ARCHS:
        assert _numbers(second["tasks"]["reverse"]["archs"][arch]) == _numbers(expected[arch]), arch
        mine, theirs = _weights(out / "runs" / f"reverse_{arch}"), _weights(reference / "runs" / f"reverse_{arch}")
        assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine), arch
    assert "Unfinished" not in (out / "report.md").read_text()


def test_a_signal_between_models_stops_the_experiment(tmp_path, monkeypatch):
    out = tmp_path / "paths"
    real = experiment_module.evaluate_model

    def signal_while_evaluating_rnn(cfg, settings, task, arch, *args):
        if arch == "rnn":
            os.kill(os.getpid(), signal.SIGTERM)  # noted by the experiment's handler; the evaluation goes on
        return real(cfg, settings, task, arch, *args)

    monkeypatch.setattr(experiment_module, "evaluate_model", signal_while_evaluating_rnn)
    before = signal.getsignal(signal.SIGTERM)
    lines: list[str] = []
    results = _run(out, say=lines.append)
    assert signal.getsignal(signal.SIGTERM) == before
    assert (results["status"], results["stop_signal"]) == ("interrupted", signal.SIGTERM)
    assert list(results["tasks"]["reverse"]["archs"]) == ["rnn"]  # its evaluation finished and was kept
    assert not (out / "runs" / "reverse_rnn-attention").exists()
    assert any("SIGTERM: stopping the paths experiment" in line for line in lines)


def test_killed_between_training_and_evaluation_evaluates_without_training(reference, tmp_path, monkeypatch):
    out = tmp_path / "paths"
    real = experiment_module.evaluate_model

    def second_ctrl_c_while_evaluating_transformer(cfg, settings, task, arch, *args):
        if arch == "transformer":
            raise KeyboardInterrupt  # a second Ctrl-C quits at once
        return real(cfg, settings, task, arch, *args)

    monkeypatch.setattr(experiment_module, "evaluate_model", second_ctrl_c_while_evaluating_transformer)
    with pytest.raises(KeyboardInterrupt):
        _run(out)
    saved = _results(out)
    assert saved["status"] == "interrupted" and list(saved["tasks"]["reverse"]["archs"]) == ARCHS[:2]
    assert saved["trained"]["reverse/transformer"]["steps"] == TINY.symbol_steps  # trained, not evaluated
    monkeypatch.setattr(experiment_module, "evaluate_model", real)
    checkpoint = out / "runs" / "reverse_transformer" / "checkpoints" / "latest.pt"
    trained = _signature(checkpoint)
    lines: list[str] = []
    results = _run(out, say=lines.append)
    assert results["status"] == "completed" and results["trained"] == {}
    assert _signature(checkpoint) == trained and not any("reverse / transformer: d_model" in line for line in lines)
    expected = _results(reference)["tasks"]["reverse"]["archs"]
    assert _numbers(results["tasks"]["reverse"]["archs"]["transformer"]) == _numbers(expected["transformer"])
    # a kill after the last checkpoint but before results.json heard of it: the checkpoint says it is done
    del results["tasks"]["reverse"]["archs"]["transformer"]
    (out / "results.json").write_text(json.dumps(results))
    again = _run(out, say=lines.append)
    assert _signature(checkpoint) == trained
    record = again["tasks"]["reverse"]["archs"]["transformer"]
    assert {k: record[k] for k in ("steps", "status", "exact_match", "by_length")} == \
        {k: expected["transformer"][k] for k in ("steps", "status", "exact_match", "by_length")}


def test_other_tasks_are_added_to_the_same_experiment(reference, tmp_path):
    out = tmp_path / "paths"
    shutil.copytree(reference, out)
    lines: list[str] = []
    results = _run(out, tasks=("copy",), say=lines.append)
    assert list(results["tasks"]) == ["copy", "reverse"]  # in the experiment's task order
    assert results["tasks"]["reverse"] == _results(reference)["tasks"]["reverse"]  # kept as it was
    assert list(results["tasks"]["copy"]["archs"]) == ARCHS
    assert any("the results of reverse are kept" in line for line in lines)
    report = (out / "report.md").read_text()
    assert "## copy" in report and "## reverse" in report
    assert _results(out)["tasks"].keys() == {"copy", "reverse"}
    assert (out / "dependency_reverse.png").is_file() and (out / "dependency_copy.png").is_file()
    # the same command again trains nothing
    lines.clear()
    _run(out, tasks=("copy", "reverse"), say=lines.append)
    assert any("6 of 6 models done earlier" in line for line in lines)
    assert not any("d_model" in line for line in lines)


def _paths_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "seqlab", "paths", "--out", str(out), "--fast", "--tasks", "reverse", "--no-progress"]


def test_sigterm_stops_the_paths_command_with_143_and_a_rerun_finishes_it(tmp_path):
    signum, status = signal.SIGTERM, 143
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = tmp_path / "paths"
    marker = tmp_path / "held"
    # held in the second model's first step (the first model is done) until the signal has reached it
    process = subprocess.Popen(held(marker, "reverse_rnn-attention", 1) + ["seqlab", *_paths_command(out)[3:]],
                               env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_hold(process, marker)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == status, stderr[-3000:]
    said = stdout + stderr  # one instruction, not the engine's "--resume" besides the command's own
    assert said.count("rerun the same command to continue") == 1 and "--resume" not in said
    saved = _results(out)
    assert saved["status"] == "interrupted" and saved["stop_signal"] == signum
    assert list(saved["tasks"]["reverse"]["archs"]) == ["rnn"]  # the second model stopped in its step 1
    assert read_checkpoint(out / "runs" / "reverse_rnn-attention" / "checkpoints" / "latest.pt")["iteration"] == 1
    assert not (out / "runs" / "reverse_transformer").exists()  # no model starts after the signal
    rnn_checkpoint = _signature(out / "runs" / "reverse_rnn" / "checkpoints" / "latest.pt")
    rerun = subprocess.run(_paths_command(out), env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert _results(out)["status"] == "completed" and list(_results(out)["tasks"]["reverse"]["archs"]) == ARCHS
    assert _signature(out / "runs" / "reverse_rnn" / "checkpoints" / "latest.pt") == rnn_checkpoint


def test_ctrl_c_during_training_makes_the_paths_command_exit_130(tmp_path, monkeypatch, capsys):
    out = tmp_path / "paths"
    real = experiment_module.train

    def ctrl_c_at_step_3(cfg, *, step_callbacks, say):
        def press(engine, step):
            if step == 3 and cfg.arch == "rnn-attention":
                os.kill(os.getpid(), signal.SIGINT)  # the engine's own handler: it saves after this step
        return real(cfg, step_callbacks=[press, *step_callbacks], say=say)

    monkeypatch.setattr(experiment_module, "train", ctrl_c_at_step_3)
    assert main(["paths", "--out", str(out), "--fast", "--tasks", "reverse", "--no-progress"]) == 130
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert said.count("rerun the same command to continue") == 1 and "--resume" not in said
    assert "Ctrl-C: saving a checkpoint" in captured.out and "interrupted at step 3 of 40 (checkpoint saved)" in said
    assert "at step 4" not in said and "at step 2" not in said  # one step number
    saved = _results(out)
    assert (saved["status"], saved["stop_signal"], list(saved["tasks"]["reverse"]["archs"])) == \
        ("interrupted", signal.SIGINT, ["rnn"])
    assert read_checkpoint(out / "runs" / "reverse_rnn-attention" / "checkpoints" / "latest.pt")["iteration"] == 3
    assert not (out / "runs" / "reverse_transformer").exists()


def test_a_second_experiment_into_the_same_out_is_refused_while_the_first_runs(reference, tmp_path, capsys):
    """Two `seqlab paths` with other --tasks into one OUT both exited 0, and the later one's
    results.json replaced the earlier's tasks (each merged into what it had read at its start)."""
    from seqlab.runs.lock import RunLockedError

    out, refused = tmp_path / "paths", []

    def second_experiment_at_step_3(engine, step):
        if step == 3 and not refused:
            with pytest.raises(RunLockedError, match=rf"{out} is in use: process {os.getpid()} \(`seqlab paths`"):
                _run(out, tasks=("copy",))
            refused.append(True)

    results = _run(out, step_callbacks=[second_experiment_at_step_3])
    assert refused
    assert results["status"] == "completed" and list(_results(out)["tasks"]) == ["reverse"]
    assert not (out / "runs" / "copy_rnn").exists() and not (out / ".lock").exists()
    expected = _results(reference)["tasks"]["reverse"]["archs"]
    assert {a: _numbers(r) for a, r in _results(out)["tasks"]["reverse"]["archs"].items()} == \
        {a: _numbers(r) for a, r in expected.items()}  # the first experiment went on undisturbed


def test_the_paths_command_refuses_an_out_in_use_with_exit_1(tmp_path, capsys):
    from seqlab.runs.lock import RunLock

    out = tmp_path / "paths"
    with RunLock(out, "seqlab paths"):
        assert main(["paths", "--out", str(out), "--fast", "--tasks", "copy", "--no-progress"]) == 1
        assert f"{out} is in use: process {os.getpid()} (`seqlab paths`" in capsys.readouterr().err
        assert sorted(p.name for p in out.iterdir()) == [".lock"]  # nothing trained, nothing written


@pytest.mark.parametrize("flags, message", [
    (["--threads", "0"], "argument --threads: '0' is not a positive integer"),  # was: 0 silently ran 1 thread
    (["--threads", "-1"], "argument --threads: '-1' is not a positive integer"),  # was: torch's message, after
    #                                                                           results.json had been written
    (["--tasks", ""], "--tasks: unknown ''; choose from copy, reverse, dates"),  # was: every task
    (["--tasks", "copy,,reverse"], "--tasks: unknown ''"),
])
def test_bad_paths_flags_are_refused_before_anything_is_written(tmp_path, capsys, flags, message):
    out = tmp_path / "paths"
    try:
        code = main(["paths", "--out", str(out), "--fast", "--no-progress", *flags])
    except SystemExit as exited:  # argparse
        code = exited.code
    assert code == 2 and message in capsys.readouterr().err
    assert not out.exists()



_TINY_SCRIPT = """
import sys
from seqlab.seq2seq.paths import run_paths
from tests.seq2seq.test_paths_faults import TINY
sys.exit(0 if run_paths(sys.argv[1], settings=TINY, tasks=("reverse",), progress=False)["status"] == "completed"
         else 3)
"""


def _log_steps_once(run: Path, steps: int) -> None:
    """RUN/log.jsonl ends complete, each step's record once, the final evaluation last."""
    text = (run / "log.jsonl").read_text()
    assert text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]
    stepped = [r["step"] for r in records if "step" in r and "train_loss" in r]
    assert stepped == sorted(set(stepped)) and stepped[-1] == steps
    assert records[-1]["step"] == steps and "val_loss" in records[-1]


@pytest.mark.parametrize("signum", [pytest.param(signal.SIGKILL, marks=pytest.mark.slow), signal.SIGTERM])
def test_killed_mid_model_and_rerun_equals_the_uninterrupted_experiment(reference, tmp_path, signum):
    """SIGKILL (no checkpoint of the model in training: it starts over) or SIGTERM (it saves one and
    resumes) while the second model trains; the same command again gives the reference's numbers,
    each model once in results.json, each log step once."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = tmp_path / "paths"
    command = [sys.executable, "-c", _TINY_SCRIPT, str(out)]
    marker = tmp_path / "held"
    # held in step 3 of the second model (12 steps) until the signal has reached it
    process = subprocess.Popen(held(marker, "reverse_rnn-attention", 3) + command[1:], env=env, cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_hold(process, marker)
    process.send_signal(signum)
    process.communicate(timeout=120)
    assert process.returncode in ((-signal.SIGKILL,) if signum == signal.SIGKILL else (3,))  # 3: the script saw "interrupted"
    rerun = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    results, expected = _results(out), _results(reference)
    assert results["status"] == "completed" and list(results["tasks"]["reverse"]["archs"]) == ARCHS
    assert results["trained"] == {} and results.get("caps") == {}
    assert {a: _numbers(r) for a, r in results["tasks"]["reverse"]["archs"].items()} == \
        {a: _numbers(r) for a, r in expected["tasks"]["reverse"]["archs"].items()}
    for arch in ARCHS:
        _log_steps_once(out / "runs" / f"reverse_{arch}", TINY.symbol_steps)
        torch.testing.assert_close(_weights(out / "runs" / f"reverse_{arch}"),
                                   _weights(reference / "runs" / f"reverse_{arch}"), rtol=0, atol=0)


def test_a_task_named_twice_is_trained_once(reference, tmp_path, capsys, monkeypatch):
    out = tmp_path / "paths"
    shutil.copytree(reference, out)
    lines: list[str] = []
    results = _run(out, tasks=("reverse", "reverse"), say=lines.append)
    assert any("3 of 3 models done earlier" in line for line in lines)  # not "3 of 6"
    assert list(results["tasks"]) == ["reverse"] and list(results["tasks"]["reverse"]["archs"]) == ARCHS
    # the command says so, and hands the experiment each task once
    import seqlab.seq2seq.paths as paths_package

    asked = []
    monkeypatch.setattr(paths_package, "run_paths", lambda out, **kw: asked.append(kw["tasks"]) or
                        {"total_seconds": 0.0, "status": "completed"})
    assert main(["paths", "--out", str(tmp_path / "other"), "--fast", "--tasks", "copy,copy,reverse"]) == 0
    assert asked == [("copy", "reverse")]
    assert "--tasks names copy more than once; each task is trained once" in capsys.readouterr().err
