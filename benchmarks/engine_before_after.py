"""Is training on the one engine (issue 17) slower than the two loops it replaced? Before and after,
side by side: the same settings run in this checkout and in a copy of an earlier commit.

    python benchmarks/engine_before_after.py                         # vs 4ba7bcb (before the engine)
    python benchmarks/engine_before_after.py --ref main --rounds 5 --steps 40
    python benchmarks/engine_before_after.py --dates                 # + the full `dates` to 99% run, both

Measured per tree, in a fresh process each time (rounds alternate before / after, so a busy machine
slows both alike):

* ``seqlab train`` step: one iteration of the loop for the default ``TrainConfig`` (4 layers, d_model
  128, context 128, batch 32) on the built-in story corpus (BPE 1024), between step callbacks; no
  evaluation or checkpoint inside the timed steps.
* seq2seq step: one iteration for the ``dates`` benchmark settings (Transformer, d_model 64, 2+2
  layers, batch 64, 20,000 pairs).
* ``--dates``: each tree's own ``benchmarks/seq2seq_dates.py --json`` (train until 99% validation
  exact match, then 1,000 fresh dates): steps, training wall time and CPU time.
* ``--campaigns``: the two experiments of many runs, whole commands in a fresh process each:
  ``seqlab paths --fast`` and the README's ``seqlab sweep --recipe lr`` (20 steps a run); wall time
  and the children's CPU time.

Times are process CPU time (``--clock cpu``, the default: other jobs on shared cores barely move it)
or wall time; the first two steps of each process (allocation) are left out. The earlier tree is
exported with ``git archive`` into a temporary folder (the repository is not touched).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".bench_data" / "engine_before_after"

CHILD = r"""
import json, sys, tempfile, time
import torch
kind, steps, threads, clock_name, data_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
clock = time.process_time if clock_name == "cpu" else time.perf_counter
torch.set_num_threads(threads)
stamps = []
callback = lambda trainer, step: stamps.append(clock())
out = tempfile.mkdtemp(prefix="engine-bench-")
if kind == "lm":
    try:
        from seqlab.lm import TrainConfig, Trainer        # the language model's face
    except ImportError:                                 # trees from before seqlab.lm
        from seqlab.training import TrainConfig, Trainer
    config = TrainConfig(data_dir=data_dir, out_dir=out, max_steps=steps + 3, eval_interval=10**9,
                         checkpoint_interval=10**9, threads=threads, progress=False, overwrite=True)
    Trainer(config, step_callbacks=[callback]).run()
else:
    common = dict(out_dir=out, task="dates", arch="transformer", d_model=64, num_heads=4, batch_size=64, lr=3e-3,
                  warmup_steps=100, eval_interval=10**9, checkpoint_interval=10**9, threads=threads, device="cpu",
                  progress=False, overwrite=True)
    try:
        from seqlab.seq2seq import Seq2SeqTrainConfig       # the face: the same in every tree
        from seqlab.seq2seq.task import train
        config = Seq2SeqTrainConfig(num_layers=2, max_steps=steps + 3, **common)
        train(config, step_callbacks=[callback], say=lambda message: None)
    except ImportError:  # before the engine: seqlab.seq2seq.train held the loop
        from seqlab.seq2seq.train import Seq2SeqTrainConfig, train
        config = Seq2SeqTrainConfig(layers=2, steps=steps + 3, **common)
        train(config, step_callbacks=[callback], log=lambda message: None)
times = [b - a for a, b in zip(stamps[:-1], stamps[1:])][2:]   # allocation steps left out
print("TIMES " + json.dumps(times))
"""


def export_tree(ref: str, into: Path) -> Path:
    """The files of commit ``ref`` under ``into`` (git archive | tar)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "seqlab", "benchmarks"], check=True,
                             capture_output=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def prepared_data() -> Path:
    data_dir = WORK / "data"
    if not (data_dir / "meta.json").is_file():
        sys.path.insert(0, str(ROOT))
        from seqlab.lm.data import prepare
        from seqlab.lm.stories import write_demo_corpus

        train_txt, valid_txt = write_demo_corpus(WORK / "corpus", 6000, 400)
        prepare(train_txt, valid_txt, 1024, data_dir, progress=False, workers=1)
    return data_dir


def step_times(tree: Path, kind: str, steps: int, threads: int, clock: str, data_dir: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(steps), str(threads), clock, str(data_dir)],
                          env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise RuntimeError(f"{kind} in {tree} failed:\n{done.stderr[-3000:]}")
    line = [text for text in done.stdout.splitlines() if text.startswith("TIMES ")][-1]
    return json.loads(line[len("TIMES "):])


def dates_run(tree: Path, threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(tree / "benchmarks" / "seq2seq_dates.py"), "--threads", str(threads),
                           "--json"], env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if not done.stdout.strip():
        raise RuntimeError(f"dates in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="4ba7bcb", help="the commit to compare with (default: before the engine)")
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree and kind, alternating")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per process")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--kinds", default="lm,seq2seq", help="comma list from lm, seq2seq")
    parser.add_argument("--dates", action="store_true", help="also run both trees' seq2seq_dates.py (minutes)")
    parser.add_argument("--campaigns", action="store_true", help="also time `seqlab paths --fast` and the README's "
                        "`seqlab sweep --recipe lr` in both trees (minutes)")
    args = parser.parse_args(argv)
    data_dir = prepared_data()
    with tempfile.TemporaryDirectory(prefix="engine-before-") as tmp:
        trees = {"before": export_tree(args.ref, Path(tmp) / "before"), "after": ROOT}
        print(f"before: {args.ref}; after: {ROOT} (working tree); {args.threads} thread(s), {args.clock} time, "
              f"{args.rounds} rounds x {args.steps} steps; load average {os.getloadavg()[0]:.2f}\n")
        print("| step | before (ms, median) | after (ms, median) | after / before | rounds (after/before) |")
        print("| --- | ---: | ---: | ---: | --- |")
        for kind in filter(None, args.kinds.split(",")):
            times = {"before": [], "after": []}
            ratios = []
            for round_index in range(args.rounds):
                order = ("before", "after") if round_index % 2 == 0 else ("after", "before")
                medians = {}
                for name in order:
                    sample = step_times(trees[name], kind, args.steps, args.threads, args.clock, data_dir)
                    times[name] += sample
                    medians[name] = statistics.median(sample)
                ratios.append(medians["after"] / medians["before"])
            before, after = statistics.median(times["before"]), statistics.median(times["after"])
            label = "`seqlab train` (default TrainConfig)" if kind == "lm" else "`seqlab seq2seq train` (dates settings)"
            print(f"| {label} | {before * 1000:.1f} | {after * 1000:.1f} | {after / before:.3f} | "
                  f"{', '.join(f'{r:.3f}' for r in ratios)} |")
        if args.dates:
            print("\n| dates to 99% | steps | training wall s | process CPU s | fresh-dates exact match |")
            print("| --- | ---: | ---: | ---: | ---: |")
            for name in ("before", "after"):
                numbers = dates_run(trees[name], args.threads)
                print(f"| {name} | {numbers['steps']} | {numbers['train_wall_seconds']} | "
                      f"{numbers['process_cpu_seconds']} | {numbers['test_exact_match']:.2%} |", flush=True)
        if args.campaigns:
            print("\n| command | before wall s | after wall s | before CPU s | after CPU s | after / before (CPU) |")
            print("| --- | ---: | ---: | ---: | ---: | ---: |")
            for label, argv in campaign_commands(data_dir, args.threads):
                numbers = {name: campaign_run(trees[name], argv) for name in ("before", "after")}
                (bw, bc), (aw, ac) = numbers["before"], numbers["after"]
                print(f"| `{label}` | {bw:.1f} | {aw:.1f} | {bc:.1f} | {ac:.1f} | {ac / bc:.3f} |", flush=True)
    return 0


def campaign_commands(data_dir: Path, threads: int) -> list[tuple[str, list[str]]]:
    sweep = ["sweep", "--recipe", "lr", "--data-dir", str(data_dir), "--context-length", "64", "--d-model", "64",
             "--num-layers", "2", "--num-heads", "4", "--batch-size", "16", "--max-steps", "20", "--warmup-steps",
             "4", "--eval-interval", "10", "--eval-batches", "4", "--threads", str(threads)]
    return [("seqlab paths --fast", ["paths", "--fast"]), ("seqlab sweep --recipe lr (20 steps a run)", sweep)]


def campaign_run(tree: Path, argv: list[str]) -> tuple[float, float]:
    """(wall seconds, children's CPU seconds) of ``python -m seqlab ARGV --out NEW`` with ``tree``'s seqlab."""
    import resource
    import time

    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory(prefix="campaign-") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "seqlab", *argv, "--out", str(Path(out) / "x")], env=env,
                              capture_output=True, text=True, cwd=tempfile.gettempdir())
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} in {tree} failed:\n{done.stderr[-3000:]}")
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


if __name__ == "__main__":
    sys.exit(main())
