"""What a checkpoint holds besides weights and optimizer: the state a resume continues from.

``TrainState`` is exactly what the engine saves in a checkpoint's ``extra`` and restores on
``--resume``; readers (the campaign loop, the explorer) use it instead of the checkpoint's keys::

    state = read_train_state("runs/a/checkpoints/latest.pt")
    state.step, state.tokens, state.elapsed        # 1200, 9830400, 312.5

Keys of ``extra`` (older checkpoints may lack the later ones; they read as the defaults)::

    sampler         the batch generator's bit_generator.state (exact resume)
    tokens          training tokens seen so far
    wallclock       seconds of training so far, continued across resumes
    log_window      per-step losses since the last train record
    schedule_steps  the step where the cosine ends (the horizon); a resume keeps it unless --reschedule
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainState:
    step: int = 0                        # completed optimizer steps (the checkpoint's "iteration")
    tokens: int = 0                      # training tokens seen
    elapsed: float = 0.0                 # training seconds so far
    sampler: dict[str, Any] | None = None  # the batch generator's state (None: a new run)
    log_window: list[float] = field(default_factory=list)
    horizon: int | None = None           # the schedule's last step (None: a new run)

    def to_extra(self) -> dict[str, Any]:
        """The checkpoint ``extra`` entries of this state."""
        return {"sampler": self.sampler, "tokens": int(self.tokens), "wallclock": float(self.elapsed),
                "log_window": [float(v) for v in self.log_window], "schedule_steps": self.horizon}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> TrainState:
        """The state of a checkpoint's payload (``{"iteration", "extra", ...}``)."""
        extra = payload.get("extra") or {}
        return cls(step=int(payload.get("iteration", 0)), tokens=int(extra.get("tokens", 0)),
                   elapsed=float(extra.get("wallclock", 0.0)), sampler=extra.get("sampler"),
                   log_window=[float(v) for v in extra.get("log_window", [])],
                   horizon=extra.get("schedule_steps"))


def read_train_state(checkpoint: str | Path) -> TrainState:
    """The :class:`TrainState` saved in ``checkpoint`` (errors name the file)."""
    from seqlab.runs.checkpoint import read_checkpoint

    return TrainState.from_payload(read_checkpoint(Path(checkpoint), mmap=True))  # mapped: no weights read
