"""Time `seqlab learn check NAME` of every exercise, the whole command as a student runs it (goal: under
2 s for a NumPy exercise, under 5 s for an LM component, on 2 cores), with the reference solution as
the student's file. The peer is the floor every check pays: two Python processes (the command and
the child that runs the student's code) that import numpy, or torch for the LM components.

    python benchmarks/learn.py [--repeats 3] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wall(command: list[str], env: dict, cwd: str, expect: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from seqlab.learn.catalog import NUMPY_NAMES, TORCH_NAMES
    from seqlab.learn.references import REFERENCE_MODULES

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    names = [n for n in (*NUMPY_NAMES, *TORCH_NAMES) if args.only in (None, n)]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as ws:
        floor = {}
        for kind, module in (("numpy", "numpy"), ("torch", "torch")):
            command = [sys.executable, "-c", f"import {module}"]
            floor[kind] = statistics.median(2 * wall(command, env, ws) for _ in range(args.repeats))
        print(f"floor (2 processes importing numpy): {floor['numpy']:.2f} s; importing torch: {floor['torch']:.2f} s")
        print(f"{'exercise':<30} {'kind':<6} {'median s':>9} {'goal s':>7} {'x floor':>8}")
        worst = {"numpy": 0.0, "torch": 0.0}
        for name in names:
            kind = "numpy" if name in NUMPY_NAMES else "torch"
            Path(ws, f"{name}.py").write_text(f"from {REFERENCE_MODULES[name]} import {name}\n")
            command = [sys.executable, "-m", "seqlab", "learn", "check", name, "--workspace", ws]
            seconds = statistics.median(wall(command, env, ws) for _ in range(args.repeats))
            goal = 2.0 if kind == "numpy" else 5.0
            worst[kind] = max(worst[kind], seconds)
            print(f"{name:<30} {kind:<6} {seconds:9.2f} {goal:7.1f} {seconds / floor[kind]:8.2f}"
                  + ("" if seconds < goal else "  OVER GOAL"))
        print(f"slowest NumPy exercise {worst['numpy']:.2f} s (goal 2 s); slowest LM component "
              f"{worst['torch']:.2f} s (goal 5 s); load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
