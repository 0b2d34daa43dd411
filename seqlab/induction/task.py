"""The repeated-random-tokens task of ``seqlab induction``, trained on the shared engine.

Every example has ``2 * half`` random ids ending in a segment of ``n`` ids repeated once (a random
prefix, the segment, the segment again); ``n``, the repeat distance, is drawn per example in
``min_repeat .. half``, so no fixed positional offset finds the copy: only content does (the token
that followed the previous occurrence of the current token). Before the repeat nothing can be
predicted (loss about ln(vocab)), nor can the repeat's first token; the rest of it can be copied.
The models: a :class:`~seqlab.model.TransformerLM` (attention-only with ``ffn="none"``, or with
MLPs) and :class:`LSTMLM` (the seq2seq RNNs' recurrent cells as a language model).

At every evaluation (``eval_batches`` fixed batches from ``seed + 1``) the engine's eval hooks add
to ``val_loss`` the :func:`in_context_metrics` and, for a Transformer, the head scores of
:mod:`seqlab.lm.telemetry` (``heads/{score}/L{l}H{h}``, on ``half`` random ids repeated once):

    loss_first_half   mean loss on the targets before the repeat starts: nothing to copy
    loss_repeat       mean loss on the repeat's copyable targets (all but its first token)
    in_context_loss   loss_repeat - loss_first_half: how much the context lowers the loss (< 0)
    repeat_accuracy   share of the copyable targets predicted exactly (argmax)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from seqlab.model import ModelConfig, TransformerLM
from seqlab.model.activations import log_softmax
from seqlab.model.embedding import Embedding
from seqlab.model.linear import Linear
from seqlab.model.loss import cross_entropy
from seqlab.model.recurrent import RecurrentLayer
from seqlab.runs.config import RunConfig, write_run_config
from seqlab.runs.kinds import Kind
from seqlab.settings import EngineSettings, setting
from seqlab.training.engine import Engine
from seqlab.training.result import TrainResult
from seqlab.training.task import Batch, Drawn, EvalContext, Facts, Output, Task

ARCHS = ("transformer", "lstm")


@dataclass
class RepeatTrainConfig(EngineSettings):
    """One model of the experiment: the task's size and the model's shape, and the engine's settings."""

    vocab_size: int = setting(32, "data", "random token ids 0..vocab_size-1")
    half: int = setting(16, "data", "half the example length, and the longest repeat distance")
    min_repeat: int = setting(4, "data", "the shortest repeat distance (each example draws one in min_repeat..half)")
    arch: str = setting("transformer", "model", "transformer | lstm", choices=ARCHS)
    d_model: int = setting(64, "model", "width (the LSTM's hidden size)")
    num_layers: int = setting(2, "model", "blocks (Transformer) or stacked cells (LSTM)")
    num_heads: int = setting(4, "model", "attention heads")
    ffn: str = setting("none", "model", "none (attention-only) | swiglu | silu", choices=("none", "swiglu", "silu"))

    POSITIVE: ClassVar[tuple[str, ...]] = (*EngineSettings.POSITIVE, "vocab_size", "half", "d_model", "num_layers",
                                           "num_heads")

    def validate(self) -> None:
        super().validate()
        if not 2 <= self.min_repeat <= self.half:
            raise ValueError(f"config min_repeat={self.min_repeat}: must be in 2..half ({self.half}), so the repeat "
                             "has tokens to copy")

    def model_config(self) -> ModelConfig:
        return ModelConfig(vocab_size=self.vocab_size, context_length=2 * self.half, d_model=self.d_model,
                           num_layers=self.num_layers, num_heads=self.num_heads, ffn=self.ffn)


class LSTMLM(nn.Module):
    """An LSTM language model: embedding, ``num_layers`` stacked LSTM cells, output layer.
    ``forward(ids, return_hidden=True)`` gives the output layer's input, as TransformerLM's does."""

    def __init__(self, vocab_size: int, hidden_size: int, num_layers: int = 1, device=None):
        super().__init__()
        self.token_embeddings = Embedding(vocab_size, hidden_size, device=device)
        self.rnn = RecurrentLayer("lstm", hidden_size, hidden_size, num_layers, device=device)
        self.lm_head = Linear(hidden_size, vocab_size, device=device)

    def forward(self, ids: torch.Tensor, *, return_hidden: bool = False) -> torch.Tensor:
        hidden = self.rnn(self.token_embeddings(ids))[0]
        return hidden if return_hidden else self.lm_head(hidden)


def repeat_batch(generator: np.random.Generator, rows: int, half: int, vocab_size: int, *,
                 min_repeat: int | None = None, distance: int | None = None) -> torch.Tensor:
    """(rows, 2 * half + 1) int64: per row 2 * half random ids ending in a segment repeated once,
    and in the last column its repeat distance n (``distance``, or drawn in min_repeat..half)."""
    ids = generator.integers(0, vocab_size, size=(rows, 2 * half), dtype=np.int64)
    if distance is None:
        n = generator.integers(min_repeat or half, half + 1, size=rows)
    else:
        n = np.full(rows, distance)
    columns = np.arange(2 * half)
    second = columns[None, :] >= (2 * half - n)[:, None]  # the repeat: a copy of the n ids before it
    source = np.where(second, columns[None, :] - n[:, None], columns[None, :])
    ids = np.take_along_axis(ids, source, axis=1)
    return torch.from_numpy(np.concatenate([ids, n[:, None]], axis=1))


def in_context_metrics(logits: torch.Tensor, batch: torch.Tensor) -> dict[str, torch.Tensor]:
    """The module docstring's in-context metrics of logits (rows, 2h-1, vocab) predicting the ids
    of a :func:`repeat_batch` ``batch`` (rows, 2h + 1), as scalar tensors (read them at once)."""
    ids, n = batch[:, :-1], batch[:, -1:]
    targets = ids[:, 1:]
    position = torch.arange(1, ids.shape[1], device=ids.device)[None, :]  # the target's position
    start = ids.shape[1] - n                                              # the repeat's first position
    before, copyable = position < start, position > start
    losses = -log_softmax(logits.float()).gather(-1, targets[..., None])[..., 0]
    first = losses[before].mean()
    repeat = losses[copyable].mean()
    accuracy = (logits.argmax(-1) == targets)[copyable].float().mean()
    return {"loss_first_half": first, "loss_repeat": repeat, "in_context_loss": repeat - first,
            "repeat_accuracy": accuracy}


class RepeatTask(Task):
    kind = Kind.LM
    config: RepeatTrainConfig
    keep_step_checkpoints = False  # latest.pt only: the experiment resumes from it

    def prepare(self, say: Callable[[str], None]) -> None:
        cfg = self.config
        self.model_config = cfg.model_config() if cfg.arch == "transformer" else None
        self.eval_ids = repeat_batch(np.random.default_rng(cfg.seed + 1), cfg.eval_batches * cfg.batch_size,
                                     cfg.half, cfg.vocab_size, min_repeat=cfg.min_repeat)

    def build_model(self, device: torch.device | str) -> nn.Module:
        cfg = self.config
        if cfg.arch == "lstm":
            return LSTMLM(cfg.vocab_size, cfg.d_model, cfg.num_layers, device=device)
        return TransformerLM.from_config(self.model_config, device=device)

    def draw(self, sampler: np.random.Generator, rows: int, *, pin_memory: bool = False) -> Drawn[torch.Tensor]:
        cfg = self.config
        ids = repeat_batch(sampler, rows, cfg.half, cfg.vocab_size, min_repeat=cfg.min_repeat)[:, :-1]
        return Drawn(ids.pin_memory() if pin_memory else ids, rows, rows * (ids.shape[1] - 1), pinned=pin_memory)

    def select(self, drawn: Drawn[torch.Tensor], rows: slice, device: torch.device) -> Batch:
        ids = drawn.data[rows].to(device, non_blocking=True)
        return Batch((ids[:, :-1], ids[:, 1:]), ids.shape[0] * (ids.shape[1] - 1))

    def forward(self, model: nn.Module, batch: Batch) -> Output:
        inputs, targets = batch.inputs
        return Output(model(inputs, return_hidden=True), model.lm_head.weight, targets)

    def facts(self, global_batch: int) -> Facts:
        cfg = self.config
        return Facts(model=cfg.arch, data=f"random tokens repeated (vocab {cfg.vocab_size}, half {cfg.half})",
                     examples=0, tokens_per_step=global_batch * (2 * cfg.half - 1))

    def evaluate(self, model: nn.Module, where: EvalContext) -> dict[str, float]:
        ids = self.eval_ids[:, :-1].to(where.device)
        return {"val_loss": float(cross_entropy(model(ids[:, :-1]).float(), ids[:, 1:]))}

    def write_run_files(self, run_dir: Path, *, world_size: int, total_steps: int, parameters: int) -> None:
        cfg = self.config
        model = asdict(self.model_config) if self.model_config is not None else {}  # the LSTM: its settings say it
        settings = {**cfg.to_dict(), "world_size": world_size, "total_steps": total_steps, "parameters": parameters}
        data = {"task": "repeated random tokens", "vocab_size": cfg.vocab_size, "half": cfg.half,
                "min_repeat": cfg.min_repeat}
        write_run_config(run_dir, RunConfig(Kind.LM, settings, model, data))


def in_context_hook(task: RepeatTask) -> Callable[[nn.Module, EvalContext], dict[str, float]]:
    """An engine eval hook: :func:`in_context_metrics` on the task's fixed evaluation batches."""
    def hook(model: nn.Module, where: EvalContext) -> dict[str, float]:
        batch = task.eval_ids.to(where.device)
        metrics = in_context_metrics(model(batch[:, :-2]), batch)
        values = torch.stack(list(metrics.values())).tolist()  # one device read
        return dict(zip(metrics, values))
    return hook


def train(config: RepeatTrainConfig, *, step_callbacks: list[Callable] | None = None,
          say: Callable[[str], None] | None = None, eval_hooks: list[Callable] | None = None) -> TrainResult:
    """Train (or resume) one model of the experiment; at every evaluation the in-context metrics
    and, for a Transformer, the head scores join the log."""
    from seqlab.lm.telemetry import head_score_hook

    task = RepeatTask(config)
    hooks = [in_context_hook(task)]
    if config.arch == "transformer":
        hooks.append(head_score_hook(config.vocab_size, 2 * config.half, seq_len=config.half, batches=8,
                                     seed=config.seed + 2))
    return Engine(task, step_callbacks=step_callbacks, say=say, eval_hooks=[*hooks, *(eval_hooks or [])],
                  clock=time.perf_counter).run()


def load_trained(run_dir: str | Path, config: RepeatTrainConfig) -> nn.Module:
    """The model of a finished run (checkpoints/latest.pt) in eval mode on the CPU."""
    from seqlab.runs.checkpoint import load_weights, read_checkpoint

    payload = read_checkpoint(Path(run_dir) / "checkpoints" / "latest.pt")
    task = RepeatTask(config)
    task.prepare(lambda message: None)
    model = task.build_model("cpu")
    load_weights(model, payload, f"{run_dir}: checkpoint weights do not match the experiment's model")
    return model.eval()


def accuracy_by_distance(model: nn.Module, distances: list[int], *, half: int, vocab_size: int, rows: int,
                         seed: int) -> dict[str, float]:
    """Repeat accuracy at each repeat distance d (examples as in training, the repeat d tokens
    back), {str(d): accuracy}; rows examples per distance, all distances in one batch."""
    generator = np.random.default_rng(seed + 1000)
    batches = [repeat_batch(generator, rows, half, vocab_size, distance=d) for d in distances]
    batch = torch.cat(batches)
    with torch.no_grad():
        logits = model(batch[:, :-2])
    return {str(d): float(in_context_metrics(logits[i * rows:(i + 1) * rows], part)["repeat_accuracy"])
            for i, (d, part) in enumerate(zip(distances, batches))}
