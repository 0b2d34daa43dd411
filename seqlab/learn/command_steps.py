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

from seqlab.learn.words import Said, said


@dataclasses.dataclass(frozen=True)
class Evidence:
    passed: bool
    folder: Path
    message: Said | str          # words said later (str(): the English); an OSError's own text as it is


def out_folder(command: str) -> str:
    """The ``--out`` of a step's command: "seqlab demo --fast --out demo_out" -> "demo_out"."""
    words = shlex.split(command)
    return words[words.index("--out") + 1] if "--out" in words[:-1] else ""


def _run_progress(run: Path) -> tuple[dict, list[dict], Said | None]:
    """(config.json's settings, log records, a reason the run is not a finished one or None)."""
    from seqlab.runs.directory import read_json_object
    from seqlab.runs.log import read_jsonl

    config = read_json_object(run / "config.json", "a run's config.json")
    if config is None:
        return {}, [], said("command.no_run", run=str(run))
    settings = config.get("settings") if isinstance(config.get("settings"), dict) else {}
    if not (run / "log.jsonl").is_file():
        return settings, [], said("command.no_log", run=str(run))
    records = read_jsonl(run / "log.jsonl", drop_torn_last_line=True)
    steps = max((r["step"] for r in records if isinstance(r.get("step"), int)), default=0)
    wanted = settings.get("max_steps")
    if isinstance(wanted, int) and steps < wanted:
        return settings, records, said("command.stopped", run=str(run), steps=steps, wanted=wanted)
    if not any(isinstance(r.get("val_loss"), (int, float)) for r in records):
        return settings, records, said("command.no_evaluation", run=str(run))
    return settings, records, None


def _last(records: list[dict], key: str):
    values = [r[key] for r in records if isinstance(r.get(key), (int, float))]
    return values[-1] if values else None


def _stacked(folder: Path) -> tuple[bool, Said]:
    from seqlab.runs.directory import read_json_object
    results = read_json_object(folder / "results.json", "the results of `seqlab labs`")
    if results is None:
        return False, said("command.missing", path=str(folder / "results.json"))
    if not isinstance(results.get("stacked"), dict):
        return False, said("command.no_stacked", path=str(folder / "results.json"))
    checks = results.get("gradient_checks") if isinstance(results.get("gradient_checks"), dict) else {}
    errors = [checks.get(n) for n in ("stacked_rnn", "bidirectional_rnn")]
    tolerance = results.get("tolerance", 1e-7)
    failures = results.get("failures") or []
    if failures or not all(isinstance(e, (int, float)) and e <= tolerance for e in errors):
        return False, said("command.lab_failures", path=str(folder / "results.json"),
                           failures=str(failures) if failures else said("command.lab_checks_missing"))
    return True, said("command.stacked_passed", error=f"{max(errors):.1e}")


def _train_small(folder: Path) -> tuple[bool, Said]:
    if not (folder / "report.md").is_file():
        return False, said("command.no_report", folder=str(folder))
    settings, records, problem = _run_progress(folder / "run")
    if problem:
        return False, problem
    loss = _last(records, "val_loss")
    if not math.isfinite(loss):
        return False, said("command.loss_not_finite", path=str(folder / "run"), loss=str(loss))
    steps = max(r["step"] for r in records if isinstance(r.get("step"), int))
    return True, said("command.trained", steps=steps, loss=f"{loss:.3f}", perplexity=f"{math.exp(loss):.1f}")


def _seq2seq(folder: Path) -> tuple[bool, Said]:
    settings, records, problem = _run_progress(folder)
    if problem:
        return False, problem
    exact, loss = _last(records, "val_exact_match"), _last(records, "val_loss")
    if exact is None:
        return False, said("command.not_seq2seq", folder=str(folder))
    return True, said("command.seq2seq_passed", loss=f"{loss:.3f}", exact=f"{100 * exact:.1f}")


def _paths(folder: Path) -> tuple[bool, Said]:
    from seqlab.runs.directory import read_json_object
    results = read_json_object(folder / "results.json", "the results of `seqlab paths`")
    if results is None:
        return False, said("command.missing", path=str(folder / "results.json"))
    tasks = results.get("tasks") if isinstance(results.get("tasks"), dict) else {}
    if results.get("status") != "completed" or not tasks:
        return False, said("command.paths_unfinished", path=str(folder / "results.json"),
                           status=str(results.get("status", "unfinished")))
    scores = []
    for task, data in tasks.items():
        archs = data.get("archs") if isinstance(data, dict) and isinstance(data.get("archs"), dict) else {}
        best = max(archs.items(), key=lambda kv: kv[1].get("exact_match", -1) if isinstance(kv[1], dict) else -1,
                   default=None)
        if best and isinstance(best[1], dict) and isinstance(best[1].get("exact_match"), (int, float)):
            scores.append(f"{task}: {best[0]} {100 * best[1]['exact_match']:.0f}%")
    return True, said("command.paths_passed", scores=", ".join(scores))


CHECKS: dict[str, Callable[[Path], tuple[bool, Said]]] = {
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
        return Evidence(False, folder, said("command.no_folder", folder=str(folder), command=step.command))
    try:
        passed, message = CHECKS[step.id](folder)
    except (OSError, ValueError) as error:
        passed, message = False, str(error)
    return Evidence(passed, folder, message)
