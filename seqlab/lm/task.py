"""The language-model task of ``seqlab train``: a TransformerLM on windows of a prepared token split.

Each example is a window of ``context_length + 1`` tokens at a random position of train.npy: the
model reads the first ``context_length`` and predicts the next token at every position. Evaluation
is the mean loss over ``eval_batches`` fixed validation batches (:mod:`seqlab.lm.evaluation`).
The run keeps a copy of the data's tokenizer in RUN/tokenizer, which ``seqlab generate`` reads.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from seqlab.accounting.costs import training_step_flops
from seqlab.lm.data import PreparedData, sample_windows
from seqlab.lm.evaluation import validation_loss
from seqlab.lm.settings import TrainConfig
from seqlab.model import TransformerLM
from seqlab.runs.config import write_run_config
from seqlab.runs.directory import copy_tokenizer
from seqlab.runs.kinds import Kind
from seqlab.tokenizer.files import TOKENIZER_FILES
from seqlab.training.engine import Engine
from seqlab.training.result import TrainResult
from seqlab.training.task import Batch, Drawn, EvalContext, Facts, Output, Task


class LanguageModelTask(Task):
    kind = Kind.LM
    config: TrainConfig

    def prepare(self, say: Callable[[str], None]) -> None:
        cfg = self.config
        if not cfg.data_dir:
            raise ValueError("config: data_dir is required (a directory made by `seqlab prepare`)")
        self.data = PreparedData.open(cfg.data_dir, cfg.vocab_size)
        self.model_config = cfg.model_config(self.data.vocab_size)
        self.data.check_context_length(cfg.context_length)

    def build_model(self, device: torch.device | str) -> TransformerLM:
        return TransformerLM.from_config(self.model_config, device=device)

    def resume_data_note(self, saved: dict, step: int) -> str | None:
        old, new = saved.get("data_dir"), self.config.data_dir
        if old and new and os.path.abspath(old) != os.path.abspath(new):
            return (f"resume: --data-dir {new} now (the run trained on {old} up to step {step}); its "
                    "batches and its val loss come from the new data from here")
        return None

    def step_limit(self, total_steps: int) -> str:
        budget = self.config.token_budget
        if budget is None:
            return super().step_limit(total_steps)
        return f"--token-budget {budget} ends at step {total_steps}"

    def draw(self, sampler: np.random.Generator, rows: int, *, pin_memory: bool = False) -> Drawn[torch.Tensor]:
        """``rows`` windows of context_length + 1 tokens, one (rows, T + 1) tensor."""
        T = self.config.context_length
        return Drawn(sample_windows(self.data.train, rows, T, generator=sampler, pin_memory=pin_memory),
                     rows, rows * T, pinned=pin_memory)

    def select(self, drawn: Drawn[torch.Tensor], rows: slice,
               device: torch.device) -> Batch[tuple[torch.Tensor, torch.Tensor]]:
        """One copy to the device; inputs and targets are two views of the copied windows."""
        windows = drawn.data[rows].to(device, non_blocking=True)
        return Batch((windows[:, :-1], windows[:, 1:]), windows.shape[0] * (windows.shape[1] - 1))

    def forward(self, model: torch.nn.Module, batch: Batch[tuple[torch.Tensor, torch.Tensor]]) -> Output:
        inputs, targets = batch.inputs
        return Output(model(inputs, return_hidden=True), model.lm_head.weight, targets)

    def facts(self, global_batch: int) -> Facts:
        return Facts(model="transformer", data=str(self.config.data_dir), examples=len(self.data.train),
                     tokens_per_step=global_batch * self.config.context_length)

    def flops_per_token(self) -> float:
        T = self.config.context_length
        return training_step_flops(self.model_config, T, 1) / T

    def evaluate(self, model: torch.nn.Module, where: EvalContext) -> dict[str, float]:
        cfg = self.config
        loss = validation_loss(model, self.data.valid, batches=cfg.eval_batches, global_batch=where.global_batch,
                               context_length=cfg.context_length, seed=cfg.seed, rows=where.rows,
                               precision=where.precision, device=where.device)
        return {"val_loss": loss}

    def write_run_files(self, run_dir: Path, *, world_size: int, total_steps: int, parameters: int) -> None:
        write_run_files(self.config, self.model_config, world_size=world_size, total_steps=total_steps)


def write_run_files(config: TrainConfig, model_config, *, world_size: int, total_steps: int) -> Path:
    """Create RUN (config.out_dir), write config.json and copy the data's tokenizer; return RUN.

    A resumed run keeps the tokenizer it already has. Both writes are atomic: the tokenizer files
    (:data:`~seqlab.tokenizer.files.TOKENIZER_FILES`) are copied into a new folder that replaces
    RUN/tokenizer whole, so there is never a moment without a tokenizer or with a mix of two.
    """
    run_dir = Path(config.out_dir)
    write_run_config(run_dir, config.run_config(model_config, world_size=world_size, total_steps=total_steps))
    source = Path(config.data_dir) / "tokenizer"
    if source.is_dir() and not ((run_dir / "tokenizer").exists() and config.resume):
        copy_tokenizer(source, run_dir, TOKENIZER_FILES)
    return run_dir



class Trainer(Engine):
    """The engine training a Transformer LM as ``config`` says (see :class:`~seqlab.training.engine.Engine`)."""

    def __init__(self, config: TrainConfig, *, step_callbacks: list[Callable] | None = None,
                 clock: Callable[[], float] = time.perf_counter, say: Callable[[str], None] | None = None,
                 eval_hooks: list[Callable] | None = None):
        super().__init__(LanguageModelTask(config), step_callbacks=step_callbacks, clock=clock, say=say,
                         eval_hooks=eval_hooks)

    def prepare(self) -> None:
        super().prepare()
        if self.config.track_heads:  # the head scores join every evaluation (seqlab.lm.telemetry)
            from seqlab.lm.telemetry import head_score_hook

            model_config = self.task.model_config
            self.eval_hooks.append(head_score_hook(model_config.vocab_size, model_config.context_length))

    @property
    def data(self):
        return self.task.data

    @property
    def model_config(self):
        return self.task.model_config

    def evaluate(self) -> float:
        """Mean validation loss over eval_batches global batches (:mod:`seqlab.lm.evaluation`)."""
        return self.evaluate_metrics()["val_loss"]


def train(config: TrainConfig, *, step_callbacks: list[Callable] | None = None,
          say: Callable[[str], None] | None = None, eval_hooks: list[Callable] | None = None) -> TrainResult:
    """Train (or resume) the run described by ``config``; see :class:`Trainer` (``eval_hooks``:
    see :class:`~seqlab.training.engine.Engine`; ``config.track_heads`` adds the head scores')."""
    return Trainer(config, step_callbacks=step_callbacks, say=say, eval_hooks=eval_hooks).run()
