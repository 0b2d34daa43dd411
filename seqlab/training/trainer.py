"""``seqlab train``'s loop: the training engine (:mod:`seqlab.training.engine`) with the
language-model task (:mod:`seqlab.training.lm_task`).

    result = train(TrainConfig(data_dir="data/ts", out_dir="runs/ts", max_steps=1000))

:class:`Trainer` is the engine for a :class:`~seqlab.training.config.TrainConfig`; see the engine
for how a step, a resume and a stop work.
"""

from __future__ import annotations

import time
from typing import Callable

from seqlab.training.config import TrainConfig
from seqlab.training.engine import Engine
from seqlab.training.guards import NonFiniteLossError
from seqlab.training.lm_task import LanguageModelTask
from seqlab.training.result import TrainResult

__all__ = ["NonFiniteLossError", "Trainer", "TrainResult", "train"]


class Trainer(Engine):
    """The engine training a Transformer LM as ``config`` says (see :class:`~seqlab.training.engine.Engine`)."""

    def __init__(self, config: TrainConfig, *, step_callbacks: list[Callable] | None = None,
                 clock: Callable[[], float] = time.perf_counter, say: Callable[[str], None] | None = None):
        super().__init__(LanguageModelTask(config), step_callbacks=step_callbacks, clock=clock, say=say)

    @property
    def data(self):
        return self.task.data

    @property
    def model_config(self):
        return self.task.model_config

    def evaluate(self) -> float:
        """Mean validation loss over eval_batches global batches (:mod:`seqlab.training.evaluation`)."""
        return self.evaluate_metrics()["val_loss"]


def train(config: TrainConfig, *, step_callbacks: list[Callable] | None = None,
          say: Callable[[str], None] | None = None) -> TrainResult:
    """Train (or resume) the run described by ``config``; see :class:`Trainer`."""
    return Trainer(config, step_callbacks=step_callbacks, say=say).run()
