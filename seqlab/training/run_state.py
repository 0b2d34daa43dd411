"""The run state a checkpoint holds besides weights and optimizer, and putting it back on ``--resume``.

``extra`` of every checkpoint written by the training engine::

    config          the run's settings as a dict
    rng, sampler    Python/NumPy/torch RNG states and the batch sampler's state (exact resume)
    tokens          training tokens seen so far
    wallclock       seconds of training so far (continued across resumes; the time budget uses it)
    global_batch    examples per optimizer step (a resume with another one is announced)
    world_size      processes of the run
    schedule_steps  the step where the cosine ends; a resume keeps it unless --reschedule
    log_window      per-step losses since the last train record (the first record after a resume
                    averages the same steps as in an uninterrupted run)
    grad_scaler     the fp16 gradient scaler's state (fp16 runs only)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seqlab.runs.checkpoint import load_payload, read_checkpoint
from seqlab.settings import EngineSettings
from seqlab.training.rng_state import capture_rng_state, restore_rng_state


@dataclass
class RunState:
    step: int = 0                       # completed optimizer steps
    tokens_seen: int = 0
    elapsed_before: float = 0.0         # training seconds before this session
    schedule_steps: int | None = None   # the resumed run's cosine horizon (None: a new run)
    log_window: list[float] = field(default_factory=list)


def run_extra(*, config: EngineSettings, sampler_state: dict, tokens: int, wallclock: float,
              global_batch: int, world_size: int, schedule_steps: int,
              scaler: torch.amp.GradScaler | None, log_window: list[float] | None = None) -> dict[str, Any]:
    """The ``extra`` dict of a checkpoint (see the module docstring); ``sampler_state`` is the batch
    generator's ``bit_generator.state`` to resume from."""
    extra = {"config": config.to_dict(), "rng": capture_rng_state(), "sampler": sampler_state,
             "tokens": tokens, "wallclock": wallclock, "global_batch": global_batch, "world_size": world_size,
             "schedule_steps": schedule_steps, "log_window": [float(v) for v in log_window or []]}
    if scaler is not None:
        extra["grad_scaler"] = scaler.state_dict()
    return extra


def restore_run(latest: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                sampler: np.random.Generator, scaler: torch.amp.GradScaler | None, *, global_batch: int,
                say: Callable[[str], None], check: Callable[[dict, Path], None] | None = None,
                config: EngineSettings | None = None, total_steps: int | None = None) -> RunState:
    """Load ``latest`` into the model, optimizer, sampler, RNGs and scaler; return the run's state.
    ``check(saved_config, latest)`` may refuse the resume first (settings that contradict the
    checkpoint); ``say`` tells the user where the run continues (and when its global batch or, given
    ``config``, its optimizer and schedule settings changed)."""
    if not latest.is_file():
        raise FileNotFoundError(f"--resume: {latest} does not exist (nothing to resume in {latest.parent.parent})")
    payload = read_checkpoint(latest)  # read once: weights, optimizer and the extra state
    extra = payload["extra"]
    if check is not None:
        check(extra.get("config") or {}, latest)
    state = RunState(int(payload["iteration"]), int(extra.get("tokens", 0)), float(extra.get("wallclock", 0.0)),
                     extra.get("schedule_steps"), [float(v) for v in extra.get("log_window", [])])
    if config is not None and total_steps is not None:
        check_work_left(config, state, total_steps)  # "nothing to do" is decided before anything is announced
    # the optimizer was built from this invocation's settings; load_state_dict would bring back the
    # saved run's betas, eps and weight decay while config.json records the new ones
    fresh = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    load_payload(payload, model, optimizer, source=latest)
    for group, hyper in zip(optimizer.param_groups, fresh):
        group.update(hyper)
    sampler.bit_generator.state = extra["sampler"]
    if "rng" in extra:
        restore_rng_state(extra["rng"])
    if scaler is not None and extra.get("grad_scaler"):
        scaler.load_state_dict(extra["grad_scaler"])
    if config is not None:
        changed = changed_optimizer_settings(extra.get("config") or {}, config)
        if changed:
            say(f"resume: {changed} now (the run trained with the old values up to step {state.step}; the optimizer "
                "and schedule use the new ones from here)")
        old_data, new_data = (extra.get("config") or {}).get("data_dir"), getattr(config, "data_dir", None)
        if old_data and new_data and os.path.abspath(old_data) != os.path.abspath(new_data):
            say(f"resume: --data-dir {new_data} now (the run trained on {old_data} up to step {state.step}); its "
                "batches and its val loss come from the new data from here")
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


def check_work_left(config: EngineSettings, state: RunState, total_steps: int) -> None:
    """A resumed run that is already at its last step (or out of time) is a clear error, raised
    before anything is written (config.json is not rewritten, nothing reports "completed")."""
    if state.step >= total_steps:
        budget = getattr(config, "token_budget", None)
        limit = (f"--max-steps is {config.max_steps}" if budget is None
                 else f"--token-budget {budget} ends at step {total_steps}")
        raise ValueError(f"nothing to do: the run is at step {state.step} and {limit} "
                         "(give a larger --max-steps to train on)")
    budget_s = config.time_budget_s
    if budget_s is not None and state.elapsed_before >= budget_s:
        raise ValueError(f"nothing to do: the run has trained {state.elapsed_before:.1f} s and "
                         f"--time-budget-s is {budget_s:g} (give a larger one to train on)")
