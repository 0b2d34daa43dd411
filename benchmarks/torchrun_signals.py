"""What Ctrl-C does to a ``torchrun`` launch: torchrun's grace period, and whether seqlab saves in it.

torchrun (torch.distributed.elastic) starts each worker in its own session, so a terminal's Ctrl-C
reaches torchrun only. torchrun then sends the same signal to every worker's process group, waits
``--shutdown-timeout`` seconds (default: TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30) and sends SIGKILL
to any worker still alive; a second signal to torchrun during that wait sends SIGTERM to the workers
and starts the wait again. This script measures that on 2 CPU processes (gloo):

1. the grace period: workers that ignore SIGINT and SIGTERM record when each signal arrived, and the
   script records when torchrun ended them (default, and ``--shutdown-timeout 5``);
2. ``seqlab train`` under torchrun: one SIGINT to torchrun after a few logged steps; the seconds until
   torchrun exits, the step of the checkpoint saved, and the last logged step;
3. the same with a second SIGINT 0.2 s after the first (the "quit now" signal).

Usage: python benchmarks/torchrun_signals.py [--skip-grace]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]

STUBBORN_WORKER = textwrap.dedent("""
    import os, signal, sys, time
    out = open(os.path.join(sys.argv[1], f"worker{os.environ['RANK']}.txt"), "w", buffering=1)
    def note(signum, frame):
        out.write(f"signal {signal.Signals(signum).name} {time.time():.3f}\\n")
    signal.signal(signal.SIGINT, note)
    signal.signal(signal.SIGTERM, note)
    out.write(f"pid {os.getpid()} {time.time():.3f}\\n")
    while True:
        time.sleep(0.01)
""")


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def measure_grace(work: Path, extra: list[str]) -> dict:
    """Seconds from SIGINT to torchrun until each signal reached the workers and until they were gone."""
    work.mkdir(parents=True)
    script = work / "stubborn.py"
    script.write_text(STUBBORN_WORKER)
    launcher = subprocess.Popen([*TORCHRUN, *extra, str(script), str(work)], env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    files = [work / "worker0.txt", work / "worker1.txt"]
    while not all(f.exists() and f.read_text() for f in files):
        time.sleep(0.05)
    pids = [int(f.read_text().split()[1]) for f in files]
    sent = time.time()
    launcher.send_signal(signal.SIGINT)
    gone: dict[int, float] = {}
    while len(gone) < len(pids):
        for pid in pids:
            if pid not in gone and not _alive(pid):
                gone[pid] = time.time()
        time.sleep(0.01)
    launcher.communicate(timeout=60)
    arrived = [float(line.split()[2]) for f in files for line in f.read_text().splitlines() if line.startswith("signal")]
    return {"forwarded_after_s": round(max(arrived) - sent, 3) if arrived else None,
            "killed_after_s": round(max(gone.values()) - sent, 2), "torchrun_status": launcher.returncode}


def _last_step(log: Path) -> int | None:
    steps = [json.loads(line)["step"] for line in log.read_text().splitlines() if '"train_loss"' in line] \
        if log.exists() else []
    return steps[-1] if steps else None


def measure_train(work: Path, data: Path, *, second_signal_after: float | None) -> dict:
    """One SIGINT (and optionally a second) to torchrun running ``seqlab train`` on 2 gloo processes."""
    out = work / "run"
    command = [*TORCHRUN, "-m", "seqlab", "train", "--data-dir", str(data), "--out", str(out), "--device", "cpu",
               "--context-length", "64", "--d-model", "64", "--num-layers", "2", "--num-heads", "4",
               "--batch-size", "8", "--max-steps", "100000", "--warmup-steps", "10", "--log-interval", "10",
               "--eval-interval", "1000", "--checkpoint-interval", "100000", "--threads", "1", "--no-progress"]
    launcher = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while (_last_step(out / "log.jsonl") or 0) < 50:
        if launcher.poll() is not None:
            raise RuntimeError(launcher.communicate()[1][-3000:])
        time.sleep(0.05)
    sent = time.time()
    launcher.send_signal(signal.SIGINT)
    if second_signal_after is not None:
        time.sleep(second_signal_after)
        launcher.send_signal(signal.SIGINT)
    stdout, stderr = launcher.communicate(timeout=120)
    took = time.time() - sent
    latest = out / "checkpoints" / "latest.pt"
    saved = None
    if latest.exists():
        import torch

        saved = torch.load(latest, map_location="cpu", weights_only=True)["iteration"]
    return {"torchrun_exit_s": round(took, 2), "torchrun_status": launcher.returncode,
            "saved_step": saved, "last_logged_step": _last_step(out / "log.jsonl"),
            "messages": [line for line in stderr.splitlines() if "Ctrl-C" in line or "SIGTERM" in line
                         and "seqlab" not in line][:4] + [line for line in stdout.splitlines() if "at step" in line][:2]}


def _byte_data(directory: Path) -> Path:
    """The built-in stories as UTF-8 bytes (vocabulary 256): train.npy, valid.npy, meta.json."""
    import numpy as np

    from seqlab.lm.stories import END_OF_TEXT, generate_stories

    directory.mkdir()
    for split, count, seed in (("train", 300, 0), ("valid", 40, 1)):
        ids = np.frombuffer(END_OF_TEXT.join(generate_stories(count, seed)).encode(), dtype=np.uint8)
        np.save(directory / f"{split}.npy", ids.astype(np.uint16))
    (directory / "meta.json").write_text(json.dumps({"vocab_size": 256, "dtype": "uint16"}))
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-grace", action="store_true", help="skip the grace-period runs (about 40 s)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.skip_grace:
            for name, extra in (("default", []), ("--shutdown-timeout 5", ["--shutdown-timeout", "5"])):
                print(f"grace period, {name}: {measure_grace(tmp / name.replace(' ', '_'), extra)}", flush=True)
        data = _byte_data(tmp / "data")
        for name, second in (("one SIGINT", None), ("two SIGINTs 0.2 s apart", 0.2)):
            print(f"seqlab train, {name}: {json.dumps(measure_train(tmp / name[:3], data, second_signal_after=second))}",
                  flush=True)


if __name__ == "__main__":
    main()
