"""Wall time of the README's laptop sweep: ``seqlab sweep --recipe lr`` on the built-in stories data
as ``seqlab demo`` prepares it.

    python benchmarks/sweep_lr.py [--data demo_out/data] [--work .bench_data/sweep_lr]

The command is read from README.md (the ``seqlab sweep --recipe lr`` line and its continuation
lines) and run as written, in WORK, where ``demo_out/data`` is the demo's data: the directory given
with --data, or else prepared here exactly as the demo's first two stages do (the built-in story
corpus at the demo's sizes, BPE, token files), which takes a few seconds. A sweep left in WORK by an
earlier run is deleted first. Prints the wall time, the load average before and after (the machine
may be shared), and one row per run: status, steps, final validation loss, wall time, tokens/s.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from seqlab.demo.pipeline import FULL  # noqa: E402
from seqlab.lm.data import prepare
from seqlab.lm.stories import write_demo_corpus


def readme_command(readme: Path = ROOT / "README.md") -> list[str]:
    """The README's ``seqlab sweep --recipe lr ...`` command (backslash continuations joined)."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("seqlab sweep --recipe lr"))
    text = ""
    for line in lines[start:]:
        text += line.split("#")[0].rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            break
    return shlex.split(text)


def demo_data(work: Path) -> Path:
    """WORK/demo_out/data as `seqlab demo` writes it (its corpus and BPE stages, seed 0)."""
    data = work / "demo_out" / "data"
    if (data / "meta.json").is_file():
        return data
    train_txt, valid_txt = write_demo_corpus(work / "demo_out" / "corpus", FULL.train_stories, FULL.valid_stories, 0)
    prepare(train_txt, valid_txt, FULL.vocab_size, data, workers=1, progress=False)
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="an existing demo_out/data (default: prepare it in WORK)")
    parser.add_argument("--work", type=Path, default=ROOT / ".bench_data" / "sweep_lr")
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.data:
        link = work / "demo_out" / "data"
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink() if link.is_symlink() else shutil.rmtree(link)
        link.symlink_to(args.data.resolve())
    else:
        demo_data(work)
    command = readme_command()
    out = work / command[command.index("--out") + 1]
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print("$ " + shlex.join(command), file=sys.stderr)
    load_before = os.getloadavg()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "seqlab", *command[1:]], cwd=work, env=env, check=True)
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()
    sweep = json.loads((out / "sweep.json").read_text())
    print(f"\n**{seconds:.0f} s wall** for {len(sweep['runs'])} runs ({os.cpu_count()} CPUs; load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after); best {sweep['best']}\n")
    print("| run | status | steps | final val loss | wall time (s) | tokens/s |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for run in sweep["runs"]:
        loss = "—" if run["final_val_loss"] is None else f"{run['final_val_loss']:.4f}"
        rate = "—" if run["tokens_per_second"] is None else f"{run['tokens_per_second']:,.0f}"
        print(f"| {run['name']} | {run['status']} | {run['steps']} | {loss} | {run['wall_time_s']:.1f} | {rate} |")
    print(f"\nfigures: {out / 'curves.png'}, {out / 'final.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
