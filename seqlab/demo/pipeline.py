"""The demo (``seqlab demo``): the whole pipeline on built-in data, offline, in two minutes (``--minutes``).

corpus (seeded story grammar) -> BPE tokenizer -> token files -> a small Transformer trained until
the time budget is spent -> validation loss -> a sampled story -> OUT/report.md with the loss curve.

``minutes`` is the length of the whole demo, on any machine: training gets what the other stages
leave of it (``time_budget_s`` of the training config, with the cosine following elapsed time), so
a busy machine trains fewer steps instead of running longer. OUT is built beside its final place
and swapped in whole; an existing OUT is replaced only with ``overwrite``.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from seqlab.atomic import atomic_write_text
from seqlab.inference.generate import generate
from seqlab.lm.data import prepare
from seqlab.lm.settings import TrainConfig
from seqlab.lm.stories import write_demo_corpus
from seqlab.lm.task import Trainer, train
from seqlab.runs.checkpoint import load_model_from_checkpoint
from seqlab.runs.config import read_run_config, write_run_config
from seqlab.tokenizer import Tokenizer
from seqlab.training.result import TrainResult

# what OUT holds; with overwrite, an OUT holding anything else is refused (it might be a working folder)
DEMO_FILES = frozenset({"corpus", "data", "run", "report.md"})
DEFAULT_MINUTES = 2.0
MIN_TRAINING_SHARE = 0.25  # training never gets less than this share of the budget


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
    warmup_steps: int
    max_steps: int       # a cap; the full demo stops when its time is spent
    sample_tokens: int
    reserve_s: float     # seconds kept for the last evaluation, the sample and the report


FULL = DemoPlan(train_stories=6000, valid_stories=400, vocab_size=1024, context_length=128, d_model=128,
                num_layers=4, num_heads=4, batch_size=16, lr=3e-3, eval_batches=10, warmup_steps=50,
                max_steps=100_000, sample_tokens=200, reserve_s=10.0)
FAST = DemoPlan(train_stories=300, valid_stories=40, vocab_size=300, context_length=32, d_model=32,
                num_layers=2, num_heads=2, batch_size=8, lr=1e-2, eval_batches=2, warmup_steps=2,
                max_steps=40, sample_tokens=30, reserve_s=0.0)
PROMPT = "Once upon a time"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def time_steps(config: TrainConfig, num_steps: int = 3) -> float:
    """Median seconds per training step of ``config`` (the first step, which allocates, is left out)."""
    probe = Trainer(TrainConfig(**{**config.to_dict(), "max_steps": 10, "progress": False, "time_budget_s": None}))
    probe.prepare()
    times = []
    try:
        for step in range(num_steps):
            started = time.perf_counter()
            probe.train_step(step)
            times.append(time.perf_counter() - started)
    finally:
        probe.close()  # the run directory's lock: the real run takes it next
    return statistics.median(times[1:])


def choose_threads() -> int:
    """CPU threads to train with: one on a machine already busier than its cores (threads that wait
    for each other there can be several times slower than one), else torch's default."""
    try:
        busy = os.getloadavg()[0] >= (os.cpu_count() or 1)
    except OSError:  # no load average on this system
        busy = False
    return 1 if busy else torch.get_num_threads()


def run_demo(out: str | Path = "demo_out", *, minutes: float = DEFAULT_MINUTES, fast: bool = False, seed: int = 0,
             progress: bool = True, overwrite: bool = False) -> Path:
    """Run the demo into ``out`` and return the path of report.md. ``out`` follows :mod:`seqlab.outdir`'s
    rule: new, empty, an earlier demo (replaced whole), or anything with ``overwrite``."""
    from seqlab.outdir import holds_only, output_folder

    out = Path(out)
    recognise = holds_only(DEMO_FILES, ["report.md", "run"])  # a demo from before the marker
    with output_folder(out, "seqlab demo", overwrite=overwrite, recognise=recognise, flag="--out") as building:
        _build(building, out, minutes=minutes, fast=fast, seed=seed, progress=progress)
    report = out / "report.md"
    _say(f"wrote {report}")
    return report


def _build(work: Path, out: Path, *, minutes: float, fast: bool, seed: int, progress: bool) -> None:
    """Every stage of the demo, written into ``work`` (which becomes ``out`` when this returns)."""
    plan = FAST if fast else FULL
    started = time.perf_counter()
    _say(f"[1/5] writing the built-in story corpus ({plan.train_stories} + {plan.valid_stories} stories "
         "from a small story grammar)")
    train_txt, valid_txt = write_demo_corpus(work / "corpus", plan.train_stories, plan.valid_stories, seed)

    _say(f"[2/5] training a BPE tokenizer (up to {plan.vocab_size} tokens) and encoding both splits")
    meta = prepare(train_txt, valid_txt, plan.vocab_size, work / "data", workers=1, progress=False)
    _say(f"      learned {meta['vocab_size']} tokens" + ("" if meta["vocab_size"] == plan.vocab_size else
         f", not {plan.vocab_size}: {_short_vocabulary(meta)}"))

    run_dir = work / "run"
    config = TrainConfig(
        data_dir=str(work / "data"), out_dir=str(run_dir), seed=seed, context_length=plan.context_length,
        d_model=plan.d_model, num_layers=plan.num_layers, num_heads=plan.num_heads,
        batch_size=plan.batch_size, lr=plan.lr, max_steps=plan.max_steps, warmup_steps=plan.warmup_steps,
        eval_batches=plan.eval_batches, device="cpu", progress=progress, threads=1,
    )
    if fast:
        config = TrainConfig(**{**config.to_dict(), "eval_interval": 10, "checkpoint_interval": 20,
                                "log_interval": 1})
        _say(f"[3/5] training {plan.max_steps} steps")
    else:
        threads = choose_threads()
        config = TrainConfig(**{**config.to_dict(), "threads": threads})
        step_time = time_steps(config)  # only to space the evaluations; the clock ends the training
        left = minutes * 60 - (time.perf_counter() - started) - plan.reserve_s
        budget = max(left, MIN_TRAINING_SHARE * minutes * 60)
        expected = max(1, int(budget / step_time))
        config = TrainConfig(**{**config.to_dict(), "time_budget_s": round(budget, 1),
                                "eval_interval": max(1, expected // 10), "checkpoint_interval": plan.max_steps,
                                "log_interval": max(1, expected // 100)})
        if budget > left:
            _say(f"      note: the first stages took {time.perf_counter() - started:.0f} s on this busy machine; "
                 f"training still gets {budget:.0f} s, so the demo runs over its {minutes:g} minutes")
        _say(f"[3/5] training for {budget:.0f} s (~{expected} steps at {step_time * 1000:.0f} ms/step measured, "
             f"{threads} CPU thread(s))")
    result = train(config, say=lambda message: _say(_final_paths(message, work, out)))
    _point_run_at(out, run_dir)

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
    write_report(work, out, config=config, plan=plan, result=result, meta=meta, sample=sample,
                 parameters=model.num_parameters(), total_seconds=time.perf_counter() - started,
                 minutes=None if fast else minutes)
    _say(sample)


def _final_paths(message: str, work: Path, out: Path) -> str:
    """``message`` naming the paths the demo will have once swapped in (``out/run/...``), not the
    temporary folder it is built in (``.demo_out.tmp4242/run/...``)."""
    for built, final in ((work.resolve(), out.resolve()), (work, out)):
        message = message.replace(str(built), str(final))
    return message


def _point_run_at(out: Path, run_dir: Path) -> None:
    """RUN/config.json names where the data and run will be once the demo is swapped into ``out``."""
    saved = read_run_config(run_dir)
    saved.settings.update(data_dir=str(out / "data"), out_dir=str(out / "run"))
    saved.data["data_dir"] = str(out / "data")
    write_run_config(run_dir, saved)


def _short_vocabulary(meta: dict) -> str:
    merges = meta["vocab_size"] - 256 - len(meta["special_tokens"])
    return (f"after {merges} merges every word of the grammar's small word list is a single token, "
            "so no pair is left to merge")


def write_report(work: Path, out: Path, *, config: TrainConfig, plan: DemoPlan, result: TrainResult, meta: dict,
                 sample: str, parameters: int, total_seconds: float, minutes: float | None) -> Path:
    """Write WORK/report.md (loss curve, losses, throughput, the sample) and return its path.

    ``work`` is where the demo is being built and ``out`` where it will be; ``minutes`` is the
    demo's time budget (None for the fixed-length ``--fast`` run).
    """
    run_dir = Path(config.out_dir)
    val_loss = result.val_loss if result.val_loss is not None else float("nan")
    train_loss = result.train_loss if result.train_loss is not None else float("nan")
    quoted = "\n".join(f"> {line}" if line else ">" for line in sample.splitlines())
    splits = meta["splits"]
    vocab = f"{meta['vocab_size']}-token BPE vocabulary"
    if meta["vocab_size"] != plan.vocab_size:
        vocab += f" ({plan.vocab_size} were asked for; {_short_vocabulary(meta)})"
    budget = "" if minutes is None else f" (budget {minutes * 60:.0f} s)"
    training = "" if minutes is None else f" (what the budget left: {config.time_budget_s:.0f} s)"
    lines = [
        "# seqlab demo report",
        "",
        f"A {parameters:,}-parameter Transformer LM ({config.num_layers} layers, d_model {config.d_model}, "
        f"{config.num_heads} heads, context {config.context_length}) trained from scratch on the built-in "
        f"story corpus with a {vocab}.",
        "",
        "The corpus is generated from a small story grammar (`seqlab.lm.stories`: a dozen names, "
        "places and objects in a fixed plot), so it is far more predictable than real text: its low "
        "perplexity is not comparable to TinyStories or any natural corpus.",
        "",
        f"![loss curve]({(run_dir / 'loss_curve.png').relative_to(work).as_posix()})",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| training steps | {result.steps} ({result.tokens_seen:,} tokens, batch {config.batch_size} x "
        f"{config.context_length}) |",
        f"| final {result.train_loss_label} | {train_loss:.4f} |",
        f"| final validation loss | {val_loss:.4f} (perplexity {math.exp(val_loss):.2f}) |",
        f"| uniform-guess loss | {math.log(meta['vocab_size']):.4f} (ln of the vocabulary size) |",
        f"| training throughput | {result.tokens_per_second:,.0f} tokens/s |",
        f"| training time | {result.elapsed:.1f} s{training} |",
        f"| whole demo | {total_seconds:.1f} s{budget} |",
        f"| corpus | {splits['train']['tokens']:,} train / {splits['valid']['tokens']:,} validation tokens, "
        f"{splits['train']['bytes_per_token']} bytes/token |",
        "",
        f"## Sample (prompt \"{PROMPT}\", temperature 0.8, top-p 0.95)",
        "",
        quoted,
        "",
        "## Files",
        "",
        f"- run directory: `{run_dir.relative_to(work).as_posix()}/` (config.json, checkpoints/, log.jsonl, "
        "loss_curve.png, tokenizer/)",
        "- prepared data: `data/`; corpus: `corpus/`",
        f"- more samples: `seqlab generate --run {(out / 'run').as_posix()} --prompt \"{PROMPT}\"`",
        "",
    ]
    report = work / "report.md"
    atomic_write_text(report, "\n".join(lines))
    return report
