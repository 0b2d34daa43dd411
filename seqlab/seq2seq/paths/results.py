"""OUT/results.json of ``seqlab paths``: every number of the experiment, and what makes OUT the
experiment's own folder. Standard library only.

The document::

    {"settings": PathsSettings fields, "fast": bool, "seed": int,
     "status": "running" | "interrupted" | "completed",   ("complete" in older results)
     "tasks": {task: {"train_lengths", "test_max_len", "archs": {arch: record}}},   # evaluated models
     "trained": {"task/arch": training outcome},   # trained, not yet evaluated (a kill in between)
     "machine": {...}, "total_seconds": float}     # seconds summed over every invocation

It is written (atomically) when the experiment starts and again after each model, so a rerun of
the same command knows which models are done (skipped), trained (only evaluated) or interrupted
(resumed from their checkpoint by the engine's ``--resume``). A rerun with other ``--tasks`` adds
them: the tasks of every invocation stay in results.json and report.md. One with other settings is
refused (:func:`check_out`), and so is a non-empty folder that holds no results.json, unless
``overwrite`` (:func:`start_over`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.seq2seq.paths.settings import (
    ARCHS_COMPARED,
    PATHS_TASKS,
    PathsSettings,
    run_name,
)
from seqlab.jsonfile import NUMBER, dumps
from seqlab.runs.experiment import ExperimentOut

RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"
FIGURE_FILE = "paths.png"


# what the report, the chart and the explorer's paths panel read from each model's record
SHAPE = {"tasks": {"*": {"archs": {"*": {"parameters": int, "steps": int, "exact_match": NUMBER,
                                        "by_length": {"*": {"count": int, "exact_match": NUMBER}}}}}}}

OUT = ExperimentOut("seqlab paths", collections=("tasks",), rerun_text="resume it or add tasks",
                    owns=(RESULTS_FILE, REPORT_FILE, FIGURE_FILE,
                          *(name for task in PATHS_TASKS for name in (
                              f"dependency_{task}.png", *(f"attention_{task}_{arch}.png" for arch in ARCHS_COMPARED),
                              *(f"runs/{run_name(task, arch)}" for arch in ARCHS_COMPARED)))),
                    owned_text=f"its runs/<task>_<arch>, {RESULTS_FILE}, {REPORT_FILE} and figures",
                    settings_class=PathsSettings, shape=SHAPE)


def read_results(out: str | Path) -> dict[str, Any] | None:
    """OUT/results.json, None when it is missing; invalid JSON or another shape raises ValueError
    naming the file (and the line)."""
    return OUT.read(out)


def write_results(out: Path, results: dict[str, Any]) -> None:
    atomic_write_text(out / RESULTS_FILE, dumps(results, indent=2) + "\n")


def new_results(settings: PathsSettings, *, fast: bool, seed: int) -> dict[str, Any]:
    return {"settings": settings.to_json(), "fast": fast, "seed": seed, "status": "running", "tasks": {},
            "trained": {}, "machine": None, "total_seconds": 0.0}


def check_out(out: Path, settings: PathsSettings, *, seed: int, fast: bool, overwrite: bool) -> dict[str, Any] | None:
    """The results of the experiment already in ``out``, to resume and add to; None when a new one
    starts there. Refuses (unless ``overwrite``) a non-empty ``out`` that holds no results.json, a
    damaged results.json, and an experiment with other settings or another seed, each with a
    message saying what to do."""
    return OUT.check(out, settings.to_json(), seed=seed, fast=fast, overwrite=overwrite)


def start_over(out: Path) -> None:
    """``overwrite``: delete what an experiment writes in ``out`` (results, report, figures and the
    runs of every task and architecture), nothing else."""
    OUT.start_over(out)


def model_key(task: str, arch: str) -> str:
    return f"{task}/{arch}"


def task_entry(results: dict[str, Any], task: str, settings: PathsSettings, *, symbol: bool) -> dict[str, Any]:
    """results["tasks"][task], created (in PATHS_TASKS order, so merged tasks read in one order)."""
    if task not in results["tasks"]:
        results["tasks"][task] = {"train_lengths": list(settings.train_lengths) if symbol else None,
                                  "test_max_len": settings.test_max_len if symbol else None, "archs": {}}
        order = {name: i for i, name in enumerate(PATHS_TASKS)}
        results["tasks"] = dict(sorted(results["tasks"].items(), key=lambda item: order.get(item[0], len(order))))
    return results["tasks"][task]


def add_record(results: dict[str, Any], task: str, arch: str, record: dict[str, Any], entry: dict[str, Any]) -> None:
    """An evaluated model's record into its task (architectures in ARCHS_COMPARED order)."""
    entry["archs"][arch] = record
    order = {name: i for i, name in enumerate(ARCHS_COMPARED)}
    entry["archs"] = dict(sorted(entry["archs"].items(), key=lambda item: order.get(item[0], len(order))))
    results.setdefault("trained", {}).pop(model_key(task, arch), None)


def range_accuracy(by_length: dict[Any, dict[str, float]], low: int, high: int) -> float | None:
    """Exact match over all test pairs with length in [low, high] (weighted by count)."""
    rows = [v for n, v in by_length.items() if low <= int(n) <= high]
    total = sum(v["count"] for v in rows)
    return sum(v["exact_match"] * v["count"] for v in rows) / total if total else None
