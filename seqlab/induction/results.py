"""OUT/results.json of ``seqlab induction`` and what makes OUT the experiment's own folder.
Standard library only (the explorer reads results through it).

The document::

    {"settings": InductionSettings fields, "fast": bool, "seed": int,
     "status": "running" | "interrupted" | "completed",
     "models": {name: record},        # finished models, in MODELS order (see experiment.model_record)
     "machine": {...}, "total_seconds": float}   # seconds summed over every invocation

A rerun of the same command skips the recorded models and resumes the interrupted one from its
checkpoint; one with other settings or another seed is refused (:func:`check_out`), and so is a
non-empty folder without results.json, unless ``overwrite`` (:func:`start_over`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.induction.settings import MODELS, InductionSettings
from seqlab.runs.directory import read_json_object

RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"
FIGURE_FILE = "induction.png"
COMMAND = "seqlab induction"


def read_results(out: str | Path) -> dict[str, Any] | None:
    """OUT/results.json, None when it is missing; invalid JSON or another shape raises ValueError
    naming the file."""
    path = Path(out) / RESULTS_FILE
    data = read_json_object(path, f"the results of `{COMMAND}`")
    if data is None:
        return None
    if not isinstance(data.get("models"), dict) or not isinstance(data.get("settings"), dict):
        raise ValueError(f"{path}: not the results of `{COMMAND}` (expected a JSON object with \"settings\" and "
                         "\"models\")")
    return data


def write_results(out: Path, results: dict[str, Any]) -> None:
    atomic_write_text(out / RESULTS_FILE, json.dumps(results, indent=2, allow_nan=False) + "\n")


def new_results(settings: InductionSettings, *, fast: bool, seed: int) -> dict[str, Any]:
    return {"settings": settings.to_json(), "fast": fast, "seed": seed, "status": "running", "models": {},
            "machine": None, "total_seconds": 0.0}


def add_model(results: dict[str, Any], name: str, record: dict[str, Any]) -> None:
    """A finished model's record, the models kept in MODELS order."""
    results["models"][name] = record
    order = list(MODELS)
    results["models"] = dict(sorted(results["models"].items(), key=lambda item: order.index(item[0])
                                    if item[0] in order else len(order)))


def check_out(out: Path, settings: InductionSettings, *, seed: int, fast: bool, overwrite: bool) -> dict[str, Any] | None:
    """The results of the experiment already in ``out`` (to resume), or None when a new one starts
    there; refuses a file, a foreign non-empty folder, a damaged results.json and other settings,
    each saying what to do (``overwrite`` starts over instead)."""
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
                                  f"`{COMMAND}` experiment's folder; give a new or empty directory, or --overwrite to "
                                  f"write the experiment there (its runs/, {RESULTS_FILE}, {REPORT_FILE} and "
                                  f"{FIGURE_FILE} are replaced, other files are left alone)")
        return None
    mine, theirs = settings.to_json(), saved.get("settings", {})
    differences = [f"{key} {theirs.get(key)!r} there, {mine.get(key)!r} now" for key in sorted(set(mine) | set(theirs))
                   if theirs.get(key) != mine.get(key)]
    if bool(saved.get("fast")) != fast:
        differences.insert(0, "--fast there, not now" if saved.get("fast") else "not --fast there, --fast now")
    if saved.get("seed") != seed:
        differences.append(f"--seed {saved.get('seed')!r} there, {seed!r} now")
    if not differences:
        return saved
    if overwrite:
        return None
    raise FileExistsError(f"--out {out} holds a `{COMMAND}` experiment with other settings ({'; '.join(differences[:6])}); "
                          "rerun it with its own settings to resume it, give another --out, or --overwrite to delete "
                          "its results and runs and start over")


def start_over(out: Path) -> None:
    """``overwrite``: delete what the experiment writes in ``out``, nothing else."""
    for name in (RESULTS_FILE, REPORT_FILE, FIGURE_FILE):
        (out / name).unlink(missing_ok=True)
    for name in MODELS:
        shutil.rmtree(out / "runs" / name, ignore_errors=True)
