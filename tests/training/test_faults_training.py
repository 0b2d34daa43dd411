"""Issue 13, part B1: each training-run defect injected (signal, bad input, poisoned gradient,
stale files, fake clock) and the outcome asserted. One test per item of the issue."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqlab.atomic import _TEMPORARY_NAME
from seqlab.cli import main
from seqlab.lm.settings import TrainConfig, config_from_argv
from seqlab.lm.task import Trainer, train
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.runs.config import write_run_config
from seqlab.runs.log import read_jsonl
from seqlab.runs.status import Status
from seqlab.training import engine as engine_module
from seqlab.training.guards import NonFiniteLossError
from seqlab.training.throughput import Throughput
from tests.conftest import wait_until

TINY = dict(context_length=16, d_model=16, num_layers=1, num_heads=2, batch_size=4, threads=1,
            progress=False, eval_batches=1)
TINY_FLAGS = ["--context-length", "16", "--d-model", "16", "--num-layers", "1", "--num-heads", "2",
              "--batch-size", "4", "--threads", "1", "--no-progress", "--eval-batches", "1"]


def _config(data, out, **overrides) -> TrainConfig:
    return TrainConfig(**{"data_dir": str(data), "out_dir": str(out), **TINY, **overrides})


def _temporaries(run: Path) -> list[str]:
    return [p.name for p in run.rglob("*") if _TEMPORARY_NAME.fullmatch(p.name)]


def _dead_pid() -> int:
    """The id of a process that has already exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _expected_cosine(it: int, lr: float, min_lr: float, warmup: int, horizon: int) -> float:
    """Closed form of warm-up + cosine, written out independently of seqlab.training.schedule."""
    if it < warmup:
        return lr * it / warmup
    if it > horizon:
        return min_lr
    return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * (it - warmup) / (horizon - warmup))) / 2


# -- 1. SIGTERM ---------------------------------------------------------------------------------


def test_1_sigterm_finishes_the_step_saves_and_exits_143(byte_data, tmp_path):
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    process = subprocess.Popen(
        [sys.executable, "-m", "seqlab", "train", "--data-dir", str(byte_data), "--out-dir", str(run),
         *TINY_FLAGS, "--max-steps", "100000", "--checkpoint-interval", "5000", "--eval-interval", "5000",
         "--log-interval", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(process, lambda: (run / "log.jsonl").is_file() and (run / "log.jsonl").read_text().strip(),
                   poll_s=0.05)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, err
    saved = read_checkpoint(run / "checkpoints" / "latest.pt")["iteration"]
    logged = read_jsonl(run / "log.jsonl")[-1]["step"]
    assert saved == logged >= 1  # the step in progress was finished, logged and saved
    assert f"interrupted (SIGTERM): saved {run / 'checkpoints' / 'latest.pt'} at step {saved}" in err
    assert f"interrupted at step {saved}/100000" in out
    assert _temporaries(run) == []


def test_1_stop_signal_handlers_are_restored_after_the_run(byte_data, tmp_path):
    def send_sigterm(trainer, step):
        if step == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # the real signal, caught by the trainer's handler

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    result = train(_config(byte_data, tmp_path / "run", max_steps=50), step_callbacks=[send_sigterm])
    assert (result.status, result.steps, result.stop_signal) == ("interrupted", 2, signal.SIGTERM)
    assert {s: signal.getsignal(s) for s in before} == before


# -- 2. --overwrite -----------------------------------------------------------------------------


def test_2_overwrite_keeps_the_old_checkpoints_until_the_new_run_saves(byte_data, tmp_path):
    """... and with them the old run's config.json (and tokenizer/), which describe those checkpoints:
    the new run's files replace them at its first save."""
    run = tmp_path / "run"
    train(_config(byte_data, run, max_steps=4, checkpoint_interval=2, eval_interval=100))
    old_config = (run / "config.json").read_bytes()

    def fail_at_step_2(trainer, step):
        if step == 2:
            raise RuntimeError("new run failed (simulated)")

    with pytest.raises(RuntimeError, match="simulated"):
        train(_config(byte_data, run, max_steps=10, overwrite=True, checkpoint_interval=5, eval_interval=100),
              step_callbacks=[fail_at_step_2])
    assert sorted(os.listdir(run / "checkpoints")) == ["latest.pt", "step_0000002.pt", "step_0000004.pt"]
    assert read_checkpoint(run / "checkpoints" / "latest.pt")["iteration"] == 4  # the old run survives
    assert (run / "config.json").read_bytes() == old_config
    train(_config(byte_data, run, max_steps=3, overwrite=True, checkpoint_interval=5, eval_interval=100))
    assert sorted(os.listdir(run / "checkpoints")) == ["latest.pt", "step_0000003.pt"]
    assert json.loads((run / "config.json").read_text())["settings"]["max_steps"] == 3


# -- 3. NaN gradient with a finite loss ---------------------------------------------------------


def test_3_a_nan_gradient_with_a_finite_loss_stops_and_is_never_saved(byte_data, tmp_path, poison_gradient):
    poison_gradient(6)  # step 6: one gradient entry overflows; the loss stays finite
    run = tmp_path / "run"
    with pytest.raises(NonFiniteLossError, match=r"step 6: the gradient norm is nan \(the loss [0-9.]+ is still "
                                                 r"finite\).*latest\.pt \(step 4\)"):
        train(_config(byte_data, run, max_steps=20, eval_interval=100, checkpoint_interval=2, log_interval=1))
    assert sorted(os.listdir(run / "checkpoints")) == ["latest.pt", "step_0000002.pt", "step_0000004.pt"]
    payload = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert payload["iteration"] == 4 and all(torch.isfinite(t).all() for t in payload["model"].values())
    # and a save of non-finite weights is refused outright
    trainer = Trainer(_config(byte_data, tmp_path / "other", max_steps=5))
    trainer.prepare()
    trainer._started = 0.0
    with torch.no_grad():
        next(trainer.raw_model.parameters()).view(-1)[3] = float("inf")
    with pytest.raises(NonFiniteLossError, match="step 1: the weights are not finite"):
        trainer.save(1)
    assert not (tmp_path / "other" / "checkpoints" / "latest.pt").exists()


# -- 4. learning-rate schedule ------------------------------------------------------------------


def test_4_schedule_min_lr_warmup_clamp_and_resume_horizon(byte_data, tmp_path, capsys):
    with pytest.raises(ValueError, match=r"min_lr=1.0 is above lr=0.003.*min_lr <= lr"):
        config_from_argv(["--lr", "0.003", "--min-lr", "1.0"])
    # --max-steps 30 with the default 100 warm-up steps: warm up for 3, say so, and decay
    trainer = Trainer(_config(byte_data, tmp_path / "short", max_steps=30, lr=1e-2, min_lr=1e-3))
    trainer.prepare()
    assert trainer.schedule_notes == ["schedule: --warmup-steps 100 would leave no decay in a 30-step schedule; "
                                      "warming up for 3 steps instead"]
    assert [trainer.learning_rate(s) for s in range(30)] == pytest.approx(
        [_expected_cosine(s + 1, 1e-2, 1e-3, 3, 30) for s in range(30)])
    # resume with a larger --max-steps keeps the cosine (ending at step 10); later steps run at min_lr
    settings = dict(lr=1e-2, min_lr=1e-3, warmup_steps=2, eval_interval=100, log_interval=1)
    run = tmp_path / "run"
    train(_config(byte_data, run, max_steps=10, **settings))
    capsys.readouterr()
    train(_config(byte_data, run, max_steps=14, resume=True, **settings))
    assert "steps 11-14 run at min_lr 1.00e-03 (--reschedule stretches the cosine" in capsys.readouterr().err
    lrs = {r["step"]: r["lr"] for r in read_jsonl(run / "log.jsonl") if "lr" in r}
    assert [lrs[s] for s in range(1, 15)] == pytest.approx(
        [_expected_cosine(s, 1e-2, 1e-3, 2, 10) for s in range(1, 15)])
    assert [lrs[s] for s in range(11, 15)] == pytest.approx([1e-3] * 4)
    # --reschedule stretches it to the new length instead (and says so)
    train(_config(byte_data, run, max_steps=20, resume=True, reschedule=True, **settings))
    assert "--reschedule: the cosine now ends at step 20 instead of step 10" in capsys.readouterr().err
    lrs = {r["step"]: r["lr"] for r in read_jsonl(run / "log.jsonl") if "lr" in r}
    assert [lrs[s] for s in range(15, 21)] == pytest.approx(
        [_expected_cosine(s, 1e-2, 1e-3, 2, 20) for s in range(15, 21)])
    assert read_checkpoint(run / "checkpoints" / "latest.pt")["extra"]["schedule_steps"] == 20


# -- 5. --max-steps over a TOML token_budget ----------------------------------------------------


def test_5_a_max_steps_flag_wins_over_the_toml_token_budget(byte_data, tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text("[schedule]\ntoken_budget = 1000000\nmax_steps = 50\n")
    assert config_from_argv(["--config", str(toml)]).total_steps() == math.ceil(1e6 / (32 * 128))
    cfg = config_from_argv(["--config", str(toml), "--max-steps", "7"])
    assert (cfg.token_budget, cfg.total_steps()) == (None, 7)
    # the same on --resume, where the budget comes from the run's config.json
    run = tmp_path / "run"
    cfg = TrainConfig(data_dir="d", out_dir=str(run), token_budget=1000000)
    write_run_config(run, cfg.run_config(cfg.model_config(300), world_size=1, total_steps=cfg.total_steps()))
    assert config_from_argv(["--out-dir", str(run), "--resume", "--max-steps", "9"]).total_steps() == 9
    # a --token-budget flag still wins over a TOML max_steps
    assert config_from_argv(["--config", str(toml), "--token-budget", "4096"]).total_steps() == 1


# -- 7. tracebacks become messages --------------------------------------------------------------


def test_7_bad_run_directories_and_configs_are_messages(byte_data, tmp_path, capsys):
    flags = ["--data-dir", str(byte_data), *TINY_FLAGS]
    # --resume where no run is
    missing = tmp_path / "missing"
    assert main(["train", "--out-dir", str(missing), "--resume"]) == 1
    assert f"error: --resume: no run at {missing}" in capsys.readouterr().err
    # --out-dir that is a file
    a_file = tmp_path / "file"
    a_file.write_text("")
    assert main(["train", *flags, "--out-dir", str(a_file), "--max-steps", "1"]) == 1
    assert f"error: --out {a_file} is a file" in capsys.readouterr().err
    # --resume past --max-steps
    run = tmp_path / "run"
    assert main(["train", *flags, "--out-dir", str(run), "--max-steps", "3"]) == 0
    capsys.readouterr()
    assert main(["train", "--out-dir", str(run), "--resume", "--max-steps", "2"]) == 1
    assert "error: nothing to do: the run is at step 3 and --max-steps is 2" in capsys.readouterr().err
    # a config.json with a wrong type names the key, the value and the expected type
    saved = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**saved, "settings": {**saved["settings"], "lr": "fast"}}))
    assert main(["train", "--out-dir", str(run), "--resume", "--max-steps", "5"]) == 2
    assert f"error: {run / 'config.json'}: key 'settings.lr' is 'fast'; expected float" in capsys.readouterr().err
    (run / "config.json").write_text(json.dumps({**saved, "settings": {**saved["settings"], "max_steps": [3]}}))
    assert main(["train", "--out-dir", str(run), "--resume"]) == 2
    assert "key 'settings.max_steps' is [3]; expected int or null" in capsys.readouterr().err


# -- 8. stale temporaries -----------------------------------------------------------------------


def test_8_temporaries_of_dead_runs_are_removed_at_start_and_on_resume(byte_data, tmp_path):
    run = tmp_path / "run"
    dead, alive = _dead_pid(), os.getppid()  # the parent (pytest's shell or runner) is alive
    (run / "checkpoints").mkdir(parents=True)

    def plant() -> None:
        (run / f".loss_curve.tmp{dead}.png").write_bytes(b"")  # what a killed plot left
        (run / "checkpoints" / f".step_0000005.tmp{dead}.pt").write_bytes(b"half")
        (run / f".log.tmp{alive}.jsonl").write_bytes(b"")  # another live process's file: kept

    plant()
    train(_config(byte_data, run, max_steps=2, eval_interval=100))
    assert _temporaries(run) == [f".log.tmp{alive}.jsonl"]
    plant()
    train(_config(byte_data, run, max_steps=3, eval_interval=100, resume=True))
    assert _temporaries(run) == [f".log.tmp{alive}.jsonl"]


# -- 9. the end-of-run train loss is labelled ---------------------------------------------------


def test_9_the_end_of_run_train_loss_says_what_it_averages(byte_data, tmp_path, capsys):
    run = tmp_path / "run"
    flags = ["--data-dir", str(byte_data), "--out-dir", str(run), *TINY_FLAGS, "--log-interval", "5"]
    assert main(["train", *flags, "--max-steps", "7"]) == 0
    out = capsys.readouterr().out
    last = read_jsonl(run / "log.jsonl")
    last_train = [r for r in last if "train_loss" in r][-1]
    assert last_train["step"] == 7
    assert f"train loss (mean of the last 2 steps) {last_train['train_loss']:.4f}" in out  # steps 6 and 7


# -- 10. --compile: say so, and leave the compiling step out of tokens/s -----------------------


def test_10_compile_is_announced_and_its_first_step_left_out_of_tokens_per_second(byte_data, tmp_path,
                                                                                   monkeypatch, capsys):
    # throughput arithmetic: a 30 s compiling step and two 0.1 s steps of 64 tokens give 640 tokens/s
    speed = Throughput(64)
    speed.add(1, 30.0, exclude=True)
    speed.add(2, 0.1)
    speed.add(3, 0.1)
    assert speed.tokens_per_second == pytest.approx(640.0) and speed.excluded == [1]
    # the trainer: pretend torch.compile works (compiling for real takes minutes on 2 cores)
    monkeypatch.setattr(engine_module, "compile_model", lambda model, device: (model, None))
    run = tmp_path / "run"
    assert main(["train", "--data-dir", str(byte_data), "--out-dir", str(run), *TINY_FLAGS, "--compile",
                 "--max-steps", "4"]) == 0
    captured = capsys.readouterr()
    announce = captured.err.index("compile: compiling the model for cpu during the first step")
    assert announce < captured.err.index("compile: step 1 took")
    assert "tokens/s (step 1 left out: compiling)" in captured.out


# -- 11. the time budget (the demo's wall-clock length) ------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_11_time_budget_follows_elapsed_time_and_stops_when_spent(byte_data, tmp_path):
    clock = FakeClock()

    class TenSecondSteps(Trainer):
        def train_step(self, step):
            out = super().train_step(step)
            clock.now += 10.0  # every optimizer step takes 10 s on the fake clock
            return out

    run = tmp_path / "run"
    config = _config(byte_data, run, max_steps=1000, time_budget_s=50.0, warmup_steps=1, lr=1e-2, min_lr=1e-3,
                     log_interval=1, eval_interval=1000, checkpoint_interval=1000)
    result = TenSecondSteps(config, clock=clock).run()
    assert (result.status, result.steps, result.stopped_by) == (Status.TIME_BUDGET, 5, "time budget")
    assert result.status.finished and result.exit_status == 0
    assert result.summary().startswith("time budget spent at step 5/1000, ")
    assert read_checkpoint(run / "checkpoints" / "latest.pt")["iteration"] == 5
    records = [r for r in read_jsonl(run / "log.jsonl") if "lr" in r]
    # step s starts (s - 1) * 10 s into the run: the cosine's progress is (s - 1) * 10 / 50
    expected = [1e-3 + 0.5 * (1 + math.cos(math.pi * (s - 1) / 5)) * (1e-2 - 1e-3) for s in range(1, 6)]
    assert [r["lr"] for r in records] == pytest.approx(expected)
    assert [r["wallclock"] for r in records] == pytest.approx([10.0, 20.0, 30.0, 40.0, 50.0])
    # a resume continues the elapsed time: nothing is left of a spent budget
    with pytest.raises(ValueError, match="nothing to do: the run has trained 50.0 s and --time-budget-s is 50"):
        Trainer(TrainConfig(**{**config.to_dict(), "resume": True}), clock=clock).run()


def test_11_time_budget_bar_shows_seconds_left_not_the_step_cap_eta():
    """With a time budget the step count is only a cap: the bar has no total (no 4-hour ETA for a
    2-minute run) and its postfix says how many seconds are left."""
    from seqlab.training.progress import StepReporter

    capped = StepReporter(None, total=100_000, initial=0, show_bar=True, tokens_per_step=10,
                          flops_per_token=None, peak_flops=None)
    budget = StepReporter(None, total=100_000, initial=0, show_bar=True, tokens_per_step=10,
                          flops_per_token=None, peak_flops=None, time_budget_s=120.0)
    try:
        budget.step(1, losses=[2.5], lr=1e-3, grad_norm=1.0, seconds=0.5, compiling=False, write_log=False,
                    wallclock=20.25, tokens=10)
        assert capped.bar.total == 100_000
        assert budget.bar.total is None
        assert "100 s left" in budget.bar.postfix
    finally:
        capped.close()
        budget.close()
