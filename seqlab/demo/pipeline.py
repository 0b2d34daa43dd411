"""The demo (``seqlab demo``): the whole pipeline on built-in data, offline, in a few minutes on 2 CPU cores.

corpus (seeded story grammar) -> BPE tokenizer -> token files -> a small Transformer trained for a
time budget -> validation loss -> a sampled story -> OUT/report.md with the loss curve.

The number of steps is chosen by timing a few training steps first, so the run takes about the
requested minutes on whatever machine it runs on (the cosine schedule still ends at the last step).
"""

from __future__ import annotations

import math
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from seqlab.atomic import atomic_write_text
from seqlab.inference.generate import generate
from seqlab.inference.loading import load_model_from_checkpoint
from seqlab.tokenizer import Tokenizer
from seqlab.training.config import TrainConfig
from seqlab.training.data import prepare
from seqlab.training.stories import write_demo_corpus
from seqlab.training.trainer import Trainer, TrainResult, train


@dataclass(frozen=True)
class DemoPlan:
    train_stories: int
    valid_stories: int
    vocab_size: int
    context_length: int
    d_model: int
    num_layers: int
    num_heads: int
    batch_size: int
    lr: float
    eval_batches: int
    min_steps: int
    max_steps: int
    sample_tokens: int


FULL = DemoPlan(train_stories=6000, valid_stories=400, vocab_size=1024, context_length=128, d_model=128,
                num_layers=4, num_heads=4, batch_size=16, lr=3e-3, eval_batches=10, min_steps=60,
                max_steps=4000, sample_tokens=200)
FAST = DemoPlan(train_stories=300, valid_stories=40, vocab_size=300, context_length=32, d_model=32,
                num_layers=2, num_heads=2, batch_size=8, lr=1e-2, eval_batches=2, min_steps=40,
                max_steps=40, sample_tokens=30)
PROMPT = "Once upon a time"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def time_steps(config: TrainConfig, threads: int, num_steps: int = 4) -> float:
    """Median seconds per training step of ``config`` using ``threads`` CPU threads."""
    probe = Trainer(TrainConfig(**{**config.to_dict(), "max_steps": 10, "progress": False, "threads": threads}))
    probe._setup()
    times = []
    for step in range(num_steps):
        started = time.perf_counter()
        probe.train_step(step)
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:])  # the first step pays one-off allocation costs


def calibrate_steps(config: TrainConfig, seconds: float, plan: DemoPlan) -> tuple[int, float, int]:
    """(steps that fit in ``seconds``, seconds per step, CPU threads to use).

    Both one thread and torch's default are timed: on a busy machine a single thread can be
    several times faster than threads that wait for each other.
    """
    candidates = sorted({1, torch.get_num_threads()})
    timings = {threads: time_steps(config, threads) for threads in candidates}
    threads = min(timings, key=timings.get)
    step_time = timings[threads]
    # leave room for evaluations, checkpoints and plots (about a tenth of the budget)
    steps = int(0.9 * seconds / step_time)
    return max(plan.min_steps, min(plan.max_steps, steps)), step_time, threads


def run_demo(out: str | Path = "demo_out", *, minutes: float = 2.0, fast: bool = False, seed: int = 0,
             progress: bool = True) -> Path:
    """Run the demo into ``out`` and return the path of report.md."""
    plan = FAST if fast else FULL
    out = Path(out)
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    _say(f"[1/5] writing the built-in story corpus ({plan.train_stories} + {plan.valid_stories} stories)")
    train_txt, valid_txt = write_demo_corpus(out / "corpus", plan.train_stories, plan.valid_stories, seed)

    _say(f"[2/5] training a BPE tokenizer (vocab {plan.vocab_size}) and encoding both splits")
    data_dir = out / "data"
    meta = prepare(train_txt, valid_txt, plan.vocab_size, data_dir, workers=1, progress=False)

    run_dir = out / "run"
    shutil.rmtree(run_dir, ignore_errors=True)  # a demo always starts fresh
    config = TrainConfig(
        data_dir=str(data_dir), out_dir=str(run_dir), seed=seed, context_length=plan.context_length,
        d_model=plan.d_model, num_layers=plan.num_layers, num_heads=plan.num_heads,
        batch_size=plan.batch_size, lr=plan.lr, max_steps=plan.max_steps, eval_batches=plan.eval_batches,
        device="cpu", progress=progress,
    )
    if fast:
        steps, step_time, threads = plan.max_steps, float("nan"), 1
    else:
        steps, step_time, threads = calibrate_steps(config, minutes * 60, plan)
    config = TrainConfig(**{**config.to_dict(), "max_steps": steps, "warmup_steps": max(1, steps // 20),
                            "threads": threads,
                            "eval_interval": max(1, steps // 10), "checkpoint_interval": max(1, steps // 2),
                            "log_interval": max(1, steps // 100)})
    timing = "" if fast else f" (~{step_time * 1000:.0f} ms/step measured, {threads} CPU thread(s))"
    _say(f"[3/5] training {steps} steps{timing}")
    result = train(config)

    _say("[4/5] evaluating and sampling a story")
    model, _payload = load_model_from_checkpoint(run_dir / "checkpoints" / "latest.pt")
    tokenizer = Tokenizer.load(run_dir / "tokenizer")
    prompt_ids = tokenizer.encode(PROMPT)
    new_ids = generate(model, prompt_ids, plan.sample_tokens, temperature=0.8, top_p=0.95,
                       eos_id=tokenizer.eot_id, seed=seed)
    if new_ids and new_ids[-1] == tokenizer.eot_id:
        new_ids = new_ids[:-1]
    sample = PROMPT + tokenizer.decode(new_ids)

    _say("[5/5] writing the report")
    report = write_report(out, config=config, result=result, meta=meta, sample=sample,
                          parameters=model.num_parameters(), total_seconds=time.perf_counter() - started)
    _say(sample)
    return report


def write_report(out: Path, *, config: TrainConfig, result: TrainResult, meta: dict, sample: str, parameters: int,
                 total_seconds: float) -> Path:
    """Write OUT/report.md (loss curve, losses, throughput, the sample) and return its path."""
    run_dir = Path(config.out_dir)
    val_loss = result.val_loss if result.val_loss is not None else float("nan")
    train_loss = result.train_loss if result.train_loss is not None else float("nan")
    quoted = "\n".join(f"> {line}" if line else ">" for line in sample.splitlines())
    splits = meta["splits"]
    lines = [
        "# seqlab demo report",
        "",
        f"A {parameters:,}-parameter Transformer LM ({config.num_layers} layers, d_model {config.d_model}, "
        f"{config.num_heads} heads, context {config.context_length}) trained from scratch on the built-in "
        f"story corpus with a {meta['vocab_size']}-token BPE vocabulary.",
        "",
        f"![loss curve]({(run_dir / 'loss_curve.png').relative_to(out).as_posix()})",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| training steps | {result.steps} ({result.tokens_seen:,} tokens, batch {config.batch_size} x "
        f"{config.context_length}) |",
        f"| final train loss | {train_loss:.4f} |",
        f"| final validation loss | {val_loss:.4f} (perplexity {math.exp(val_loss):.2f}) |",
        f"| uniform-guess loss | {math.log(meta['vocab_size']):.4f} (ln of the vocabulary size) |",
        f"| training throughput | {result.tokens_per_second:,.0f} tokens/s |",
        f"| training time | {result.elapsed:.1f} s |",
        f"| whole demo | {total_seconds:.1f} s |",
        f"| corpus | {splits['train']['tokens']:,} train / {splits['valid']['tokens']:,} validation tokens, "
        f"{splits['train']['bytes_per_token']} bytes/token |",
        "",
        f"## Sample (prompt \"{PROMPT}\", temperature 0.8, top-p 0.95)",
        "",
        quoted,
        "",
        "## Files",
        "",
        f"- run directory: `{run_dir.relative_to(out).as_posix()}/` (config.json, checkpoints/, log.jsonl, "
        "loss_curve.png, tokenizer/)",
        f"- prepared data: `data/`; corpus: `corpus/`",
        f"- more samples: `seqlab generate --run {run_dir.as_posix()} --prompt \"{PROMPT}\"`",
        "",
    ]
    report = out / "report.md"
    atomic_write_text(report, "\n".join(lines))
    return report
