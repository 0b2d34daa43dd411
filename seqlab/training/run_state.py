"""A checkpoint's ``extra`` as the engine writes it, and putting it back on ``--resume``.

``extra`` = :meth:`TrainState.to_extra` (sampler, tokens, wallclock, log_window, schedule_steps)
plus ``config`` (the run's settings), ``rng`` (Python/NumPy/torch states), ``global_batch``,
``world_size`` and, for fp16, ``grad_scaler``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seqlab.runs.checkpoint import load_payload, read_checkpoint
from seqlab.runs.state import TrainState
from seqlab.settings import EngineSettings
from seqlab.training.rng_state import capture_rng_state, restore_rng_state


def run_extra(*, config: EngineSettings, state: TrainState, global_batch: int | None, world_size: int,
              scaler: torch.amp.GradScaler | None) -> dict[str, Any]:
    """The ``extra`` dict of a checkpoint (see the module docstring)."""
    extra = {"config": config.to_dict(), "rng": capture_rng_state(), **state.to_extra(),
             "global_batch": global_batch, "world_size": world_size}
    if scaler is not None:
        extra["grad_scaler"] = scaler.state_dict()
    return extra


def restore_run(latest: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                sampler: np.random.Generator, scaler: torch.amp.GradScaler | None, *, global_batch: int,
                say: Callable[[str], None], check: Callable[[dict, Path], None] | None = None,
                config: EngineSettings | None = None,
                data_note: Callable[[dict, int], str | None] | None = None,
                work_left: Callable[[TrainState], None] | None = None) -> TrainState:
    """Load ``latest`` into the model, optimizer, sampler, RNGs and scaler; return the run's state.
    ``check(saved_config, latest)`` may refuse the resume first; ``say`` tells the user where the run
    continues, and what changed: the global batch, given ``config`` the optimizer and schedule
    settings, and ``data_note(saved_config, step)`` (the task's words when its data changed).
    ``work_left(state)`` may refuse a run with nothing left to do, before anything is announced."""
    if not latest.is_file():
        raise FileNotFoundError(f"--resume: {latest} does not exist (nothing to resume in {latest.parent.parent})")
    payload = read_checkpoint(latest)  # read once: weights, optimizer and the extra state
    extra = payload["extra"]
    saved_config = extra.get("config") or {}
    if check is not None:
        check(saved_config, latest)
    # the optimizer was built from this invocation's settings; load_state_dict would bring back the
    # saved run's betas, eps and weight decay while config.json records the new ones
    fresh = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    load_payload(payload, model, optimizer, source=latest)
    for group, hyper in zip(optimizer.param_groups, fresh):
        group.update(hyper)
    state = TrainState.from_payload(payload)
    if work_left is not None:
        work_left(state)  # "nothing to do" is decided before "resume: continuing" is said
    sampler.bit_generator.state = state.sampler
    if "rng" in extra:
        restore_rng_state(extra["rng"])
    if scaler is not None and extra.get("grad_scaler"):
        scaler.load_state_dict(extra["grad_scaler"])
    if config is not None:
        changed = changed_optimizer_settings(saved_config, config)
        if changed:
            say(f"resume: {changed} now (the run trained with the old values up to step {state.step}; the optimizer "
                "and schedule use the new ones from here)")
    note = data_note(saved_config, state.step) if data_note is not None else None
    if note:
        say(note)
    saved_batch = extra.get("global_batch")
    if saved_batch is not None and saved_batch != global_batch:
        say(f"resume: global batch changed from {saved_batch} to {global_batch} examples; "
            "batches will differ from the original run")
    say(f"resume: continuing from {latest} at step {state.step}")
    return state


OPTIMIZER_SETTINGS = ("lr", "min_lr", "beta1", "beta2", "eps", "weight_decay", "grad_clip", "warmup_steps")


def changed_optimizer_settings(saved: dict[str, Any], config: EngineSettings) -> str:
    """The optimizer and schedule settings a resume changes, for a note ("" when none); a resume may
    change them (e.g. a lower lr to go on), but it must say so.

    >>> from seqlab.lm.settings import TrainConfig
    >>> changed_optimizer_settings({"lr": 3e-3, "min_lr": None, "beta1": 0.9}, TrainConfig(lr=0.01))
    'lr 0.003 -> 0.01 (final lr 0.0003 -> 0.001)'
    >>> changed_optimizer_settings({"lr": 3e-3}, TrainConfig(lr=3e-3))
    ''
    """
    parts = []
    for name in OPTIMIZER_SETTINGS:
        if name in saved and saved[name] != getattr(config, name):
            parts.append(f"{name} {saved[name]:g} -> {getattr(config, name):g}" if None not in (
                saved[name], getattr(config, name)) else f"{name} {saved[name]} -> {getattr(config, name)}")
    if "lr" in saved and saved.get("min_lr") is None and config.min_lr is None and saved["lr"] != config.lr:
        parts[0] += f" (final lr {saved['lr'] / 10:g} -> {config.final_lr:g})"  # parts[0] is lr's
    return ", ".join(parts)


def check_work_left(config: EngineSettings, state: TrainState, total_steps: int, step_limit: str) -> None:
    """A resumed run that is already at its last step (or out of time) is a clear error, raised
    before anything is written. ``step_limit``: the task's words for what ends the run at
    ``total_steps`` (e.g. "--max-steps is 40")."""
    if state.step >= total_steps:
        raise ValueError(f"nothing to do: the run is at step {state.step} and {step_limit} "
                         "(give a larger --max-steps to train on)")
    budget_s = config.time_budget_s
    if budget_s is not None and state.elapsed >= budget_s:
        raise ValueError(f"nothing to do: the run has trained {state.elapsed:.1f} s and "
                         f"--time-budget-s is {budget_s:g} (give a larger one to train on)")
