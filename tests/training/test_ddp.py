"""Data parallelism: 2 CPU processes on gloo (via torchrun) equal one process on the combined batch."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
import torch

from seqlab.lm.settings import config_from_argv
from seqlab.lm.task import train
from seqlab.runs.checkpoint import load_model_from_checkpoint, read_checkpoint
from seqlab.runs.log import read_jsonl

COMMON = ["--context-length", "16", "--d-model", "32", "--num-layers", "2", "--num-heads", "2",
          "--max-steps", "4", "--warmup-steps", "1", "--lr", "0.01", "--eval-interval", "4",
          "--eval-batches", "2", "--checkpoint-interval", "4", "--log-interval", "1", "--threads", "1",
          "--no-progress"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launch_two_processes(byte_data, out_dir, *, torchrun: bool) -> list[subprocess.CompletedProcess]:
    """Two `seqlab train` processes on gloo: through torchrun, or with the environment torchrun sets."""
    args = ["-m", "seqlab", "train", "--data-dir", str(byte_data), "--out-dir", str(out_dir),
            "--batch-size", "2", "--grad-accum-steps", "2", "--device", "cpu", *COMMON]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    if torchrun:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args]
        return [subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)]
    port = str(_free_port())
    workers = [
        subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                              "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
        for rank in range(2)
    ]
    results = []
    for worker in workers:
        stdout, stderr = worker.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(worker.args, worker.returncode, stdout, stderr))
    return results


@pytest.mark.parametrize("torchrun", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["torchrun-env", "torchrun"])
def test_two_gloo_processes_match_one_process_with_the_combined_batch(byte_data, tmp_path, torchrun):
    # one process: 8 sequences per step; two processes x 2 micro-batches x 2 sequences = 8 per step
    single = train(config_from_argv(["--data-dir", str(byte_data), "--out-dir", str(tmp_path / "single"),
                                     "--batch-size", "8", *COMMON]))
    runs = _launch_two_processes(byte_data, tmp_path / "ddp", torchrun=torchrun)
    for done in runs:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    stdout = "".join(done.stdout for done in runs)
    assert stdout.count("completed at step 4/4") == 2  # both processes finished

    single_log, ddp_log = read_jsonl(tmp_path / "single" / "log.jsonl"), read_jsonl(tmp_path / "ddp" / "log.jsonl")
    losses = lambda log: [r["train_loss"] for r in log if "train_loss" in r]
    assert len(losses(ddp_log)) == 4
    assert losses(ddp_log) == pytest.approx(losses(single_log), rel=1e-5)
    val = lambda log: [r["val_loss"] for r in log if "val_loss" in r]
    assert val(ddp_log) == pytest.approx(val(single_log), rel=1e-5)
    a = read_checkpoint(tmp_path / "single" / "checkpoints" / "latest.pt")
    b = read_checkpoint(tmp_path / "ddp" / "checkpoints" / "latest.pt")
    assert b["extra"]["world_size"] == 2 and b["extra"]["global_batch"] == 8
    for key, tensor in a["model"].items():
        torch.testing.assert_close(b["model"][key], tensor, rtol=1e-4, atol=1e-5)
    # the DDP run's checkpoint has plain keys and loads into a plain model
    assert not any(key.startswith("module.") for key in b["model"])
    model, _ = load_model_from_checkpoint(tmp_path / "ddp" / "checkpoints" / "latest.pt")
    assert model.config.d_model == 32
    assert single.steps == 4
