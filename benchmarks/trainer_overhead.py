"""Trainer overhead vs the bare training step on CPU (goal: under 5% with evaluation amortized).

    python benchmarks/trainer_overhead.py [--steps 20] [--rounds 3] [--threads 1]

The *bare step* is forward, cross-entropy, backward, gradient clipping and AdamW on one batch
already in memory: the least any trainer must do. The *trainer step* is one iteration of
``seqlab train``'s loop for the default TrainConfig (sampling the batch from the memory-mapped
token file, the learning-rate schedule, the loss read-back and NaN check, the progress bar, the
JSONL log every ``log_interval`` steps). Evaluation (plus redrawing the loss curve) and checkpoints
happen every ``eval_interval`` / ``checkpoint_interval`` steps; they are timed once each and
amortized over those intervals. Bare and trainer rounds alternate, so a busy machine slows both
alike; the reported ratio is the median over rounds. Data: the built-in story corpus, BPE 1024.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from seqlab.lm.data import PreparedData, get_batch, prepare
from seqlab.lm.settings import TrainConfig
from seqlab.lm.stories import write_demo_corpus
from seqlab.lm.task import Trainer
from seqlab.model import TransformerLM
from seqlab.training import AdamW, clip_grad_norm, cross_entropy
from seqlab.training.plots import plot_loss_curve

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".bench_data" / "trainer_overhead"
# CPU time of this process: on a shared machine it barely moves when other jobs compete for the
# cores, unlike wall time. --clock wall switches to wall time.
CLOCK = time.process_time


def prepared_data() -> Path:
    data_dir = WORK / "data"
    if not (data_dir / "meta.json").is_file():
        train_txt, valid_txt = write_demo_corpus(WORK / "corpus", 6000, 400)
        prepare(train_txt, valid_txt, 1024, data_dir, progress=False, workers=1)
    return data_dir


def bare_step_times(config: TrainConfig, steps: int) -> list[float]:
    """Seconds per bare step (the batch is sampled once, outside the timing)."""
    data = PreparedData.open(config.data_dir)
    torch.manual_seed(config.seed)
    model = TransformerLM.from_config(config.model_config(data.vocab_size))
    params = list(model.parameters())
    optimizer = AdamW([{"params": [p for p in params if p.dim() >= 2]},
                       {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                      lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps,
                      weight_decay=config.weight_decay)
    x, y = get_batch(data.train, config.batch_size, config.context_length, "cpu")
    times = []
    for _ in range(steps + 1):
        started = CLOCK()
        loss = cross_entropy(model(x), y)
        loss.backward()
        clip_grad_norm(model.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(CLOCK() - started)
    return times[1:]  # the first step allocates the optimizer state


def trainer_step_times(config: TrainConfig, steps: int, run_dir: Path) -> tuple[list[float], Trainer]:
    """Seconds per iteration of the trainer's loop, between step callbacks (no eval/checkpoint inside)."""
    stamps: list[float] = []
    run_config = TrainConfig(**{**config.to_dict(), "out_dir": str(run_dir), "max_steps": steps + 2,
                                "eval_interval": 10**9, "checkpoint_interval": 10**9,
                                "overwrite": True})
    trainer = Trainer(run_config, step_callbacks=[lambda trainer, step: stamps.append(CLOCK())])
    trainer.run()  # the last step evaluates and saves; it is not among the timed intervals
    times = [b - a for a, b in zip(stamps[:-2], stamps[1:-1])]
    return times, trainer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="process CPU time (default; robust on a shared machine) or wall time")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter

    defaults = TrainConfig()
    config = TrainConfig(data_dir=str(prepared_data()), threads=args.threads, progress=True)
    torch.set_num_threads(args.threads)
    ratios, bare_all, loop_all = [], [], []
    trainer = None
    for round_index in range(args.rounds):
        bare = bare_step_times(config, args.steps)
        loop, trainer = trainer_step_times(config, args.steps, WORK / "run")
        torch.set_num_threads(args.threads)
        bare_all += bare
        loop_all += loop
        ratios.append(statistics.mean(loop) / statistics.mean(bare))
        print(f"round {round_index + 1}: bare {statistics.mean(bare) * 1000:.1f} ms/step, trainer loop "
              f"{statistics.mean(loop) * 1000:.1f} ms/step, ratio {ratios[-1]:.4f}", file=sys.stderr)

    # periodic work, timed once each on the last trainer
    started = CLOCK()
    trainer.evaluate()
    eval_seconds = CLOCK() - started
    started = CLOCK()
    plot_loss_curve(trainer_history(trainer), WORK / "plot_timing.png")
    plot_seconds = CLOCK() - started
    started = CLOCK()
    trainer.save(trainer.step)
    save_seconds = CLOCK() - started

    bare_step = statistics.mean(bare_all)
    loop_overhead = statistics.median(ratios) - 1
    eval_overhead = (eval_seconds + plot_seconds) / defaults.eval_interval / bare_step
    save_overhead = save_seconds / defaults.checkpoint_interval / bare_step
    total = loop_overhead + eval_overhead + save_overhead
    print(f"\nDefault TrainConfig: {config.num_layers} layers, d_model {config.d_model}, context "
          f"{config.context_length}, batch {config.batch_size}; {args.threads} thread(s); {args.clock} time; "
          f"{trainer.raw_model.num_parameters():,} parameters; {args.rounds} rounds x {args.steps} steps\n")
    print("| part | time | overhead vs bare step |")
    print("| --- | ---: | ---: |")
    print(f"| bare step (forward, loss, backward, clip, AdamW) | {bare_step * 1000:.1f} ms | - |")
    print(f"| trainer loop step (batch sampling, schedule, NaN check, bar, log) | "
          f"{statistics.mean(loop_all) * 1000:.1f} ms | {loop_overhead:+.2%} (median of rounds "
          f"{', '.join(f'{r - 1:+.2%}' for r in ratios)}) |")
    print(f"| evaluation ({defaults.eval_batches} batches) + loss-curve plot, every {defaults.eval_interval} "
          f"steps | {eval_seconds * 1000:.0f} + {plot_seconds * 1000:.0f} ms | {eval_overhead:+.2%} |")
    print(f"| checkpoint, every {defaults.checkpoint_interval} steps | {save_seconds * 1000:.0f} ms | "
          f"{save_overhead:+.2%} |")
    print(f"| **total** | | **{total:+.2%}** |")
    return 0


def trainer_history(trainer: Trainer) -> list[dict]:
    from seqlab.runs.log import read_jsonl

    return read_jsonl(trainer.run_dir / "log.jsonl")


if __name__ == "__main__":
    sys.exit(main())
