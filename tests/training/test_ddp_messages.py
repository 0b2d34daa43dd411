"""Several processes (gloo on CPU), what the user reads: an error every process meets is printed once,
by the main process; Ctrl-C, which torchrun forwards to every worker as SIGINT, saves one checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from test_ddp import COMMON, _free_port, _launch_two_processes

from seqlab.lm.settings import config_from_argv
from seqlab.lm.task import train
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.runs.log import read_jsonl
from tests.conftest import held, wait_for_hold

REPO = Path(__file__).resolve().parents[2]
EXISTING = "already holds a language-model run"


def _existing_run(byte_data, out_dir):
    train(config_from_argv(["--data-dir", str(byte_data), "--out-dir", str(out_dir), "--batch-size", "4", *COMMON]))
    return read_checkpoint(out_dir / "checkpoints" / "latest.pt")["iteration"]


def test_two_processes_meeting_an_existing_run_print_one_message(byte_data, tmp_path):
    assert _existing_run(byte_data, tmp_path / "run") == 4
    rank0, rank1 = _launch_two_processes(byte_data, tmp_path / "run", torchrun=False)
    assert (rank0.returncode, rank1.returncode) == (1, 1)  # the same status on every process
    assert rank0.stderr.count(EXISTING) == 1 and rank0.stderr.startswith("error: "), rank0.stderr
    assert rank1.stderr == "" and rank1.stdout == ""  # quiet: no second message, no traceback
    assert read_checkpoint(tmp_path / "run" / "checkpoints" / "latest.pt")["iteration"] == 4  # untouched


@pytest.mark.slow
def test_torchrun_meeting_an_existing_run_prints_one_message(byte_data, tmp_path):
    _existing_run(byte_data, tmp_path / "run")
    (done,) = _launch_two_processes(byte_data, tmp_path / "run", torchrun=True)
    assert done.returncode == 1
    output = done.stdout + done.stderr
    assert output.count(EXISTING) == 1, output  # torchrun's own failure report follows it


def _lines(path) -> list[dict]:
    return read_jsonl(path) if path.exists() else []


def test_sigint_to_every_worker_saves_once_and_exits_130(byte_data, tmp_path):
    """What torchrun does on Ctrl-C: SIGINT to each worker (its own process group); every worker
    finishes the step it is in, the main one saves, and all exit 130 (torchrun's 30 s grace period
    before SIGKILL is then never reached: no worker waits on another). Each worker is held in step 3
    (tests/hold.py) until the signal has reached it, so both stop at that step."""
    out = tmp_path / "ddp"
    args = ["seqlab", "train", "--data-dir", str(byte_data), "--out-dir", str(out), "--batch-size", "2",
            "--device", "cpu", *COMMON, "--max-steps", "100000", "--checkpoint-interval", "100000"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()), "PYTHONPATH": str(REPO)}
    markers = [tmp_path / f"held{rank}" for rank in range(2)]
    workers = [subprocess.Popen(held(markers[rank], "ddp", 3) + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)}) for rank in range(2)]
    try:
        for worker, marker in zip(workers, markers):
            wait_for_hold(worker, marker)
        for worker in workers:
            worker.send_signal(signal.SIGINT)
        results = [worker.communicate(timeout=60) for worker in workers]  # a hang guard
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert [w.returncode for w in workers] == [130, 130], results
    (out0, err0), (out1, err1) = results
    assert err0.count("interrupted (Ctrl-C): saved") == 1 and "interrupted" not in err1 and "Traceback" not in err1
    saved = read_checkpoint(out / "checkpoints" / "latest.pt")
    last_logged = [r["step"] for r in read_jsonl(out / "log.jsonl") if "train_loss" in r][-1]
    assert saved["iteration"] == last_logged == 3  # the step each worker was in when the signal came
    assert "at step 3" in err0
