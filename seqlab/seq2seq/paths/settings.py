"""What the information-paths experiment trains and tests: the tasks, the architectures, the budget
(:class:`PathsSettings`, with the defaults :data:`FULL` and the ``--fast`` smoke settings
:data:`FAST`). Standard library only."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

PATHS_TASKS: tuple[str, ...] = ("copy", "reverse", "dates")
ARCHS_COMPARED: tuple[str, ...] = ("rnn", "rnn-attention", "transformer")
TEST_SEED_OFFSET = 2_000_003
TRAIN_SHARE = 2 / 3  # of the remaining budget per run; the rest pays for evaluation and figures


@dataclass(frozen=True)
class PathsSettings:
    """The experiment's budget. ``reference_d_model`` sizes the Transformer; the RNNs get the
    d_model that brings their parameter count closest to it (within 10%). ``budget_minutes`` caps
    the training time of one invocation (each run trains at most its share of the time left); None
    trains every run for its full number of steps, however long that takes."""

    train_lengths: tuple[int, int] = (1, 10)
    test_max_len: int = 16
    train_size: int = 20000
    test_per_length: int = 50
    dates_test_size: int = 500
    reference_d_model: int = 32
    layers: int = 2
    num_heads: int = 4
    symbol_steps: int = 600
    dates_steps: int = 1200
    batch_size: int = 64
    lr: float = 3e-3
    warmup_steps: int = 50
    budget_minutes: float | None = 9.0  # time caps keep the whole experiment near this (goal: <= 10 min)

    def to_json(self) -> dict[str, Any]:
        """The settings as results.json keeps them (tuples become lists)."""
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}


FULL = PathsSettings()
FAST = PathsSettings(train_lengths=(1, 6), test_max_len=9, train_size=1000, test_per_length=10, dates_test_size=60,
                     reference_d_model=16, layers=1, num_heads=4, symbol_steps=40, dates_steps=40, batch_size=32,
                     lr=1e-2, warmup_steps=5, budget_minutes=1.0)


def model_names(tasks: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """(task, arch) of every model of ``tasks``, in the order they are trained."""
    return [(task, arch) for task in tasks for arch in ARCHS_COMPARED]


def run_name(task: str, arch: str) -> str:
    """The run directory of one model under OUT/runs/."""
    return f"{task}_{arch}"
