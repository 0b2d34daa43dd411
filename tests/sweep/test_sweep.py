"""`seqlab sweep` end to end on tiny data: a 3-value grid of 30-step runs, a rerun that trains nothing,
a sweep stopped mid-run (by a step callback, by a signal between runs, by SIGTERM to the command)
and rerun to the uninterrupted numbers, diverging learning rates, and the checks on --out."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.sweep import runner as runner_module
from seqlab.sweep.runner import plan_sweep, run_sweep
from seqlab.lm import train
from tests.sweep.conftest import TINY_FLAGS, tiny_base
from tests.conftest import held, wait_for_hold

GRID = ["lr=3e-3,1e-2,3e-2"]
NAMES = ["lr=3e-3", "lr=0.01", "lr=0.03"]
# what an interrupted and resumed sweep must reproduce exactly (wall time and speed may differ)
NUMBERS = ("name", "status", "steps", "total_steps", "tokens", "final_val_loss", "best_val_loss", "best_val_step",
           "final_train_loss", "settings")
PNG = b"\x89PNG\r\n\x1a\n"


def _sweep_json(out: Path) -> dict:
    return json.loads((out / "sweep.json").read_text())


def _numbers(out: Path) -> list[dict]:
    return [{k: run[k] for k in NUMBERS} for run in _sweep_json(out)["runs"]]


def _log(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]


def _quiet(line: str) -> None:
    pass


@pytest.fixture(scope="module")
def finished(byte_data, tmp_path_factory):
    """An uninterrupted 3-run sweep: (out, outcome)."""
    out = tmp_path_factory.mktemp("finished") / "lr"
    outcome = run_sweep(plan_sweep(tiny_base(byte_data), out, grid=GRID), say=_quiet)
    return out, outcome


def test_a_three_value_grid_lists_three_finished_runs_with_their_logs_numbers(finished, byte_data, tmp_path):
    out, outcome = finished
    assert outcome.status == "completed" and outcome.trained == NAMES and outcome.skipped == []
    document = _sweep_json(out)
    assert document["status"] == "completed" and document["axes"] == ["lr"] and document["grid"] == GRID
    runs = document["runs"]
    assert [r["name"] for r in runs] == NAMES and [r["status"] for r in runs] == ["finished"] * 3
    for run, lr in zip(runs, (3e-3, 1e-2, 3e-2)):
        run_dir = out / run["name"]
        assert run["settings"] == {"lr": lr} and run["point"] == {"lr": lr}
        assert json.loads((run_dir / "config.json").read_text())["settings"]["lr"] == lr  # an ordinary run directory
        assert (run_dir / "checkpoints" / "latest.pt").is_file()
        log = _log(run_dir)
        vals = [r["val_loss"] for r in log if "val_loss" in r]
        assert len(vals) == 3 and run["final_val_loss"] == vals[-1] and run["best_val_loss"] == min(vals)
        assert run["final_train_loss"] == [r["train_loss"] for r in log if "train_loss" in r][-1]
        assert run["steps"] == run["total_steps"] == 30 and run["tokens"] == 30 * 8 * 32
        assert run["wall_time_s"] == log[-1]["wallclock"] and run["tokens_per_second"] > 0
        assert run["mfu"] is None  # the CPU has no peak FLOP/s in the table
    best = min(runs, key=lambda r: r["final_val_loss"])
    assert document["best"] == best["name"] == outcome.best.name and document["diverged"] == []
    # the same engine as `seqlab train`: a run trained directly logs the same numbers
    direct = tmp_path / "direct"
    train(tiny_base(byte_data, out_dir=str(direct), lr=1e-2))
    assert [r.get("val_loss") for r in _log(direct)] == [r.get("val_loss") for r in _log(out / "lr=0.01")]
    # report.md: the table sorted by validation loss, the best setting, the figures
    report = (out / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith("| `lr=")]
    assert [row.split("`")[1] for row in rows] == [r["name"] for r in sorted(runs, key=lambda r: r["final_val_loss"])]
    assert f"**Best: `lr={best['name'][3:]}`**" in report and "![" in report
    for figure in ("curves.png", "final.png"):
        assert (out / figure).read_bytes()[:8] == PNG


def test_a_second_invocation_trains_nothing(finished, byte_data):
    out, _ = finished
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and "checkpoints" in p.parts or p.name == "log.jsonl"}
    numbers = _numbers(out)
    lines: list[str] = []
    outcome = run_sweep(plan_sweep(tiny_base(byte_data), out, grid=GRID), say=lines.append)
    assert outcome.trained == [] and outcome.skipped == NAMES and outcome.status == "completed"
    assert {p: p.stat().st_mtime_ns for p in before} == before
    assert _numbers(out) == numbers
    assert all("already; skipped" in line for line in lines) and len(lines) == 3


def test_a_sweep_stopped_mid_run_and_rerun_gives_the_uninterrupted_numbers(finished, byte_data, tmp_path):
    out = tmp_path / "lr"
    plan = plan_sweep(tiny_base(byte_data), out, grid=GRID)

    def stop_second_run_at_15(trainer, step):
        if Path(trainer.config.out_dir).name == NAMES[1] and step == 15:
            trainer.request_stop("test stop")

    first = run_sweep(plan, step_callbacks=[stop_second_run_at_15], say=_quiet)
    assert first.status == "interrupted" and first.trained == NAMES[:2]
    document = _sweep_json(out)
    assert document["status"] == "interrupted"
    assert [(r["status"], r["steps"]) for r in document["runs"]] == [("finished", 30), ("unfinished", 15), ("pending", None)]
    assert not (out / NAMES[2]).exists()
    lines: list[str] = []
    second = run_sweep(plan_sweep(tiny_base(byte_data), out, grid=GRID), say=lines.append)
    assert second.status == "completed" and second.skipped == NAMES[:1] and second.trained == NAMES[1:]
    assert any("lr=0.01: resuming (logged up to step 15 of 30)" in line for line in lines)
    assert _numbers(out) == _numbers(finished[0])


def test_a_signal_between_runs_stops_the_whole_sweep(byte_data, tmp_path, monkeypatch):
    out = tmp_path / "lr"
    real = runner_module.write_summary
    sent = []

    def signal_after_the_first_run(plan, records, status, *, figures):
        real(plan, records, status, figures=figures)
        if records[0].status == "finished" and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)  # caught by the sweep's own handler, not a trainer's

    monkeypatch.setattr(runner_module, "write_summary", signal_after_the_first_run)
    before = signal.getsignal(signal.SIGTERM)
    outcome = run_sweep(plan_sweep(tiny_base(byte_data), out, grid=GRID[:1]), say=_quiet)
    assert signal.getsignal(signal.SIGTERM) == before
    assert (outcome.status, outcome.stop_signal, outcome.trained) == ("interrupted", signal.SIGTERM, NAMES[:1])
    assert [r["status"] for r in _sweep_json(out)["runs"]] == ["finished", "pending", "pending"]


def _sweep_command(out: Path, data: Path) -> list[str]:
    return [sys.executable, "-m", "seqlab", "sweep", "--data-dir", str(data), "--grid", "lr=3e-3,1e-2",
            *TINY_FLAGS, "--lr", "1e-2", "--out", str(out)]


def test_sigterm_stops_the_sweep_command_with_143_and_a_rerun_finishes_it_exactly(finished, byte_data, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = tmp_path / "killed"
    marker = tmp_path / "held"
    # held at step 5 of 30 (its first log record) until the signal has reached it
    process = subprocess.Popen(held(marker, "lr=3e-3", 5) + ["seqlab", *_sweep_command(out, byte_data)[3:]],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_hold(process, marker)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr[-2000:]
    assert "interrupted" in stdout and "rerun the same command to continue" in stderr
    runs = _sweep_json(out)["runs"]
    assert [r["status"] for r in runs] == ["unfinished", "pending"] and runs[0]["steps"] == 5
    assert (out / "lr=3e-3" / "checkpoints" / "latest.pt").is_file()
    rerun = subprocess.run(_sweep_command(out, byte_data), env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    # the numbers of the same runs in the uninterrupted sweep (the last log interval, steps 26-30, is
    # the final training loss, and the stop came before it)
    assert _numbers(out) == _numbers(finished[0])[:2]


def test_diverging_learning_rates_are_marked_and_the_sweep_goes_on(byte_data, tmp_path):
    # lr=1e10: NaN at once (NonFiniteLossError); lr=10: the loss climbs above its start after warm-up
    out = tmp_path / "lr"
    outcome = run_sweep(plan_sweep(tiny_base(byte_data), out, grid=["lr=1e10,10,1e-2"]), say=_quiet)
    assert outcome.status == "completed" and outcome.trained == ["lr=1e10", "lr=10", "lr=0.01"]
    document = _sweep_json(out)
    runs = {r["name"]: r for r in document["runs"]}
    assert [r["status"] for r in runs.values()] == ["diverged", "diverged", "finished"]
    assert "nan" in runs["lr=1e10"]["reason"] and "no checkpoint was saved" in runs["lr=1e10"]["reason"]
    assert "above its starting value" in runs["lr=10"]["reason"] and runs["lr=10"]["steps"] < 30
    rise = [r["train_loss"] for r in _log(out / "lr=10") if "train_loss" in r]
    assert rise[-1] > rise[0]  # the rule, checked on the log itself
    assert runs["lr=0.01"]["steps"] == 30 and document["best"] == "lr=0.01"
    assert document["diverged"] == ["lr=1e10", "lr=10"]
    report = (out / "report.md").read_text()
    assert "## Diverged" in report and "- `lr=10`: the training loss" in report
    rows = [line.split("`")[1] for line in report.splitlines() if line.startswith("| `lr=")]
    assert rows[0] == "lr=0.01" and set(rows[1:]) == {"lr=1e10", "lr=10"}  # diverged runs last
    assert (out / "final.png").read_bytes()[:8] == PNG
    again = run_sweep(plan_sweep(tiny_base(byte_data), out, grid=["lr=1e10,10,1e-2"]), say=_quiet)
    assert again.trained == []  # a diverged run is done, not retried


def test_the_out_directory_must_be_this_sweeps(finished, byte_data, tmp_path):
    out, _ = finished
    with pytest.raises(FileExistsError, match=r"holds another sweep \(max_steps 30 there, 40 now\)"):
        run_sweep(plan_sweep(tiny_base(byte_data, max_steps=40), out, grid=GRID), say=_quiet)
    with pytest.raises(FileExistsError, match=r"runs lr=3e-3, lr=0.01, lr=0.03 there, lr=3e-3 now"):
        run_sweep(plan_sweep(tiny_base(byte_data), out, grid=["lr=3e-3"]), say=_quiet)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="holds files \\(notes.txt\\) and no sweep.json"):
        run_sweep(plan_sweep(tiny_base(byte_data), foreign, grid=GRID), say=_quiet)
    assert (foreign / "notes.txt").read_text() == "keep me"
    # --overwrite: this sweep's runs start over (a single run here)
    small = tmp_path / "small"
    run_sweep(plan_sweep(tiny_base(byte_data, max_steps=4), small, grid=["lr=1e-2"]), say=_quiet)
    redone = run_sweep(plan_sweep(tiny_base(byte_data, max_steps=6), small, grid=["lr=1e-2"]), overwrite=True,
                       say=_quiet)
    assert redone.trained == ["lr=0.01"] and _sweep_json(small)["runs"][0]["steps"] == 6


def test_the_command_line_names_the_bad_key_and_value(byte_data, tmp_path, capsys):
    common = ["sweep", "--data-dir", str(byte_data), "--out", str(tmp_path / "s")]
    assert main([*common, "--grid", "lr=1e-3,fast"]) == 2
    assert "error: --grid lr=1e-3,fast: lr takes a float, and 'fast' is not one" in capsys.readouterr().err
    assert main([*common, "--grid", "batchsize=8"]) == 2
    assert "unknown key 'batchsize' (did you mean batch_size?)" in capsys.readouterr().err
    assert main([*common, "--grid", "lr=3e-3", "--resume"]) == 2  # --out(-dir) names the sweep, not a run
    assert "takes no --resume" in capsys.readouterr().err
    assert main(["sweep", "--out", str(tmp_path / "s"), "--grid", "lr=1e-3"]) == 2
    assert "no data: give --data-dir" in capsys.readouterr().err
    assert main([*common]) == 2
    assert "nothing to sweep" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_from_run_takes_a_runs_settings_and_flags_override_them(byte_data, tmp_path, capsys):
    source = tmp_path / "source"
    train(tiny_base(byte_data, out_dir=str(source), max_steps=2, d_model=16, lr=5e-3))
    out = tmp_path / "s"
    assert main(["sweep", "--from", str(source), "--grid", "weight_decay=0,0.1", "--max-steps", "3",
                 "--out", str(out)]) == 0
    for run in ("weight_decay=0", "weight_decay=0.1"):
        config = json.loads((out / run / "config.json").read_text())["settings"]
        assert (config["d_model"], config["lr"], config["max_steps"]) == (16, 5e-3, 3)
        assert config["out_dir"] == str(out / run) and config["data_dir"] == str(byte_data)
    assert "best: weight_decay=" in capsys.readouterr().out


def test_the_readme_laptop_command_plans_the_lr_recipe_on_the_demos_data(tmp_path, monkeypatch):
    import importlib.util
    import inspect

    from seqlab.cli import build_parser
    from seqlab.demo.pipeline import run_demo
    from seqlab.sweep.cli import _base_config

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "sweep_lr.py"
    spec = importlib.util.spec_from_file_location("sweep_lr_benchmark", path)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    command = benchmark.readme_command()  # what the benchmark times is what the README says
    assert command[:4] == ["seqlab", "sweep", "--recipe", "lr"] and "--data-dir" in command
    data = command[command.index("--data-dir") + 1]
    assert data == str(Path(inspect.signature(run_demo).parameters["out"].default) / "data")  # `seqlab demo`'s
    (tmp_path / data).mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(command[1:])
    out = args.out_dir  # --out, the engine's out_dir flag, names the sweep's directory
    plan = plan_sweep(_base_config(args), out, grid=args.grid, recipe=args.recipe)
    assert len(plan.variants) == 9 and plan.axes == ["lr"] and plan.base.d_model == 64
    assert plan.variants[0].settings["lr"] == pytest.approx(plan.base.lr / 10)


def test_a_run_out_of_gpu_memory_is_recorded_as_failed_and_the_sweep_goes_on(byte_data, tmp_path, monkeypatch):
    import torch

    import seqlab.lm.task

    real_train = seqlab.lm.task.train

    def train_or_run_out_of_memory(config, **kwargs):
        if Path(config.out_dir).name == "batch_size=16":  # what a GPU at its memory limit raises
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore details")
        return real_train(config, **kwargs)

    monkeypatch.setattr(seqlab.lm.task, "train", train_or_run_out_of_memory)
    out = tmp_path / "bs"
    outcome = run_sweep(plan_sweep(tiny_base(byte_data, max_steps=4), out, grid=["batch_size=4,16,2"]), say=_quiet)
    assert outcome.status == "completed"
    runs = {r["name"]: r for r in _sweep_json(out)["runs"]}
    assert [r["status"] for r in runs.values()] == ["finished", "failed", "finished"]
    assert runs["batch_size=16"]["reason"] == "out of memory: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert "## Failed\n\n- `batch_size=16`: out of memory" in (out / "report.md").read_text()
    assert run_sweep(plan_sweep(tiny_base(byte_data, max_steps=4), out, grid=["batch_size=4,16,2"]),
                     say=_quiet).trained == []


def test_a_second_sweep_into_the_same_out_is_refused_while_the_first_runs(finished, byte_data, tmp_path, capsys):
    """Two sweeps into one OUT: the second trained the runs the first had not reached and both wrote
    sweep.json; now OUT is locked for the whole sweep and the second is refused, touching nothing."""
    from seqlab.runs.lock import RunLockedError

    out, refused = tmp_path / "lr", []

    def second_sweep_at_step_5(engine, step):
        if step == 5 and not refused:
            before = (out / "sweep.json").read_text()
            with pytest.raises(RunLockedError, match=rf"{out} is in use: process {os.getpid()} \(`seqlab sweep`"):
                run_sweep(plan_sweep(tiny_base(byte_data), out, grid=GRID), say=_quiet)
            assert main(["sweep", "--data-dir", str(byte_data), "--grid", GRID[0], *TINY_FLAGS, "--lr", "1e-2",
                         "--out", str(out)]) == 1
            refused.append(capsys.readouterr().err)
            assert (out / "sweep.json").read_text() == before and not (out / NAMES[1]).exists()

    outcome = run_sweep(plan_sweep(tiny_base(byte_data), out, grid=GRID), step_callbacks=[second_sweep_at_step_5],
                        say=_quiet)
    assert refused and f"{out} is in use: process {os.getpid()} (`seqlab sweep`" in refused[0]
    assert outcome.status == "completed" and outcome.trained == NAMES and not (out / ".lock").exists()
    assert _numbers(out) == _numbers(finished[0])  # the first sweep went on undisturbed


def _steps_once(run_dir: Path, total: int, log_interval: int = 5, eval_interval: int = 10) -> None:
    """RUN/log.jsonl ends complete (every line whole, the last step's evaluation at its end) and holds
    each train and eval step exactly once."""
    text = (run_dir / "log.jsonl").read_text()
    assert text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]
    train_steps = [r["step"] for r in records if "train_loss" in r]
    eval_steps = [r["step"] for r in records if "val_loss" in r]
    assert train_steps == list(range(log_interval, total + 1, log_interval))
    assert eval_steps == list(range(eval_interval, total + 1, eval_interval))
    assert records[-1]["step"] == total and "val_loss" in records[-1]


@pytest.mark.parametrize("signum", [pytest.param(signal.SIGKILL, marks=pytest.mark.slow), signal.SIGTERM])
def test_killed_mid_run_and_rerun_every_log_holds_each_step_once(finished, byte_data, tmp_path, signum):
    """Killed between two checkpoints (log records past the last one), then rerun: the logs are the
    uninterrupted sweep's, each step once, and sweep.json lists every run once, finished."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = tmp_path / "killed"
    marker = tmp_path / "held"
    # held at step 15, past the checkpoint at step 10, until the signal has reached it
    process = subprocess.Popen(held(marker, "lr=3e-3", 15) + ["seqlab", *_sweep_command(out, byte_data)[3:]],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_hold(process, marker)
    process.send_signal(signum)
    process.communicate(timeout=120)
    assert process.returncode == (-signal.SIGKILL if signum == signal.SIGKILL else 143)
    rerun = subprocess.run(_sweep_command(out, byte_data), env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    for name in NAMES[:2]:
        _steps_once(out / name, 30)
        losses = [[(r["step"], r.get("train_loss"), r.get("val_loss")) for r in _log(run / name)]
                  for run in (out, finished[0])]
        assert losses[0] == losses[1]  # the resumed run's losses are the uninterrupted run's
    document = _sweep_json(out)
    assert document["status"] == "completed"
    assert [(r["name"], r["status"]) for r in document["runs"]] == [(n, "finished") for n in NAMES[:2]]
    assert _numbers(out) == _numbers(finished[0])[:2]


def test_ctrl_c_says_one_step_number_and_one_instruction(byte_data, tmp_path, capsys):
    def ctrl_c_at_step_12(engine, step):
        if step == 12:
            os.kill(os.getpid(), signal.SIGINT)  # the engine's handler: it saves after this step

    lines: list[str] = []
    outcome = run_sweep(plan_sweep(tiny_base(byte_data), tmp_path / "lr", grid=GRID), say=lines.append,
                        step_callbacks=[ctrl_c_at_step_12])
    said = "\n".join(lines) + capsys.readouterr().out
    assert outcome.status == "interrupted" and outcome.stop_signal == signal.SIGINT
    assert said.count("rerun the same command to continue") == 1 and "--resume" not in said
    assert set(re.findall(r"at step (\d+)", said)) == {"12"}, said
    assert "[1/3] lr=3e-3: interrupted at step 12 of 30 (checkpoint saved)" in said


def test_an_invalid_grid_value_is_refused_before_any_run_trains(byte_data, tmp_path, capsys):
    out = tmp_path / "dev"
    code = main(["sweep", "--data-dir", str(byte_data), "--grid", "device=cpu,bogus", *TINY_FLAGS, "--out", str(out)])
    assert code == 2 and not out.exists()  # the cpu run did not train first
    assert "run device=bogus (device=bogus)" in capsys.readouterr().err


def test_a_million_point_grid_is_refused_with_its_count(byte_data, tmp_path):
    from seqlab.sweep.grid import GridError

    lrs = ",".join(f"{i}e-6" for i in range(1, 1001))
    seeds = ",".join(str(i) for i in range(1000))
    with pytest.raises(GridError, match=r"the sweep has 1,000,000 runs \(1000 x 1000\)"):
        plan_sweep(tiny_base(byte_data), tmp_path / "big", grid=[f"lr={lrs}", f"seed={seeds}"])
    assert not (tmp_path / "big").exists()
