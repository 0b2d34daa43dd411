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

import json
import os
import shutil
from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.runs.directory import read_json_object
from seqlab.seq2seq.paths.settings import (
    ARCHS_COMPARED,
    PATHS_TASKS,
    PathsSettings,
    run_name,
)

RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"
FIGURE_FILE = "paths.png"


def read_results(out: str | Path) -> dict[str, Any] | None:
    """OUT/results.json, None when it is missing; invalid JSON or another shape raises ValueError
    naming the file (and the line)."""
    path = Path(out) / RESULTS_FILE
    data = read_json_object(path, "the results of `seqlab paths`")
    if data is None:
        return None
    if not isinstance(data.get("tasks"), dict) or not isinstance(data.get("settings"), dict):
        raise ValueError(f"{path}: not the results of `seqlab paths` (expected a JSON object with \"settings\" "
                         "and \"tasks\")")
    return data


def write_results(out: Path, results: dict[str, Any]) -> None:
    atomic_write_text(out / RESULTS_FILE, json.dumps(results, indent=2) + "\n")


def new_results(settings: PathsSettings, *, fast: bool, seed: int) -> dict[str, Any]:
    return {"settings": settings.to_json(), "fast": fast, "seed": seed, "status": "running", "tasks": {},
            "trained": {}, "machine": None, "total_seconds": 0.0}


def _differences(saved: dict[str, Any], settings: PathsSettings, seed: int, fast: bool) -> list[str]:
    mine = settings.to_json()
    theirs = saved.get("settings", {})
    differences = []
    if bool(saved.get("fast")) != fast:
        differences.append("--fast there, not now" if saved.get("fast") else "not --fast there, --fast now")
    differences += [f"{key} {theirs.get(key)!r} there, {mine.get(key)!r} now" for key in sorted(set(mine) | set(theirs))
                    if theirs.get(key) != mine.get(key)]
    if saved.get("seed") != seed:
        differences.append(f"--seed {saved.get('seed')!r} there, {seed!r} now")
    return differences


def check_out(out: Path, settings: PathsSettings, *, seed: int, fast: bool, overwrite: bool) -> dict[str, Any] | None:
    """The results of the experiment already in ``out``, to resume and add to; None when a new one
    starts there. Refuses (unless ``overwrite``) a non-empty ``out`` that holds no results.json, a
    damaged results.json, and an experiment with other settings or another seed, each with a
    message saying what to do."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file; give a directory for the experiment (created if missing)")
    if not out.is_dir():
        return None
    try:
        saved = read_results(out)
    except ValueError as error:
        if overwrite:
            return None
        raise ValueError(f"{error}; give another --out, or --overwrite to start the experiment over there") from None
    if saved is None:
        present = sorted(name for name in os.listdir(out) if not name.startswith("."))
        if present and not overwrite:
            shown = ", ".join(present[:5]) + (" ..." if len(present) > 5 else "")
            raise FileExistsError(f"--out {out} already holds files ({shown}) and no {RESULTS_FILE}, so it is not a "
                                  "`seqlab paths` experiment's folder; give a new or empty directory, or --overwrite "
                                  f"to write the experiment there (its runs/<task>_<arch>, {RESULTS_FILE}, "
                                  f"{REPORT_FILE} and figures are replaced, other files are left alone)")
        return None
    differences = _differences(saved, settings, seed, fast)
    if not differences:
        return saved
    if overwrite:
        return None
    shown = "; ".join(differences[:6]) + (f"; {len(differences) - 6} more" if len(differences) > 6 else "")
    raise FileExistsError(f"--out {out} holds a `seqlab paths` experiment with other settings ({shown}); rerun it "
                          "with its own settings to resume it or add tasks, give another --out, or --overwrite to "
                          "delete its results and runs and start over")


def start_over(out: Path) -> None:
    """``overwrite``: delete what an experiment writes in ``out`` (results, report, figures and the
    runs of every task and architecture), nothing else."""
    (out / RESULTS_FILE).unlink(missing_ok=True)
    (out / REPORT_FILE).unlink(missing_ok=True)
    (out / FIGURE_FILE).unlink(missing_ok=True)
    for task in PATHS_TASKS:
        (out / f"dependency_{task}.png").unlink(missing_ok=True)
        for arch in ARCHS_COMPARED:
            (out / f"attention_{task}_{arch}.png").unlink(missing_ok=True)
            shutil.rmtree(out / "runs" / run_name(task, arch), ignore_errors=True)


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
