"""The training loop: a tiny end-to-end run, exact resume, accumulation, NaN guard, Ctrl-C, atomic checkpoints."""

from __future__ import annotations

import json
import math
import os
import signal

import numpy as np
import pytest
import torch

from seqlab.lm.settings import TrainConfig
from seqlab.lm.task import Trainer, train
from seqlab.runs.checkpoint import load_model_from_checkpoint, read_checkpoint
from seqlab.runs.log import read_jsonl
from seqlab.training import task_loss as task_loss_module
from seqlab.training.guards import NonFiniteLossError

TINY = dict(context_length=32, d_model=32, num_layers=2, num_heads=2, batch_size=8, threads=1,
            progress=False, eval_batches=2)


def _config(data, out, **overrides) -> TrainConfig:
    values = dict(data_dir=str(data), out_dir=str(out), **TINY)
    values.update(overrides)
    return TrainConfig(**values)


def _train_losses(run_dir) -> list[tuple[int, float]]:
    return [(r["step"], r["train_loss"]) for r in read_jsonl(run_dir / "log.jsonl") if "train_loss" in r]


def test_tiny_run_learns_and_writes_the_run_directory(byte_data, tmp_path):
    run = tmp_path / "run"
    result = train(_config(byte_data, run, max_steps=40, warmup_steps=4, lr=1e-2, eval_interval=20,
                           checkpoint_interval=20, log_interval=5))
    assert result.status == "completed" and result.steps == 40
    losses = [loss for _, loss in _train_losses(run)]
    # uniform guessing over 256 bytes costs ln 256 = 5.55 nats; the stories are far more predictable
    assert losses[0] > 4.0 and losses[-1] < 3.0 and result.val_loss < 3.2
    assert result.tokens_seen == 40 * 8 * 32
    saved = json.loads((run / "config.json").read_text())
    assert saved["model"]["vocab_size"] == 256 and saved["model"]["d_ff"] is not None
    assert saved["settings"]["d_model"] == 32
    names = sorted(os.listdir(run / "checkpoints"))
    assert names == ["latest.pt", "step_0000020.pt", "step_0000040.pt"]
    assert (run / "loss_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    records = read_jsonl(run / "log.jsonl")
    assert {"step", "wallclock", "train_loss", "lr", "grad_norm", "tokens"} <= set(records[0])
    assert [r["step"] for r in records if "val_loss" in r] == [20, 40]
    # the checkpoint rebuilds a plain model whose validation loss is the one the trainer reported
    model, payload = load_model_from_checkpoint(run / "checkpoints" / "latest.pt")
    assert payload["iteration"] == 40 and payload["extra"]["config"]["d_model"] == 32
    probe = Trainer(_config(byte_data, tmp_path / "probe", max_steps=1))
    probe.prepare()
    probe.raw_model.load_state_dict(model.state_dict())
    assert probe.evaluate() == pytest.approx(result.val_loss, abs=1e-6)


def test_learning_rate_warms_up_and_ends_at_min_lr_on_the_last_step(byte_data, tmp_path):
    trainer = Trainer(_config(byte_data, tmp_path, max_steps=10, warmup_steps=3, lr=1e-2, min_lr=1e-3))
    trainer.prepare()
    lrs = [trainer.learning_rate(step) for step in range(10)]
    assert lrs[:3] == pytest.approx([1e-2 / 3, 2e-2 / 3, 1e-2])
    assert lrs[-1] == pytest.approx(1e-3) and all(a >= b for a, b in zip(lrs[2:], lrs[3:]))


def test_resume_reproduces_the_uninterrupted_run_step_for_step(byte_data, tmp_path):
    settings = dict(max_steps=14, warmup_steps=3, eval_interval=5, checkpoint_interval=4, log_interval=1)
    whole = tmp_path / "whole"
    train(_config(byte_data, whole, **settings))

    broken = tmp_path / "broken"

    def stop_at_step_6(trainer, step):
        if step == 6:
            trainer.request_stop("test interruption")

    first = train(_config(byte_data, broken, **settings), step_callbacks=[stop_at_step_6])
    assert first.status == "interrupted" and first.steps == 6
    assert read_checkpoint(broken / "checkpoints" / "latest.pt")["iteration"] == 6
    # simulate a crash after step 6 had already logged more steps: resume must drop and redo them
    with (broken / "log.jsonl").open("a") as fh:
        fh.write(json.dumps({"step": 7, "train_loss": 99.0}) + "\n")
    second = train(_config(byte_data, broken, resume=True, **settings))
    assert second.status == "completed" and second.steps == 14

    assert _train_losses(broken) == _train_losses(whole)  # same batches, same losses, bit for bit
    clock = [r["wallclock"] for r in read_jsonl(broken / "log.jsonl") if "train_loss" in r]
    assert clock == sorted(clock)  # wallclock continues across the resume instead of restarting
    assert len(_train_losses(whole)) == 14
    val = lambda run: [(r["step"], r["val_loss"]) for r in read_jsonl(run / "log.jsonl") if "val_loss" in r]
    assert val(broken) == val(whole)
    a = read_checkpoint(whole / "checkpoints" / "latest.pt")
    b = read_checkpoint(broken / "checkpoints" / "latest.pt")
    for key, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][key]), key
    assert a["extra"]["sampler"] == b["extra"]["sampler"]
    assert b["extra"]["tokens"] == 14 * 8 * 32


def test_gradient_accumulation_equals_the_larger_batch(byte_data, tmp_path):
    big = train(_config(byte_data, tmp_path / "big", batch_size=8, grad_accum_steps=1, max_steps=5,
                        log_interval=1, eval_interval=100, checkpoint_interval=100))
    acc = train(_config(byte_data, tmp_path / "acc", batch_size=2, grad_accum_steps=4, max_steps=5,
                        log_interval=1, eval_interval=100, checkpoint_interval=100))
    big_losses, acc_losses = _train_losses(tmp_path / "big"), _train_losses(tmp_path / "acc")
    assert [s for s, _ in big_losses] == [s for s, _ in acc_losses]
    np.testing.assert_allclose([l for _, l in acc_losses], [l for _, l in big_losses], rtol=1e-5)
    a = read_checkpoint(tmp_path / "big" / "checkpoints" / "latest.pt")["model"]
    b = read_checkpoint(tmp_path / "acc" / "checkpoints" / "latest.pt")["model"]
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-4, atol=1e-5)
    assert big.val_loss == pytest.approx(acc.val_loss, rel=1e-4)


def test_nonfinite_loss_stops_and_keeps_the_last_good_checkpoint(byte_data, tmp_path, monkeypatch):
    real_cross_entropy = task_loss_module.cross_entropy  # the engine's loss (TaskLoss, logits path on a CPU)
    calls = {"n": 0}

    def poisoned(logits, targets):
        calls["n"] += 1
        loss = real_cross_entropy(logits, targets)
        return loss * float("nan") if calls["n"] == 8 else loss  # the 8th training forward

    monkeypatch.setattr(task_loss_module, "cross_entropy", poisoned)
    run = tmp_path / "run"
    with pytest.raises(NonFiniteLossError, match=r"step 8: the training loss is nan.*latest\.pt \(step 5\)"):
        train(_config(byte_data, run, max_steps=20, eval_interval=100, checkpoint_interval=5, log_interval=1))
    payload = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert payload["iteration"] == 5
    assert all(torch.isfinite(t).all() for t in payload["model"].values())
    steps = [r["step"] for r in read_jsonl(run / "log.jsonl")]
    assert max(steps) == 7 and all(math.isfinite(loss) for _, loss in _train_losses(run))


def test_ctrl_c_saves_a_checkpoint_and_exits(byte_data, tmp_path):
    def press_ctrl_c(trainer, step):
        if step == 3:
            os.kill(os.getpid(), signal.SIGINT)  # the real signal, caught by the trainer's handler

    previous = signal.getsignal(signal.SIGINT)
    result = train(_config(byte_data, tmp_path / "run", max_steps=50, eval_interval=100,
                           checkpoint_interval=100), step_callbacks=[press_ctrl_c])
    assert result.status == "interrupted" and result.steps == 3
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")["iteration"] == 3
    assert signal.getsignal(signal.SIGINT) is previous  # handler restored


def test_a_crash_while_saving_leaves_the_previous_checkpoint_readable(byte_data, tmp_path, monkeypatch):
    run = tmp_path / "run"
    trainer = Trainer(_config(byte_data, run, max_steps=10))
    trainer.prepare()
    trainer._started = 0.0
    trainer.train_step(0)
    trainer.save(1)
    before = read_checkpoint(run / "checkpoints" / "latest.pt")
    trainer.train_step(1)

    def crash_midway(obj, handle, *args, **kwargs):
        handle.write(b"PK\x03\x04 half a checkpoint")  # some bytes reach the disk, then the process dies
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(torch, "save", crash_midway)
    with pytest.raises(OSError, match="simulated"):
        trainer.save(2)
    monkeypatch.undo()
    after = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert after["iteration"] == 1
    for key, tensor in before["model"].items():
        assert torch.equal(tensor, after["model"][key])
    assert sorted(os.listdir(run / "checkpoints")) == ["latest.pt", "step_0000001.pt"]  # no temp files


def test_ids_outside_the_vocabulary_are_rejected_at_load(byte_data, tmp_path):
    from seqlab.tokenizer.token_array import load_tokens, save_tokens

    ids = np.arange(100, dtype=np.uint16) % 50
    ids[63] = 300
    np.save(tmp_path / "bad.npy", ids)
    with pytest.raises(ValueError, match=r"bad\.npy: token id 300 at position 63 is outside the vocabulary \[0, 256\)"):
        load_tokens(tmp_path / "bad.npy", 256)
    assert isinstance(load_tokens(tmp_path / "bad.npy", 301), np.memmap)  # memory-mapped, not read in
    np.save(tmp_path / "neg.npy", np.array([1, -2, 3], dtype=np.int32))
    with pytest.raises(ValueError, match="token id -2 at position 1"):
        load_tokens(tmp_path / "neg.npy", 256)
    np.save(tmp_path / "2d.npy", np.zeros((2, 3), dtype=np.uint16))
    with pytest.raises(ValueError, match=r"must be 1-D, got shape \(2, 3\)"):
        load_tokens(tmp_path / "2d.npy", 256)
    with pytest.raises(ValueError, match="outside"):
        save_tokens(np.array([1, 256]), tmp_path / "x.npy", 256)
    # the trainer refuses a vocabulary smaller than the data's
    with pytest.raises(ValueError, match="vocab_size=200 is smaller than the data's vocabulary"):
        train(_config(byte_data, tmp_path / "run", vocab_size=200, max_steps=1))


def test_resume_without_a_checkpoint_is_a_clear_error(byte_data, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="nothing to resume"):
        train(_config(byte_data, tmp_path / "empty", resume=True, max_steps=2))
    with pytest.raises(FileNotFoundError, match="--resume: no run at .*missing"):
        train(_config(byte_data, tmp_path / "missing", resume=True, max_steps=2))


def test_train_cli_and_resume_cli(byte_data, tmp_path, capsys):
    from seqlab.cli import main

    run = tmp_path / "run"
    flags = ["--data-dir", str(byte_data), "--out-dir", str(run), "--context-length", "16", "--d-model", "16",
             "--num-layers", "1", "--num-heads", "2", "--batch-size", "4", "--threads", "1", "--no-progress",
             "--eval-batches", "1", "--eval-interval", "3", "--checkpoint-interval", "3", "--nope"]
    assert main(["train", *flags, "--max-steps", "3"]) == 0
    assert "completed at step 3/3" in capsys.readouterr().out
    # resume with only the run directory: the rest comes from RUN/config.json; a flag extends the run
    assert main(["train", "--out-dir", str(run), "--resume", "--max-steps", "6", "--no-progress"]) == 0
    assert "completed at step 6/6" in capsys.readouterr().out
    assert json.loads((run / "config.json").read_text())["model"]["positional"] == "nope"
    assert main(["train", "--data-dir", str(tmp_path / "missing"), "--out-dir", str(run)]) == 1
    assert "seqlab prepare" in capsys.readouterr().err


@pytest.mark.slow
def test_compiled_and_plain_runs_share_checkpoints(byte_data, tmp_path):
    """A torch.compile run resumes a plain run's checkpoint and the other way round, same losses."""
    settings = dict(max_steps=6, eval_interval=100, checkpoint_interval=3, log_interval=1)
    plain = tmp_path / "plain"
    train(_config(byte_data, plain, **settings))

    def stop_at_3(trainer, step):
        if step == 3:
            trainer.request_stop("test")

    mixed = tmp_path / "mixed"
    train(_config(byte_data, mixed, compile=True, **settings), step_callbacks=[stop_at_3])
    payload = read_checkpoint(mixed / "checkpoints" / "latest.pt")
    assert payload["iteration"] == 3 and not any(k.startswith("_orig_mod.") for k in payload["model"])
    train(_config(byte_data, mixed, resume=True, **settings))  # plain model resumes the compiled run
    np.testing.assert_allclose([l for _, l in _train_losses(mixed)], [l for _, l in _train_losses(plain)],
                               rtol=1e-4)
    again = tmp_path / "again"  # and a compiled model resumes a plain run
    train(_config(byte_data, again, **settings), step_callbacks=[stop_at_3])
    train(_config(byte_data, again, compile=True, resume=True, **settings))
    np.testing.assert_allclose([l for _, l in _train_losses(again)], [l for _, l in _train_losses(plain)],
                               rtol=1e-4)


def test_an_existing_run_is_not_overwritten_by_accident(byte_data, tmp_path):
    run = tmp_path / "run"
    train(_config(byte_data, run, max_steps=2, checkpoint_interval=1))
    with pytest.raises(FileExistsError, match="--resume.*--overwrite"):
        train(_config(byte_data, run, max_steps=1))
    train(_config(byte_data, run, max_steps=1, overwrite=True))
    assert sorted(os.listdir(run / "checkpoints")) == ["latest.pt", "step_0000001.pt"]


def test_asking_for_a_missing_tracker_is_a_clear_error(byte_data, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "wandb", None)  # None in sys.modules makes `import wandb` fail
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(RuntimeError, match="wandb.*not installed"):
        train(_config(byte_data, tmp_path / "a", max_steps=1, wandb=True))
    with pytest.raises(RuntimeError, match="tensorboard.*not installed"):
        train(_config(byte_data, tmp_path / "b", max_steps=1, tensorboard=True))


def test_compile_is_switched_off_with_a_message_where_unsupported(byte_data, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CXX", raising=False)
    from seqlab import runtime

    monkeypatch.setattr(runtime.shutil, "which", lambda name: None)  # no C++ compiler on this "machine"
    reason = runtime.compile_unsupported_reason(torch.device("cpu"))
    assert "C++ compiler" in reason
    result = train(_config(byte_data, tmp_path / "run", compile=True, max_steps=2))
    assert result.status == "completed"
    assert f"compile: switched off ({reason}); training eagerly" in capsys.readouterr().err


def test_log_records_are_ordered_and_malformed_logs_name_the_line(byte_data, tmp_path):
    from seqlab.runs.log import JsonlLog

    log = JsonlLog(tmp_path / "log.jsonl")
    for step in (1, 2, 3):
        log.write({"step": step, "wallclock": step * 0.5})
    log.close()
    resumed = JsonlLog(tmp_path / "log.jsonl", resume_step=2)  # records after the checkpoint are dropped
    resumed.write({"step": 3, "wallclock": 9.0})
    resumed.close()
    assert read_jsonl(tmp_path / "log.jsonl") == [{"step": 1, "wallclock": 0.5}, {"step": 2, "wallclock": 1.0},
                                                 {"step": 3, "wallclock": 9.0}]
    with (tmp_path / "log.jsonl").open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(ValueError, match=r"log\.jsonl, line 4: invalid JSON"):
        read_jsonl(tmp_path / "log.jsonl")


def test_resume_drops_a_torn_last_log_line_and_refuses_a_bad_line_elsewhere(tmp_path):
    from seqlab.runs.log import JsonlLog

    path = tmp_path / "log.jsonl"
    good = [{"step": 1, "wallclock": 0.5}, {"step": 2, "wallclock": 1.0}]
    lines = "".join(json.dumps(r) + "\n" for r in good)
    path.write_text(lines + json.dumps({"step": 3, "wallclock": 1.5})[:9])  # '{"step": ': a kill mid-append
    with pytest.warns(RuntimeWarning, match=r"log\.jsonl, line 3: the last line is incomplete JSON") as caught:
        resumed = JsonlLog(path, resume_step=2)
    assert len(caught) == 1
    resumed.write({"step": 3, "wallclock": 9.0})
    resumed.close()
    assert read_jsonl(path) == [*good, {"step": 3, "wallclock": 9.0}]
    # an unparseable line with records after it is damage, not a torn append: resume refuses it
    damaged = json.dumps(good[0]) + "\n{not json\n" + json.dumps(good[1]) + "\n"
    path.write_text(damaged)
    with pytest.raises(ValueError, match=r"log\.jsonl, line 2: invalid JSON"):
        JsonlLog(path, resume_step=2)
    assert path.read_text() == damaged


@pytest.mark.parametrize("ablation", [{"norm": "none"}, {"norm_position": "post"}, {"positional": "nope"},
                                      {"ffn": "silu"}])
def test_each_ablation_trains_and_is_recorded(byte_data, tmp_path, ablation):
    run = tmp_path / "run"
    result = train(_config(byte_data, run, max_steps=3, context_length=16, d_model=16, num_layers=1, **ablation))
    assert result.status == "completed" and math.isfinite(result.val_loss)
    model, payload = load_model_from_checkpoint(run / "checkpoints" / "latest.pt")
    for key, value in ablation.items():
        assert getattr(model.config, key) == value
        assert json.loads((run / "config.json").read_text())["model"][key] == value
    if ablation == {"norm": "none"}:
        assert not any("ln" in name for name in payload["model"])  # no norm gains at all


def test_an_engine_has_every_attribute_before_and_after_build(byte_data, tmp_path):
    """Engine(task) sets every attribute prepare() sets (none appears later); Engine.build is a
    context manager that holds the run's lock while it trains and releases it on leaving."""
    from seqlab.runs.lock import RunLock, RunLockedError

    config = _config(byte_data, tmp_path / "run", max_steps=3)
    fresh = Trainer(config)
    before = set(vars(fresh))
    with Trainer.build(config) as engine:
        assert set(vars(engine)) == before and engine.prepared and engine.lock is not None
        with pytest.raises(RunLockedError):
            RunLock(tmp_path / "run", "another").acquire()
        loss, grad_norm, lr = engine.train_step(0)
        assert math.isfinite(float(loss)) and float(grad_norm) > 0 and lr == engine.learning_rate(0)
        assert engine.step_tokens == 8 * 32
    assert engine.lock is None
    other = RunLock(tmp_path / "run", "another")
    other.acquire()  # free again
    other.release()
