"""``seqlab seq2seq train`` on the training engine (issue 17): every feature of ``seqlab train``, each
injected and checked against an independent oracle (a plain loop, another split of the batch, one
process vs two, a closed-form schedule)."""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqlab.cli import main
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.runs.log import read_jsonl
from seqlab.runs.status import Status
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.task import Seq2SeqTask, train
from seqlab.training import engine as engine_module
from seqlab.training.engine import Engine
from seqlab.training.guards import NonFiniteLossError
from tests.training.test_faults_training import (
    _expected_cosine,  # the schedule oracle, written out
)

pytestmark = pytest.mark.usefixtures("one_thread")
REPO = Path(__file__).resolve().parents[2]
TINY = dict(task="reverse", min_len=2, max_len=5, train_size=2000, valid_size=60, eval_batches=2,
            arch="rnn-attention", d_model=32, num_layers=1, batch_size=32, lr=1e-2, warmup_steps=5,
            progress=False, threads=1)
TINY_FLAGS = ["--task", "reverse", "--min-len", "2", "--max-len", "5", "--train-size", "2000", "--valid-size", "60",
              "--eval-batches", "2", "--arch", "rnn-attention", "--d-model", "32", "--num-layers", "1",
              "--lr", "0.01", "--warmup-steps", "5", "--no-progress", "--threads", "1"]


def _config(tmp_path, name="run", **overrides) -> Seq2SeqTrainConfig:
    return Seq2SeqTrainConfig(**{"out_dir": str(tmp_path / name), **TINY, **overrides})


def _quiet(message: str) -> None:
    pass


def _train_records(run: Path, fields=("step", "train_loss", "lr", "grad_norm", "tokens")) -> list[dict]:
    return [{k: r[k] for k in fields} for r in read_jsonl(run / "log.jsonl") if "train_loss" in r]


def test_a_nan_gradient_stops_the_run_and_is_never_saved(tmp_path, poison_gradient):
    poison_gradient(6)  # step 6: one gradient entry becomes NaN, the loss stays finite
    run = tmp_path / "run"
    with pytest.raises(NonFiniteLossError, match=r"step 6: the gradient norm is nan \(the loss [0-9.]+ is still "
                                                 r"finite\).*latest\.pt \(step 4\)"):
        train(_config(tmp_path, max_steps=20, checkpoint_interval=2, eval_interval=100, log_interval=1), say=_quiet)
    payload = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert payload["iteration"] == 4 and all(torch.isfinite(t).all() for t in payload["model"].values())
    assert [r["step"] for r in _train_records(run)] == [1, 2, 3, 4, 5]


def test_sigterm_finishes_the_step_saves_and_reports_signal_143(tmp_path):
    def send_sigterm(engine, step):
        if step == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # the real signal, caught by the engine's handler

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    result = train(_config(tmp_path, max_steps=50, eval_interval=100), step_callbacks=[send_sigterm], say=_quiet)
    assert (result.status, result.steps, result.stop_signal, result.exit_status) == ("interrupted", 3,
                                                                                     signal.SIGTERM, 143)
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")["iteration"] == 3
    assert {s: signal.getsignal(s) for s in before} == before


def test_gradient_accumulation_weights_micro_batches_by_their_target_tokens(tmp_path):
    """Pairs have different lengths, so a micro-batch's mean loss must be weighted by its tokens:
    4 micro-batches of 8 then equal one batch of 32, loss and update."""
    settings = dict(max_steps=4, log_interval=1, eval_interval=4, checkpoint_interval=4)
    big = train(_config(tmp_path, "big", batch_size=32, **settings), say=_quiet)
    acc = train(_config(tmp_path, "acc", batch_size=8, grad_accum_steps=4, **settings), say=_quiet)
    a, b = _train_records(tmp_path / "big"), _train_records(tmp_path / "acc")
    assert [r["tokens"] for r in a] == [r["tokens"] for r in b]  # the same pairs were drawn
    assert [r["train_loss"] for r in b] == pytest.approx([r["train_loss"] for r in a], rel=1e-5)
    wa = read_checkpoint(tmp_path / "big" / "checkpoints" / "latest.pt")["model"]
    wb = read_checkpoint(tmp_path / "acc" / "checkpoints" / "latest.pt")["model"]
    for key in wa:
        torch.testing.assert_close(wb[key], wa[key], rtol=1e-4, atol=1e-5)
    assert acc.metrics["val_loss"] == pytest.approx(big.metrics["val_loss"], rel=1e-4)


def test_the_logged_loss_is_the_token_weighted_mean_of_the_batch(tmp_path):
    """Oracle: the first step's loss recomputed by hand, as the sum of per-token losses over the
    batch's target tokens, from the same initial weights and the same drawn pairs."""
    import numpy as np
    import torch.nn.functional as F

    from seqlab.seq2seq.config import PAD_ID
    from seqlab.seq2seq.data import collate

    cfg = _config(tmp_path, max_steps=1, log_interval=1, eval_interval=1)
    task = Seq2SeqTask(cfg)
    task.prepare(_quiet)
    torch.manual_seed(cfg.seed)
    model = task.build_model("cpu")
    sampler = np.random.default_rng(cfg.seed)
    drawn = task.draw(sampler, cfg.batch_size)
    batch = collate(drawn.data)
    with torch.no_grad():
        logits = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)
    per_token = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch.tgt_out.reshape(-1),
                                ignore_index=PAD_ID, reduction="sum")
    assert drawn.tokens == int((batch.tgt_out != PAD_ID).sum())
    train(cfg, say=_quiet)
    assert _train_records(tmp_path / "run")[0]["train_loss"] == pytest.approx(float(per_token) / drawn.tokens,
                                                                              rel=1e-5)


def test_resume_keeps_the_cosine_horizon_and_says_so(tmp_path):
    settings = dict(lr=1e-2, min_lr=1e-3, warmup_steps=2, eval_interval=100, log_interval=1)
    said: list[str] = []
    train(_config(tmp_path, max_steps=10, **settings), say=said.append)
    train(_config(tmp_path, max_steps=14, resume=True, **settings), say=said.append)
    assert any("steps 11-14 run at min_lr 1.00e-03 (--reschedule stretches the cosine" in m for m in said), said
    lrs = {r["step"]: r["lr"] for r in _train_records(tmp_path / "run")}
    assert [lrs[s] for s in range(1, 15)] == pytest.approx(
        [_expected_cosine(s, 1e-2, 1e-3, 2, 10) for s in range(1, 15)])
    said.clear()
    train(_config(tmp_path, max_steps=20, resume=True, reschedule=True, **settings), say=said.append)
    assert any("--reschedule: the cosine now ends at step 20 instead of step 10" in m for m in said), said
    lrs = {r["step"]: r["lr"] for r in _train_records(tmp_path / "run")}
    assert [lrs[s] for s in range(15, 21)] == pytest.approx(
        [_expected_cosine(s, 1e-2, 1e-3, 2, 20) for s in range(15, 21)])


def test_bf16_autocast_on_the_cpu(tmp_path):
    """bf16 changes the first step's loss a little (bf16 matmuls) but not much, and the run learns."""
    settings = dict(max_steps=40, log_interval=1, eval_interval=40, arch="transformer", num_heads=2)
    fp32 = train(_config(tmp_path, "fp32", precision="fp32", **settings), say=_quiet)
    bf16 = train(_config(tmp_path, "bf16", precision="bf16", **settings), say=_quiet)
    a, b = _train_records(tmp_path / "fp32"), _train_records(tmp_path / "bf16")
    assert 0 < abs(a[0]["train_loss"] - b[0]["train_loss"]) < 0.05
    assert all(math.isfinite(r["train_loss"]) for r in b)
    assert b[-1]["train_loss"] < 0.7 * b[0]["train_loss"]
    assert math.isfinite(bf16.metrics["val_loss"]) and abs(bf16.metrics["val_loss"] - fp32.metrics["val_loss"]) < 0.3
    payload = read_checkpoint(tmp_path / "bf16" / "checkpoints" / "latest.pt")
    assert all(t.dtype == torch.float32 for t in payload["model"].values())  # weights stay float32


def test_compile_is_announced_and_its_first_step_left_out_of_tokens_per_second(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(engine_module, "compile_model", lambda model, device: (model, None))
    assert main(["seq2seq", "train", *TINY_FLAGS, "--compile", "--max-steps", "3", "--out", str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    assert "compile: compiling the model for cpu during the first step" in captured.err
    assert "target tokens/s (step 1 left out: compiling)" in captured.out


def test_the_time_budget_stops_the_run_and_the_cosine_follows_elapsed_time(tmp_path):
    clock = {"now": 1000.0}

    class TenSecondSteps(Engine):
        def train_step(self, step):
            out = super().train_step(step)
            clock["now"] += 10.0
            return out

    cfg = _config(tmp_path, max_steps=1000, time_budget_s=50.0, warmup_steps=1, min_lr=1e-3, log_interval=1,
                  eval_interval=1000, checkpoint_interval=1000)
    result = TenSecondSteps(Seq2SeqTask(cfg), clock=lambda: clock["now"], say=_quiet).run()
    assert (result.status, result.steps, result.stopped_by) == (Status.TIME_BUDGET, 5, "time budget")
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")["iteration"] == 5
    expected = [1e-3 + 0.5 * (1 + math.cos(math.pi * (s - 1) / 5)) * (1e-2 - 1e-3) for s in range(1, 6)]
    assert [r["lr"] for r in _train_records(tmp_path / "run")] == pytest.approx(expected)


def test_a_target_metric_ends_the_run_after_its_evaluation(tmp_path, capsys):
    result = train(_config(tmp_path, max_steps=300, eval_interval=20, target_exact_match=0.05), say=_quiet)
    evals = [r for r in read_jsonl(tmp_path / "run" / "log.jsonl") if "val_exact_match" in r]
    assert (result.status, result.stopped_by) == (Status.TARGET_REACHED, "target reached")
    assert result.steps == evals[-1]["step"] < 300 and evals[-1]["val_exact_match"] >= 0.05
    assert all(r["val_exact_match"] < 0.05 for r in evals[:-1])
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")["iteration"] == result.steps
    assert result.summary().startswith(f"target reached at step {result.steps}/300, ")
    assert result.status.finished and result.exit_status == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_gloo_processes_match_one_process_with_the_combined_batch(tmp_path):
    """Two processes x 2 micro-batches x 2 pairs = one process with 8 pairs: the same (token-weighted)
    losses, validation metrics and weights."""
    common = [*TINY_FLAGS, "--max-steps", "4", "--eval-interval", "4", "--checkpoint-interval", "4",
              "--log-interval", "1", "--eval-batches", "4", "--device", "cpu"]
    assert main(["seq2seq", "train", *common, "--batch-size", "8", "--out", str(tmp_path / "single")]) == 0
    port = str(_free_port())
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = [sys.executable, "-m", "seqlab", "seq2seq", "train", *common, "--batch-size", "2", "--grad-accum-steps",
            "2", "--out", str(tmp_path / "ddp")]
    workers = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)}) for rank in range(2)]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    for worker, (out, err) in zip(workers, outputs):
        assert worker.returncode == 0, out[-2000:] + err[-3000:]
        assert "completed at step 4/4" in out
    single, ddp = _train_records(tmp_path / "single"), _train_records(tmp_path / "ddp")
    assert [r["tokens"] for r in ddp] == [r["tokens"] for r in single]
    assert [r["train_loss"] for r in ddp] == pytest.approx([r["train_loss"] for r in single], rel=1e-5)
    evals = [[r for r in read_jsonl(tmp_path / n / "log.jsonl") if "val_loss" in r][0] for n in ("single", "ddp")]
    for key in ("val_loss", "val_exact_match", "val_token_accuracy"):
        assert evals[1][key] == pytest.approx(evals[0][key], rel=1e-5)
    a = read_checkpoint(tmp_path / "single" / "checkpoints" / "latest.pt")
    b = read_checkpoint(tmp_path / "ddp" / "checkpoints" / "latest.pt")
    assert (b["extra"]["world_size"], b["extra"]["global_batch"]) == (2, 8)
    for key, tensor in a["model"].items():
        torch.testing.assert_close(b["model"][key], tensor, rtol=1e-4, atol=1e-5)
