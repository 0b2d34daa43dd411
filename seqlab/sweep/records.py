"""What a run directory says about its run, read from its files only (config.json through
:mod:`seqlab.runs.config`, log.jsonl, and the ``sweep_outcome.json`` a sweep adds when a run
ends): the table row and loss curves of ``seqlab sweep`` and ``seqlab compare``.

A run's status: ``finished`` (its last step, its time budget or a seq2seq --target-exact-match
reached, or its outcome file says so), ``diverged`` / ``failed`` (its outcome file says so: a
non-finite or rising loss, out of memory), ``unfinished`` (its log stops before the last step),
``pending`` (no log yet) or ``unknown`` (a log, but no config.json giving its length).

Example (a run trained for 40 of 40 steps, evaluated at 20 and 40)::

    record = read_run("runs/a")
    record.status, record.final_val_loss, record.best_val_step   # ("finished", 2.31, 40)
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seqlab.runs.config import RunConfig, read_run_config
from seqlab.runs.directory import read_json_object
from seqlab.runs.kinds import CONFIG_FILE, Kind
from seqlab.runs.log import read_jsonl
from seqlab.runs.status import read_status

OUTCOME_FILE = "sweep_outcome.json"
SWEEP_FILE = "sweep.json"
STATUSES = ("finished", "diverged", "failed", "unfinished", "pending", "unknown")


@dataclass
class RunRecord:
    name: str
    run_dir: str
    status: str
    reason: str | None = None                  # why a run diverged (or finished early)
    group: str = ""                            # what its loss is comparable with (:func:`comparison_group`)
    settings: dict[str, Any] = field(default_factory=dict)   # what a sweep changed for this run
    point: dict[str, Any] = field(default_factory=dict)      # its value on each swept axis
    steps: int | None = None                   # the last logged step (a checkpoint may be a few steps on)
    total_steps: int | None = None
    parameters: int | None = None
    final_val_loss: float | None = None
    best_val_loss: float | None = None
    best_val_step: int | None = None
    final_train_loss: float | None = None      # the last log interval's mean
    tokens: int | None = None
    wall_time_s: float | None = None           # training seconds, across resumes
    tokens_per_second: float | None = None     # median over the log intervals (training steps only)
    mfu: float | None = None                   # model FLOP utilisation, where the device's peak is known
    # the curves: (step, wallclock seconds, tokens, loss) per record
    train: list[tuple[int, float, int | None, float]] = field(default_factory=list)
    val: list[tuple[int, float, int | None, float]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Everything but the curves (a row of sweep.json)."""
        row = asdict(self)
        del row["train"], row["val"]
        return row

    @property
    def label(self) -> str:
        return self.name + (" (diverged)" if self.status == "diverged" else "")


def sweep_runs(path: str | Path) -> list[tuple[str, Path]] | None:
    """(name, run directory) of every run of the sweep directory ``path`` (its sweep.json lists them),
    None when ``path`` is not a sweep's directory. A damaged sweep.json raises ValueError naming it."""
    path = Path(path)
    sweep = read_json_object(path / SWEEP_FILE) if path.is_dir() else None
    if sweep is None:
        return None
    runs = sweep.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in runs):
        raise ValueError(f"{path / SWEEP_FILE}: \"runs\" must be a list of objects with a \"name\"")
    return [(r["name"], path / r["name"]) for r in runs]


def write_outcome(run_dir: Path, status: str, *, reason: str | None, peak_flops: float | None,
                  device: str | None) -> None:
    """RUN/sweep_outcome.json (atomic): how the sweep's run ended, read back by :func:`read_run`."""
    from seqlab.atomic import atomic_write_text
    from seqlab.jsonfile import dumps

    outcome = {"status": status, "reason": reason, "peak_flops": peak_flops, "device": device}
    run_dir.mkdir(parents=True, exist_ok=True)  # a run that failed in its setup never made its folder
    atomic_write_text(run_dir / OUTCOME_FILE, dumps(outcome, indent=2) + "\n")


def read_config_or_empty(run_dir: Path) -> RunConfig | None:
    """RUN/config.json through the run format (:func:`seqlab.runs.config.read_run_config`: damage
    is an error naming the file and line, an old layout is converted); None when the run has none yet."""
    if not (run_dir / CONFIG_FILE).is_file():
        return None
    return read_run_config(run_dir)


def read_log(run_dir: Path) -> list[dict[str, Any]]:
    """RUN/log.jsonl's records through the run format (:func:`seqlab.runs.log.read_jsonl`); a torn
    last line, left by a kill, is dropped quietly."""
    path = run_dir / "log.jsonl"
    if not path.is_file():
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return read_jsonl(path, drop_torn_last_line=True)


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _curve(records: list[dict[str, Any]], key: str) -> list[tuple[int, float, int | None, float]]:
    points = []
    for r in records:
        loss = _number(r.get(key))
        if loss is not None and isinstance(r.get("step"), int):
            points.append((r["step"], float(r.get("wallclock") or 0.0), r.get("tokens"), loss))
    return points


def _model_costs(config: RunConfig) -> tuple[int | None, float | None]:
    """(parameters, training FLOPs per token) of a language model's config.json "model"."""
    if config.kind is not Kind.LM or not config.model:
        return None, None
    try:
        from seqlab.accounting.costs import count_parameters, training_step_flops

        model = config.model
        context = int(model["context_length"])
        return count_parameters(model)["total"], training_step_flops(model, context, 1) / context
    except (KeyError, TypeError, ValueError):
        return None, None


def _target_reached(config: RunConfig, records: list[dict[str, Any]]) -> bool:
    """A seq2seq run that stopped because its last evaluation reached --target-exact-match."""
    target = _number(config.settings.get("target_exact_match"))
    evals = [r for r in records if _number(r.get("val_exact_match")) is not None]
    return target is not None and bool(evals) and evals[-1]["val_exact_match"] >= target


def _total_steps(config: RunConfig | None) -> int | None:
    if config is None:
        return None
    total = config.settings.get("total_steps", config.settings.get("max_steps"))
    return total if isinstance(total, int) else None


def _status(config: RunConfig | None, steps: int | None, wallclock: float | None) -> str:
    if steps is None:
        return "pending"
    total = _total_steps(config)
    if total is None:
        return "unknown"
    budget = config.settings.get("time_budget_s")
    if steps >= total or (isinstance(budget, (int, float)) and wallclock is not None and wallclock >= budget):
        return "finished"
    return "unfinished"


def comparison_group(config: RunConfig, run_dir: Path) -> str:
    """What a run's validation loss can be compared with, in words: runs of one kind (a language model
    or a seq2seq model), one vocabulary and one validation set. Example: "language model, 320-token
    vocabulary, validation data /data/ts (valid.npy, 4,287 tokens)". A loss in nats per token of one
    vocabulary says nothing about a loss over another's tokens, or over other data."""
    if config.kind is Kind.SEQ2SEQ:
        vocab = config.data.get("vocab") if isinstance(config.data.get("vocab"), dict) else {}
        task = config.data.get("task") or config.data.get("pairs")
        return (f"seq2seq, {vocab.get('kind', '?')} vocabularies of {vocab.get('source_size', '?')}/"
                f"{vocab.get('target_size', '?')}, data {task} (fingerprint {config.data.get('fingerprint', '?')})")
    vocab = config.model.get("vocab_size", config.settings.get("vocab_size", "?"))
    data_dir = config.settings.get("data_dir")
    if not isinstance(data_dir, str):
        return f"language model, {vocab}-token vocabulary, unknown validation data"
    where = Path(data_dir)  # as training read it
    try:
        meta = read_json_object(where / "meta.json") or {}
    except ValueError:
        meta = {}
    valid = (meta.get("splits") or {}).get("valid") if isinstance(meta.get("splits"), dict) else None
    if isinstance(valid, dict) and isinstance(valid.get("tokens"), int):
        source = Path(str(valid.get("source", "valid"))).name
        return f"language model, {vocab}-token vocabulary, validation data {source} ({valid['tokens']:,} tokens)"
    return f"language model, {vocab}-token vocabulary, validation data {where.resolve()}"


def read_run(run_dir: str | Path, *, name: str | None = None, settings: dict[str, Any] | None = None,
             point: dict[str, Any] | None = None) -> RunRecord:
    """The :class:`RunRecord` of ``run_dir`` (``name`` defaults to the directory's name); a damaged
    config.json or log line raises ValueError naming the file and line."""
    run_dir = Path(run_dir)
    record = RunRecord(name or run_dir.name, str(run_dir), "pending", settings=dict(settings or {}),
                       point=dict(point or {}))
    config = read_config_or_empty(run_dir)
    records = read_log(run_dir)
    record.train, record.val = _curve(records, "train_loss"), _curve(records, "val_loss")
    record.parameters, flops_per_token = _model_costs(config) if config is not None else (None, None)
    record.total_steps = _total_steps(config)
    stepped = [r for r in records if isinstance(r.get("step"), int)]
    if stepped:
        last = stepped[-1]
        record.steps = last["step"]
        record.wall_time_s = _number(last.get("wallclock"))
        record.tokens = next((r["tokens"] for r in reversed(stepped) if isinstance(r.get("tokens"), int)), None)
    if record.val:
        record.final_val_loss = record.val[-1][3]
        best = min(record.val, key=lambda p: p[3])
        record.best_val_loss, record.best_val_step = best[3], best[0]
    if record.train:
        record.final_train_loss = record.train[-1][3]
    rates = [r["tokens_per_second"] for r in records if (_number(r.get("tokens_per_second")) or 0) > 0]
    record.tokens_per_second = statistics.median(rates) if rates else None
    record.status = _status(config, record.steps, record.wall_time_s)
    if record.status == "unfinished" and config is not None and _target_reached(config, records):
        record.status, record.reason = "finished", "reached --target-exact-match"
    record.group = comparison_group(config, run_dir) if config is not None and (config.settings or config.model) else ""
    outcome = read_json_object(run_dir / OUTCOME_FILE)
    said = outcome.get("status") if outcome is not None else None
    said = "finished" if read_status(said).finished else said  # a run's Status word: "completed", "time budget"
    if outcome is not None and said in STATUSES:
        record.status, record.reason = said, outcome.get("reason")
        peak = _number(outcome.get("peak_flops"))
        world = config.settings.get("world_size") if config is not None else None
        world = world if isinstance(world, int) else 1
        if peak and flops_per_token and record.tokens_per_second:
            record.mfu = flops_per_token * record.tokens_per_second / (peak * world)
    return record
