"""Running a sweep: every run of the plan, one after another, through ``seqlab.lm.task.train``, each
in ``DIR/<run name>/``, an ordinary run directory (``seqlab generate --run DIR/lr=1e-3`` works).

The loop is :class:`seqlab.training.campaign.Campaign`: a rerun of the same sweep skips a run with
``sweep_outcome.json`` (its :class:`~seqlab.runs.status.Status` word, or "diverged" / "failed"),
resumes one with ``checkpoints/latest.pt`` (the same batches and schedule as if it never stopped)
and starts the others; Ctrl-C or SIGTERM stops the whole sweep, which then exits 130 or 143.

A run diverges when the trainer raises ``NonFiniteLossError`` or its training loss climbs above its
start after warm-up and stays there (:mod:`seqlab.sweep.divergence`); one out of GPU memory fails. Either way the
sweep records why and goes on. ``sweep.json`` holds the sweep's settings: a rerun with others into
the same ``DIR`` is refused unless ``overwrite=True``, a ``DIR`` of something else always. With
``wandb``, each run is logged in the group named by the sweep; with ``tensorboard``, each writes
``DIR/<run>/tensorboard/``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.jsonfile import dumps
from seqlab.lm.settings import TrainConfig
from seqlab.runs.directory import read_json_object
from seqlab.sweep.divergence import DivergenceWatch
from seqlab.sweep.grid import (
    GridError,
    Variant,
    check_variants,
    combine,
    format_value,
    grid_variants,
    parse_grid,
    variant_config,
)
from seqlab.sweep.progress import SweepProgress, Work
from seqlab.sweep.recipes import recipe_variants
from seqlab.sweep.records import OUTCOME_FILE, SWEEP_FILE, RunRecord, read_run, write_outcome
from seqlab.sweep.report import (
    best_run,
    report_markdown,
    write_figures,
    write_json,
)
from seqlab.runs.status import Status
from seqlab.settings import with_added_defaults

# TrainConfig fields that change where or how a run is shown, not what it trains: a rerun may
# change them (e.g. add --wandb) and is still the same sweep
NOT_IDENTITY = ("out_dir", "resume", "overwrite", "reschedule", "progress", "wandb", "wandb_project",
                "tensorboard", "threads")
MAX_RUNS = 10_000  # a grid larger than this is refused with its count (its plan alone would take long)
SWEEP_FILES = (SWEEP_FILE, "report.md", "curves.png", "final.png")


@dataclass
class SweepPlan:
    """The runs of a sweep: ``base`` with each variant's settings, trained into ``out/<name>``."""

    out: Path
    base: TrainConfig
    variants: list[Variant]
    axes: list[str]
    recipe: str | None = None
    grid: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.out.resolve().name

    def identity(self) -> dict[str, Any]:
        """What makes two invocations the same sweep (compared through JSON, as sweep.json keeps it)."""
        base = {k: v for k, v in self.base.to_dict().items() if k not in NOT_IDENTITY}
        runs = [{"name": v.name, "settings": v.settings} for v in self.variants]
        return json.loads(dumps({"base": base, "runs": runs}))


@dataclass
class SweepOutcome:
    status: Status                                # COMPLETED | INTERRUPTED
    records: list[RunRecord]
    trained: list[str] = field(default_factory=list)  # runs that trained in this invocation
    skipped: list[str] = field(default_factory=list)  # runs that were already done
    stop_signal: int | None = None                # the signal that stopped the sweep
    best: RunRecord | None = None


def plan_sweep(base: TrainConfig, out: str | Path, *, grid: list[str] | tuple[str, ...] = (),
               recipe: str | None = None) -> SweepPlan:
    """The plan of ``--grid`` (Cartesian product) and/or ``--recipe`` around ``base``; every run's
    config is built and checked here, so a bad value stops the sweep before anything trains."""
    axes = parse_grid(list(grid))
    recipe_runs = recipe_variants(recipe, base) if recipe else []
    for axis in axes:
        if any(axis.key in v.settings for v in recipe_runs):
            raise GridError(f"--grid {axis.key}=...: --recipe {recipe} already sets {axis.key}; sweep it with one "
                            "or the other")
    count = math.prod(len(axis.values) for axis in axes) * max(1, len(recipe_runs))
    if count > MAX_RUNS:
        sizes = " x ".join([str(len(recipe_runs))] * bool(recipe_runs) + [str(len(a.values)) for a in axes])
        raise GridError(f"the sweep has {count:,} runs ({sizes}); at most {MAX_RUNS:,} are planned at once: give "
                        "fewer values, or split it into several sweeps")
    variants = combine(recipe_runs, grid_variants(axes) if axes else [])
    if not variants:
        raise GridError("nothing to sweep: give --grid KEY=V1,V2,... (repeatable) or --recipe lr|batch-size|ablations")
    check_variants(base, variants)
    check_machine(base, variants)
    for variant in variants:
        data_dir = variant_config(base, variant).data_dir
        if not data_dir:
            raise GridError("no data: give --data-dir (a directory made by `seqlab prepare` or `seqlab demo`, "
                            "e.g. demo_out/data), or a --config / --from RUN that names one")
        if not Path(data_dir).is_dir():
            raise GridError(f"run {variant.name}: data_dir {data_dir} is not a directory (make one with "
                            "`seqlab prepare` or `seqlab demo`)")
    return SweepPlan(Path(out), base, variants, list(variants[0].point), recipe, list(grid))


def check_machine(base: TrainConfig, variants: list[Variant]) -> None:
    """Every run's device and precision must exist on this machine (``device=bogus``, ``cuda``
    without CUDA), checked before the first run trains; the error names the run."""
    from seqlab.runtime import resolve_device, resolve_precision

    checked: set[tuple[str, str]] = set()
    for variant in variants:
        config = variant_config(base, variant)
        if (config.device, config.precision) in checked:
            continue
        try:
            resolve_precision(config.precision, resolve_device(config.device))
        except (RuntimeError, ValueError) as error:
            shown = ", ".join(f"{k}={format_value(v)}" for k, v in variant.settings.items())
            raise GridError(f"run {variant.name} ({shown}): {str(error).splitlines()[0]}; no run has trained "
                            "yet") from None
        checked.add((config.device, config.precision))


# -- the sweep folder ------------------------------------------------------------------------------


def check_out(plan: SweepPlan, *, overwrite: bool) -> None:
    """Refuse an ``out`` that is a file, a folder of something else, or a sweep with other settings."""
    out = plan.out
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file; give a directory for the sweep (created if missing)")
    saved = read_json_object(out / SWEEP_FILE) if out.is_dir() else None
    if saved is None:
        hidden = [n for n in os.listdir(out) if not n.startswith(".")] if out.is_dir() else []
        if hidden:
            shown = ", ".join(sorted(hidden)[:5]) + (" ..." if len(hidden) > 5 else "")
            raise FileExistsError(f"--out {out} already holds files ({shown}) and no {SWEEP_FILE}, so it is not a "
                                  "sweep's folder; give a new or empty directory")
        return
    if overwrite:
        return
    mine = plan.identity()
    base = saved.get("base")
    if isinstance(base, dict):  # a setting added since that sweep, at its default, is the same sweep
        base = with_added_defaults(base, type(plan.base))
    theirs = {"base": base, "runs": [{"name": r.get("name"), "settings": r.get("settings")}
                                     for r in saved.get("runs", []) if isinstance(r, dict)]}
    if theirs == mine:
        return
    differences = []
    if isinstance(theirs["base"], dict):
        for key in sorted(set(mine["base"]) | set(theirs["base"])):
            a, b = theirs["base"].get(key), mine["base"].get(key)
            if a != b:
                there = format_value(a) if key in theirs["base"] else "absent"
                differences.append(f"{key} {there} there, {format_value(b) if key in mine['base'] else 'absent'} now")
    old_names = [r["name"] for r in theirs["runs"]]
    new_names = [r["name"] for r in mine["runs"]]
    if old_names != new_names:
        differences.append(f"runs {', '.join(old_names) or 'none'} there, {', '.join(new_names)} now")
    elif not differences:
        differences.append("the runs' settings differ")
    raise FileExistsError(f"--out {out} holds another sweep ({'; '.join(differences[:6])}); rerun that one with "
                          "its own settings, give another --out, or --overwrite to delete its runs and start over")


def start_over(plan: SweepPlan) -> None:
    """``overwrite``: delete the plan's run folders and the sweep's own files (nothing else)."""
    for variant in plan.variants:
        shutil.rmtree(plan.out / variant.name, ignore_errors=True)
    for name in SWEEP_FILES:
        (plan.out / name).unlink(missing_ok=True)


def read_records(plan: SweepPlan) -> list[RunRecord]:
    return [read_run(plan.out / v.name, name=v.name, settings=v.settings, point=v.point) for v in plan.variants]


def write_summary(plan: SweepPlan, records: list[RunRecord], status: Status, *, figures: bool) -> None:
    """sweep.json and report.md (and with ``figures``, curves.png and final.png), each atomically."""
    status = Status(status).value
    best = best_run(records)
    document = {"sweep": plan.name, "status": status, "recipe": plan.recipe, "grid": plan.grid, "axes": plan.axes,
                "base": plan.identity()["base"], "runs": [r.summary() for r in records],
                "best": best.name if best else None,
                "diverged": [r.name for r in records if r.status == "diverged"]}
    write_json(plan.out / SWEEP_FILE, document)
    title = f"Sweep {plan.name}"
    drawn = write_figures(plan.out, records, plan.axes, title=title) if figures else \
        [(alt, name) for alt, name in (("training and validation loss against steps and wall-clock time", "curves.png"),
                                       ("final validation loss against each swept value", "final.png"))
         if (plan.out / name).exists()]
    swept = ", ".join(plan.axes) or "nothing"
    what = f"recipe `{plan.recipe}`" if plan.recipe else "a grid"
    intro = [f"{len(records)} runs of `seqlab train` ({what}; swept: {swept}), status: {status}.",
             "", "Settings shared by every run: " + ", ".join(
                 f"{k}={format_value(v)}" for k, v in plan.identity()["base"].items()
                 if k not in {key for v in plan.variants for key in v.settings}) + "."]
    atomic_write_text(plan.out / "report.md", report_markdown(title, intro, records, plan.axes, drawn))


# -- trackers ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def tracker_group(config: TrainConfig, group: str) -> Iterator[None]:
    """W&B's group for the run (``WANDB_RUN_GROUP``, read by ``wandb.init``), unless the user set one."""
    if not config.wandb or os.environ.get("WANDB_RUN_GROUP"):
        yield
        return
    os.environ["WANDB_RUN_GROUP"] = group
    try:
        yield
    finally:
        os.environ.pop("WANDB_RUN_GROUP", None)


def _device_peak(config: TrainConfig) -> tuple[str | None, float | None]:
    """(device, its peak FLOP/s at the run's precision or None) where the run trains."""
    try:
        from seqlab.runtime import peak_flops, resolve_device, resolve_precision

        device = resolve_device(config.device)
        return str(device), peak_flops(device, resolve_precision(config.precision, device))
    except (RuntimeError, ValueError):
        return None, None


# -- the sweep ---------------------------------------------------------------------------------------


def _work(config: TrainConfig, record: RunRecord) -> Work:
    if config.time_budget_s is not None:
        return Work(seconds=max(0.0, config.time_budget_s - (record.wall_time_s or 0.0)))
    steps_left = max(0, config.total_steps() - (record.steps or 0))
    return Work(tokens=steps_left * config.tokens_per_step())


def _log_is_final(record: RunRecord) -> bool:
    """The log ends with the last step's evaluation, so the run ended and only its outcome is missing
    (the sweep was stopped between the two)."""
    return record.status == "finished" and bool(record.val) and record.val[-1][0] == record.steps


@dataclass
class _Point:
    index: int
    variant: Variant
    run_dir: Path


@dataclass
class _Ended:
    """How a run that raised ended (diverged, out of memory): what :func:`write_outcome` records."""

    status: str
    reason: str


def run_sweep(plan: SweepPlan, *, overwrite: bool = False, step_callbacks: list[Callable] | tuple = (),
              say: Callable[[str], None] | None = None) -> SweepOutcome:
    """Train (or resume, or skip) every run of ``plan`` through the campaign loop
    (:class:`seqlab.training.campaign.Campaign`: ``plan.out`` locked, signals, resume); see the
    module docstring. ``step_callbacks`` go to every run's trainer, after the sweep's own."""
    from seqlab.lm.task import train
    from seqlab.training import NonFiniteLossError
    from seqlab.training.campaign import Campaign, interrupted_line

    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    campaign = Campaign(plan.out, "seqlab sweep", what="the sweep", say=say,
                        check=lambda: check_out(plan, overwrite=overwrite))
    points = [_Point(i, v, plan.out / v.name) for i, v in enumerate(plan.variants)]
    outcome = SweepOutcome(Status.COMPLETED, [])
    records: list[RunRecord] = []
    started: dict[int, tuple[float, RunRecord]] = {}
    progress = SweepProgress(len(points), [], say)

    def prepare(_: object) -> None:
        if overwrite:
            start_over(plan)
        records[:] = read_records(plan)
        done = [(p.run_dir / OUTCOME_FILE).is_file() for p in points]
        progress.left = [Work() if d else _work(variant_config(plan.base, p.variant), r)
                         for d, p, r in zip(done, points, records)]

    def reread(point: _Point) -> RunRecord:
        records[point.index] = read_run(point.run_dir, name=point.variant.name, settings=point.variant.settings,
                                        point=point.variant.point)
        return records[point.index]

    def recorded(point: _Point) -> RunRecord | None:
        return records[point.index] if (point.run_dir / OUTCOME_FILE).is_file() else None

    def skipped(point: _Point, record: RunRecord) -> None:
        progress.skip(point.index, record)
        outcome.skipped.append(point.variant.name)

    def train_one(point: _Point, state: object, callbacks: list[Callable], engine_say: Callable[[str], None]):
        resume = state is not None
        config = variant_config(plan.base, point.variant, out_dir=str(point.run_dir), resume=resume)
        before, steps = records[point.index], config.total_steps()
        note = (f"resuming (logged up to step {before.steps or 0} of {steps})" if resume else
                f"training {steps} steps" if config.time_budget_s is None else
                f"training for {config.time_budget_s:g} s (at most {steps} steps)")
        progress.start(point.index, point.variant.name, note)
        watch = DivergenceWatch(point.run_dir / "log.jsonl", config.warmup_steps, _vocab_size(config))
        started[point.index] = (time.perf_counter(), before)
        outcome.trained.append(point.variant.name)
        try:
            with tracker_group(config, plan.name):
                result = train(config, step_callbacks=[watch, *callbacks, *step_callbacks], say=engine_say)
        except NonFiniteLossError as error:
            return _Ended("diverged", str(error))
        except _out_of_memory() as error:
            return _Ended("failed", f"out of memory: {str(error).splitlines()[0][:200]}")
        return _Ended("diverged", watch.reason) if watch.reason is not None else result

    def record(point: _Point, result: object, state: object) -> None:
        config = variant_config(plan.base, point.variant)
        device, peak = _device_peak(config)
        status, reason = _ending(result, config, records[point.index])
        write_outcome(point.run_dir, status, reason=reason, peak_flops=peak, device=device)
        record = reread(point)
        if point.index in started:
            at, before = started[point.index]
            trained_tokens = max(0, (record.tokens or 0) - (before.tokens or 0))
            progress.end(point.index, record, time.perf_counter() - at, trained_tokens)

    def interrupted(point: _Point, result: object) -> None:
        reread(point)
        say(f"[{point.index + 1}/{len(points)}] {point.variant.name}: {interrupted_line(result)}")

    def summarize(status: Status) -> None:
        write_summary(plan, read_records(plan), status, figures=status is not Status.RUNNING)

    outcome.status = campaign.run(points, prepare=prepare, recorded=recorded,
                                  reached_end=lambda point, state: _log_is_final(records[point.index]),
                                  train_one=train_one, record=record, summarize=summarize, skipped=skipped,
                                  interrupted=interrupted)
    outcome.stop_signal = campaign.stop.signal
    outcome.records = read_records(plan)
    outcome.best = best_run(outcome.records)
    return outcome


def _ending(result: object, config: TrainConfig, record: RunRecord) -> tuple[str, str | None]:
    """(status, reason) for sweep_outcome.json: "diverged" or "failed" of a run that raised, else its
    :class:`Status` word ("completed", "time budget"); ``result`` None: its final log says it ended."""
    if isinstance(result, _Ended):
        return result.status, result.reason
    if result is None:
        spent = config.time_budget_s is not None and (record.steps or 0) < config.total_steps()
        return (Status.TIME_BUDGET.value, "time budget") if spent else (Status.COMPLETED.value, None)
    status = Status(result.status)
    return status.value, result.stopped_by if status is not Status.COMPLETED else None


def _vocab_size(config: TrainConfig) -> int | None:
    """The run's vocabulary size (its setting, else the data's meta.json), for the divergence rule's
    ceiling; None when the data cannot say (the run itself then reports why)."""
    from seqlab.lm.data import read_meta

    try:
        return config.vocab_size or int(read_meta(config.data_dir)["vocab_size"])
    except (OSError, ValueError):
        return None


def _out_of_memory() -> type[BaseException]:
    import torch

    return getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
