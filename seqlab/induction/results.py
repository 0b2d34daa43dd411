"""OUT/results.json of ``seqlab induction`` and what makes OUT the experiment's own folder.
Standard library only (the explorer reads results through it).

The document::

    {"settings": InductionSettings fields, "fast": bool, "seed": int,
     "status": "running" | "interrupted" | "completed",
     "models": {name: record},        # finished models, in MODELS order (see experiment.model_record)
     "budgets": {"equal": bool, "steps": {name: steps}, "note": str | None},  # see budgets()
     "machine": {...}, "total_seconds": float}   # seconds summed over every invocation

A rerun of the same command skips the recorded models and resumes the interrupted one from its
checkpoint; one with other settings or another seed is refused (:func:`check_out`), and so is a
non-empty folder without results.json, unless ``overwrite`` (:func:`start_over`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.induction.settings import MODELS, InductionSettings
from seqlab.jsonfile import NUMBER
from seqlab.runs.experiment import ExperimentOut

RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"
FIGURE_FILE = "induction.png"
COMMAND = "seqlab induction"


_NUMBER_OR_NULL = (*NUMBER, None)
# what the report, the figure and the explorer's induction panel read from each model's record
MODEL_SHAPE = {"label": str, "arch": str, "layers": int, "parameters": int, "steps": int,
               "curve": {"steps": [int], "in_context_loss": [_NUMBER_OR_NULL], "induction": [_NUMBER_OR_NULL]},
               "final": {key: _NUMBER_OR_NULL for key in ("in_context_loss", "repeat_accuracy", "induction",
                                                          "previous_token")},
               "by_distance": {"*": NUMBER}, "bump": (dict, None)}
SHAPE = {"status": str, "total_seconds": NUMBER,
         "settings": {"vocab_size": int, "half": int, "min_repeat": int, "steps": int, "lstm_steps": int,
                      "batch_size": int, "distances": [int]},
         "models": {"*": MODEL_SHAPE}}

OUT = ExperimentOut(COMMAND, collections=("models",),
                    owns=(RESULTS_FILE, REPORT_FILE, FIGURE_FILE, *(f"runs/{name}" for name in MODELS)),
                    owned_text=f"its runs/, {RESULTS_FILE}, {REPORT_FILE} and {FIGURE_FILE}",
                    settings_class=InductionSettings, shape=SHAPE)


def read_results(out: str | Path) -> dict[str, Any] | None:
    """OUT/results.json, None when it is missing; invalid JSON or another shape raises ValueError
    naming the file."""
    return OUT.read(out)


def write_results(out: Path, results: dict[str, Any]) -> None:
    atomic_write_text(out / RESULTS_FILE, json.dumps(results, indent=2, allow_nan=False) + "\n")


def new_results(settings: InductionSettings, *, fast: bool, seed: int) -> dict[str, Any]:
    return {"settings": settings.to_json(), "fast": fast, "seed": seed, "status": "running", "models": {},
            "machine": None, "total_seconds": 0.0}


def add_model(results: dict[str, Any], name: str, record: dict[str, Any]) -> None:
    """A finished model's record, the models kept in MODELS order (and the budgets updated)."""
    results["models"][name] = record
    order = list(MODELS)
    results["models"] = dict(sorted(results["models"].items(), key=lambda item: order.index(item[0])
                                    if item[0] in order else len(order)))
    results["budgets"] = budgets(results)


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def budgets(results: dict[str, Any]) -> dict[str, Any]:
    """How many optimizer steps each finished model trained and, when they differ, what follows:
    ``{"equal": False, "steps": {"attn1": 300, ..., "lstm": 70}, "note": "The models trained for
    different numbers of steps: ..."}`` (``note`` None when they are equal). A model trained for
    fewer steps may only be less trained, so the comparison that says something about the
    architectures is the one between models of equal steps."""
    steps = {name: int(record["steps"]) for name, record in results["models"].items()}
    if len(set(steps.values())) <= 1:
        return {"equal": True, "steps": steps, "note": None}
    groups: dict[int, list[str]] = {}
    for name, count in steps.items():
        groups.setdefault(count, []).append(name)
    ranked = sorted(groups.items(), reverse=True)
    trained = "; ".join(f"{_names(names)} {count} steps" for count, names in ranked)
    fewer = [name for count, names in ranked[1:] for name in names]
    equal = [f"{_names(names)}" for _, names in ranked if len(names) > 1]
    within = f"compare models only at equal steps ({'; '.join(equal)})" if equal else "no two models are at equal steps"
    note = (f"The models trained for different numbers of steps: {trained}. A model trained for fewer steps may "
            f"only be less trained, so where {_names(fewer)} {'does' if len(fewer) == 1 else 'do'} worse than a model "
            f"trained longer, that says nothing about {'its' if len(fewer) == 1 else 'their'} architecture: "
            f"{within}.")
    return {"equal": False, "steps": steps, "note": note}


def check_out(out: Path, settings: InductionSettings, *, seed: int, fast: bool, overwrite: bool) -> dict[str, Any] | None:
    """The results of the experiment already in ``out`` (to resume), or None when a new one starts
    there; refuses a file, a foreign non-empty folder, a damaged results.json and other settings,
    each saying what to do (``overwrite`` starts over instead: :func:`start_over`)."""
    return OUT.check(out, settings.to_json(), seed=seed, fast=fast, overwrite=overwrite)


def start_over(out: Path) -> None:
    """``overwrite``: delete what the experiment writes in ``out``, nothing else."""
    OUT.start_over(out)
