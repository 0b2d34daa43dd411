"""The training loop on the GPU path reads the loss and gradient norm from the device only on the
steps that need host values (log, eval, checkpoint, last step), never in between; a NaN found at
such a read stops the run without saving, naming the step and the steps read together; under DDP
the losses are averaged at the reads and a stop request is agreed on at the next read.

Counted on CPU tensors inside ``gpu_path_forced()``: an OpCounter sees ``.item()``, ``float(t)``,
``bool(t)`` (``aten._local_scalar_dense`` / ``aten.is_nonzero`` ...); ``Tensor.tolist`` and
``Tensor.numpy`` read a CPU tensor without any aten operation, so the test counts those calls too.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys

import pytest
import torch
from test_ddp import _free_port

from benchmarks.instruments.op_count import OpCounter
from seqlab.lm.settings import TrainConfig
from seqlab.lm.task import Trainer
from seqlab.model import gpu_path_forced
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.runs.log import read_jsonl
from seqlab.training.guards import NonFiniteLossError

TINY = dict(context_length=16, d_model=16, num_layers=1, num_heads=2, batch_size=4, threads=1,
            progress=False, eval_batches=1, warmup_steps=2, lr=1e-2)


def _config(data, out, **overrides) -> TrainConfig:
    return TrainConfig(data_dir=str(data), out_dir=str(out), **{**TINY, **overrides})


class HostReads(OpCounter):
    """OpCounter plus the host reads that bypass aten (``tolist``, ``numpy``), as one ``reads`` count."""

    def __init__(self, monkeypatch) -> None:
        super().__init__()
        self.direct = 0
        for name in ("tolist", "numpy"):
            original = getattr(torch.Tensor, name)

            def counted(tensor, *args, _original=original, **kwargs):
                self.direct += 1
                return _original(tensor, *args, **kwargs)

            monkeypatch.setattr(torch.Tensor, name, counted)

    @property
    def reads(self) -> int:
        return self.syncs + self.direct


def _reads_per_step(config: TrainConfig, monkeypatch, *, gpu_path: bool) -> dict[int, int]:
    """Host reads between the end of one step and the end of the next (callbacks run at the end)."""
    counts: dict[int, int] = {}
    counter = HostReads(monkeypatch)
    marks = []

    class Counted(Trainer):
        def _loop(self):
            marks.append(counter.reads)  # after the setup: the loop's reads only
            return super()._loop()

    def at_step(trainer, step):
        counts[step] = counter.reads - marks[-1]
        marks.append(counter.reads)

    with gpu_path_forced() if gpu_path else contextlib.nullcontext(), counter:
        result = Counted(config, step_callbacks=[at_step]).run()
    assert result.status == "completed"
    return counts


def test_the_gpu_path_reads_the_device_only_on_log_eval_checkpoint_and_last_steps(byte_data, tmp_path,
                                                                                  monkeypatch):
    config = _config(byte_data, tmp_path / "gpu", max_steps=7, log_interval=3, eval_interval=100,
                     checkpoint_interval=100)
    counts = _reads_per_step(config, monkeypatch, gpu_path=True)
    assert set(counts) == set(range(1, 8))
    # steps 1, 2, 4, 5: no host read at all
    assert [counts[s] for s in (1, 2, 4, 5)] == [0, 0, 0, 0], counts
    # step 3 and 6 (log): one read of the losses and norms; step 7 (last): that read, the evaluation
    # and the save's finite-weights check, a handful in all
    assert counts[3] == counts[6] == 1, counts
    assert 1 <= counts[7] <= 8, counts
    # the log still holds the mean loss of each interval, for steps 3, 6 and 7
    records = [r for r in read_jsonl(tmp_path / "gpu" / "log.jsonl") if "train_loss" in r]
    assert [r["step"] for r in records] == [3, 6, 7]
    assert all(math.isfinite(r["train_loss"]) and math.isfinite(r["grad_norm"]) for r in records)


def test_the_gpu_path_logs_the_same_numbers_as_the_cpu_path(byte_data, tmp_path, monkeypatch):
    settings = dict(max_steps=7, log_interval=3, eval_interval=4, checkpoint_interval=5)
    cpu = _reads_per_step(_config(byte_data, tmp_path / "cpu", **settings), monkeypatch, gpu_path=False)
    gpu = _reads_per_step(_config(byte_data, tmp_path / "gpu", **settings), monkeypatch, gpu_path=True)
    assert all(cpu[s] >= 1 for s in cpu), cpu  # the CPU path reads every step, as before
    assert gpu[1] == gpu[2] == 0 and gpu[4] >= 1 and gpu[5] >= 1, gpu  # eval and checkpoint steps read
    fields = ("step", "train_loss", "lr", "grad_norm", "tokens")
    logs = [[{k: r[k] for k in fields} for r in read_jsonl(tmp_path / name / "log.jsonl") if "train_loss" in r]
            for name in ("cpu", "gpu")]
    assert [r["step"] for r in logs[0]] == [3, 6, 7]
    for a, b in zip(*logs):
        assert b == pytest.approx(a, rel=1e-4)
    vals = [[r["val_loss"] for r in read_jsonl(tmp_path / n / "log.jsonl") if "val_loss" in r] for n in ("cpu", "gpu")]
    assert len(vals[0]) == 2 and vals[1] == pytest.approx(vals[0], rel=1e-4)


def test_a_nan_gradient_on_the_gpu_path_stops_at_the_next_read_without_saving_it(byte_data, tmp_path,
                                                                                poison_gradient):
    calls = poison_gradient(4)  # step 4: one gradient entry overflows; the loss stays finite
    run = tmp_path / "run"
    config = _config(byte_data, run, max_steps=20, log_interval=3, eval_interval=100, checkpoint_interval=3)
    with gpu_path_forced(), pytest.raises(NonFiniteLossError) as caught:
        Trainer(config).run()
    message = str(caught.value)
    assert message.startswith("step 4: the gradient norm is nan (the loss ")
    assert "steps 4 to 6 were read together at step 6" in message
    assert "latest.pt (step 3)" in message
    assert calls["n"] == 6  # it ran on to the next read step (6), not further
    # the weights after step 4 are NaN; step 6's checkpoint was never written
    assert sorted(os.listdir(run / "checkpoints")) == ["latest.pt", "step_0000003.pt"]
    payload = read_checkpoint(run / "checkpoints" / "latest.pt")
    assert payload["iteration"] == 3 and all(torch.isfinite(t).all() for t in payload["model"].values())
    assert [r["step"] for r in read_jsonl(run / "log.jsonl") if "train_loss" in r] == [3]


def test_a_stop_request_on_the_gpu_path_reads_and_checks_before_saving(byte_data, tmp_path, poison_gradient):
    poison_gradient(4)

    def stop_at_5(trainer, step):
        if step == 5:
            trainer.request_stop("test")

    run = tmp_path / "run"
    config = _config(byte_data, run, max_steps=20, log_interval=10, eval_interval=100, checkpoint_interval=100)
    with gpu_path_forced(), pytest.raises(NonFiniteLossError, match=r"step 4: .*steps 1 to 5 were read together "
                                                                    r"at step 5.*no checkpoint was saved yet"):
        Trainer(config, step_callbacks=[stop_at_5]).run()
    assert not (run / "checkpoints" / "latest.pt").exists()


DDP_WORKER = """
import json, sys
from seqlab.model import gpu_path_forced
from seqlab.lm.settings import config_from_argv
from seqlab.lm.task import Trainer

def stop_on_rank_1_at_step_3(trainer, step):
    if step == 3 and trainer.dist.rank == 1:
        trainer.request_stop("asked on rank 1")

with gpu_path_forced():
    result = Trainer(config_from_argv(sys.argv[1:]), step_callbacks=[stop_on_rank_1_at_step_3]).run()
print(json.dumps({"status": result.status, "steps": result.steps}))
"""


def test_ddp_on_the_gpu_path_averages_losses_at_reads_and_agrees_on_a_stop_at_the_next_one(byte_data, tmp_path):
    """Two gloo processes on the forced GPU path: the logged losses equal one process with the combined
    batch; a stop asked on one process at step 3 (not a read step) stops both at step 4 (log step)."""
    flags = ["--context-length", "16", "--d-model", "16", "--num-layers", "1", "--num-heads", "2",
             "--max-steps", "10", "--warmup-steps", "1", "--lr", "0.01", "--eval-interval", "100",
             "--eval-batches", "1", "--checkpoint-interval", "100", "--log-interval", "2", "--threads", "1",
             "--no-progress", "--data-dir", str(byte_data)]
    port = str(_free_port())
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    workers = [subprocess.Popen([sys.executable, "-c", DDP_WORKER, *flags, "--out-dir", str(tmp_path / "ddp"),
                                 "--batch-size", "2", "--device", "cpu"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)}) for rank in range(2)]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    for worker, (out, err) in zip(workers, outputs):
        assert worker.returncode == 0, out[-2000:] + err[-3000:]
        assert json.loads(out.strip().splitlines()[-1]) == {"status": "interrupted", "steps": 4}
    assert read_checkpoint(tmp_path / "ddp" / "checkpoints" / "latest.pt")["iteration"] == 4
    # one process, the combined batch of 4, the same 10-step schedule, stopped after step 4
    single = _config(byte_data, tmp_path / "single", max_steps=10, log_interval=2, eval_interval=100,
                     checkpoint_interval=100, warmup_steps=1, batch_size=4)
    Trainer(single, step_callbacks=[lambda trainer, step: step == 4 and trainer.request_stop()]).run()
    losses = [[r["train_loss"] for r in read_jsonl(tmp_path / name / "log.jsonl") if "train_loss" in r]
              for name in ("ddp", "single")]
    assert len(losses[0]) == 2 and losses[0] == pytest.approx(losses[1], rel=1e-5)
