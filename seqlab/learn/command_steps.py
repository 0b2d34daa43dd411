"""The path's command steps, checked from what the command wrote.

A command step (``seqlab demo --fast --out demo_out``) is passed when its output folder holds what
a finished run of that command writes: ``seqlab learn check train_small`` reads demo_out, not the
student's word. Each check returns a :class:`Evidence`: passed or not, the folder read, and a
sentence with the numbers found there ("trained 40 steps; validation loss 3.147, perplexity 23.3")
or what is missing and how to make it.

The folder is the command's ``--out``, looked for in the current folder and beside the workspace
(``seqlab learn check train_small --out DIR`` names another).
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from collections.abc import Callable
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Evidence:
    passed: bool
    folder: Path
    message: str


def out_folder(command: str) -> str:
    """The ``--out`` of a step's command: "seqlab demo --fast --out demo_out" -> "demo_out"."""
    words = shlex.split(command)
    return words[words.index("--out") + 1] if "--out" in words[:-1] else ""


def _run_progress(run: Path) -> tuple[dict, list[dict], str | None]:
    """(config.json's settings, log records, a reason the run is not a finished one or None)."""
    from seqlab.runs.directory import read_json_object
    from seqlab.runs.log import read_jsonl

    config = read_json_object(run / "config.json", "a run's config.json")
    if config is None:
        return {}, [], f"{run} holds no run (no config.json)"
    settings = config.get("settings") if isinstance(config.get("settings"), dict) else {}
    if not (run / "log.jsonl").is_file():
        return settings, [], f"{run} has no log.jsonl: the run did not start"
    records = read_jsonl(run / "log.jsonl", drop_torn_last_line=True)
    steps = max((r["step"] for r in records if isinstance(r.get("step"), int)), default=0)
    wanted = settings.get("max_steps")
    if isinstance(wanted, int) and steps < wanted:
        return settings, records, f"{run} stopped at step {steps} of {wanted}: run the command again to finish it"
    if not any(isinstance(r.get("val_loss"), (int, float)) for r in records):
        return settings, records, f"{run} has no evaluation in its log.jsonl yet"
    return settings, records, None


def _last(records: list[dict], key: str):
    values = [r[key] for r in records if isinstance(r.get(key), (int, float))]
    return values[-1] if values else None


def _stacked(folder: Path) -> tuple[bool, str]:
    from seqlab.runs.directory import read_json_object
    results = read_json_object(folder / "results.json", "the results of `seqlab labs`")
    if results is None:
        return False, f"{folder / 'results.json'} does not exist"
    if not isinstance(results.get("stacked"), dict):
        return False, f"{folder / 'results.json'} holds no results of the stacked lab (run it with --only stacked)"
    checks = results.get("gradient_checks") if isinstance(results.get("gradient_checks"), dict) else {}
    errors = [checks.get(n) for n in ("stacked_rnn", "bidirectional_rnn")]
    tolerance = results.get("tolerance", 1e-7)
    failures = results.get("failures") or []
    if failures or not all(isinstance(e, (int, float)) and e <= tolerance for e in errors):
        return False, (f"{folder / 'results.json'}: the lab reports failures: "
                       f"{failures or 'the gradient checks of the stacked and bidirectional RNNs are missing'}")
    return True, (f"the stacked and bidirectional RNNs ran; their gradient checks passed (largest relative "
                  f"error {max(errors):.1e})")


def _train_small(folder: Path) -> tuple[bool, str]:
    if not (folder / "report.md").is_file():
        return False, f"{folder} has no report.md: the demo did not finish"
    settings, records, problem = _run_progress(folder / "run")
    if problem:
        return False, problem
    loss = _last(records, "val_loss")
    if not math.isfinite(loss):
        return False, f"{folder / 'run'}: the validation loss is {loss}"
    steps = max(r["step"] for r in records if isinstance(r.get("step"), int))
    return True, f"trained {steps} steps; validation loss {loss:.3f} nats per token, perplexity {math.exp(loss):.1f}"


def _seq2seq(folder: Path) -> tuple[bool, str]:
    settings, records, problem = _run_progress(folder)
    if problem:
        return False, problem
    exact, loss = _last(records, "val_exact_match"), _last(records, "val_loss")
    if exact is None:
        return False, f"{folder} is not a seq2seq run (its log has no exact-match score)"
    return True, f"validation loss {loss:.3f}, exact match {100 * exact:.1f}% of the dates"


def _paths(folder: Path) -> tuple[bool, str]:
    from seqlab.runs.directory import read_json_object
    results = read_json_object(folder / "results.json", "the results of `seqlab paths`")
    if results is None:
        return False, f"{folder / 'results.json'} does not exist"
    tasks = results.get("tasks") if isinstance(results.get("tasks"), dict) else {}
    if results.get("status") != "completed" or not tasks:
        return False, f"{folder / 'results.json'}: the experiment is {results.get('status', 'unfinished')}; run it again to finish"
    scores = []
    for task, data in tasks.items():
        archs = data.get("archs") if isinstance(data, dict) and isinstance(data.get("archs"), dict) else {}
        best = max(archs.items(), key=lambda kv: kv[1].get("exact_match", -1) if isinstance(kv[1], dict) else -1,
                   default=None)
        if best and isinstance(best[1], dict) and isinstance(best[1].get("exact_match"), (int, float)):
            scores.append(f"{task}: {best[0]} {100 * best[1]['exact_match']:.0f}%")
    return True, "completed; best exact match per task: " + ", ".join(scores)


CHECKS: dict[str, Callable[[Path], tuple[bool, str]]] = {
    "stacked": _stacked, "train_small": _train_small, "seq2seq": _seq2seq, "paths": _paths,
}


def check_command_step(step, workspace: Path, out: Path | None = None) -> Evidence:
    """Read what ``step``'s command wrote: ``out``, else its --out folder in the current folder or
    beside the workspace (the first that exists)."""
    name = out_folder(step.command)
    if out is not None:
        candidates = [Path(out)]
    else:
        candidates = list(dict.fromkeys([Path(name), Path(workspace).resolve().parent / name]))
    folder = next((c for c in candidates if c.exists()), candidates[0])
    if not folder.exists():
        return Evidence(False, folder, f"{folder} does not exist: run  {step.command}  first (in this folder)")
    try:
        passed, message = CHECKS[step.id](folder)
    except (OSError, ValueError) as error:
        passed, message = False, str(error)
    return Evidence(passed, folder, message)
