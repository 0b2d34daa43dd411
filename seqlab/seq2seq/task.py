"""The seq2seq task of ``seqlab seq2seq train``: an encoder-decoder on (source, target) pairs, run by
the training engine (:mod:`seqlab.training.engine`), which gives it everything ``seqlab train`` has
(precision, compile, DDP, accumulation, time budget, guards, exact resume, the run lock, ...).

Teacher forcing: the decoder reads ``BOS + target`` and learns to predict ``target + EOS`` (see
:mod:`seqlab.seq2seq.data`); the loss is the mean cross-entropy over real (non-PAD) target tokens,
so micro-batches are weighted by their target tokens. Each evaluation scores the first
``eval_batches`` x (global batch) validation pairs: teacher-forced loss and accuracy, and the exact
match (and BLEU, for text) of their greedy translations; ``target_exact_match`` ends the run early.

Run directory (the run format, :mod:`seqlab.runs`)::

    RUN/config.json            {"kind": "seq2seq", "settings", "model": Seq2SeqConfig fields, "data":
                                task, vocabulary sizes, pair counts and fingerprint} (seqlab.runs.config)
    RUN/vocab.json             {"source": ..., "target": ...} (see seqlab.seq2seq.vocab)
    RUN/checkpoints/latest.pt  model, optimizer, step, batch-sampler and RNG state (atomic)
    RUN/log.jsonl, RUN/loss_curve.png

    result = train(Seq2SeqTrainConfig(task="dates", out_dir="runs/dates", target_exact_match=0.99))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seqlab.runs.config import RunConfig, read_run_config, write_run_config
from seqlab.runs.directory import write_vocab_json
from seqlab.runs.kinds import Kind
from seqlab.runtime import autocast_context
from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import PAD_ID
from seqlab.seq2seq.data import Example, Seq2SeqBatch, collate, prepare_data, unknown_characters
from seqlab.seq2seq.evaluation import (
    evaluate_translations,
    is_text_task,
    teacher_forced_loss,
)
from seqlab.seq2seq.loading import read_vocabs
from seqlab.seq2seq.settings import FIXED_ON_RESUME, Seq2SeqTrainConfig
from seqlab.training.engine import Engine
from seqlab.training.result import TrainResult
from seqlab.training.task import Batch, Drawn, EvalContext, Facts, Output, Task


class Seq2SeqTask(Task):
    kind, ignore_index = Kind.SEQ2SEQ, PAD_ID
    keep_step_checkpoints = False  # small models: latest.pt only
    config: Seq2SeqTrainConfig

    def prepare(self, say: Callable[[str], None]) -> None:
        cfg, run = self.config, Path(self.config.out_dir)
        saved_data: dict[str, Any] = {}
        if cfg.resume and (run / "config.json").is_file():
            saved = read_run_config(run)
            self.check_resume(saved.settings, run / "config.json")
            saved_data = saved.data
        self.data = prepare_data(cfg, read_vocabs(run) if cfg.resume else None)
        for problem in self.data.problems[:10]:
            say(f"skipped {problem}")
        if self.data.dropped:
            say(f"left out {self.data.dropped} pair(s) longer than context_length={self.data.context_length} tokens")
        if cfg.resume:
            self._check_resumed_data(run, saved_data, say)
        self.model_config = cfg.model_config(self.data.src_vocab.size, self.data.tgt_vocab.size,
                                             self.data.context_length)

    def _check_resumed_data(self, run: Path, saved: dict[str, Any], say: Callable[[str], None]) -> None:
        """Characters the saved vocabulary lacks are refused; pairs that changed are announced."""
        unknown = unknown_characters(self.data)
        if unknown:
            side, text, missing = unknown[0]
            raise ValueError(f"--resume: {len(unknown)} pair text(s) hold characters the run's vocabulary "
                             f"({run / 'vocab.json'}) never saw, e.g. {missing!r} in the {side} {text!r}; they "
                             "would be read as UNK. Start a new run on these pairs (--overwrite or another --out), "
                             "which builds its vocabulary from them")
        if saved.get("fingerprint") not in (None, self.data.fingerprint):
            say(f"resume: the pairs differ from those the run started with ({saved.get('train_pairs')} + "
                f"{saved.get('valid_pairs')} then, {len(self.data.train_pairs)} + {len(self.data.valid_pairs)} now); "
                "training goes on with the new pairs, and its validation pairs (so the logged exact match) change")

    def check_resume(self, saved: dict[str, Any], checkpoint: Path) -> None:
        before = Seq2SeqTrainConfig.from_saved(saved, source=str(checkpoint), notes=[]) if saved else None
        for name in FIXED_ON_RESUME if before is not None else ():
            was, now = getattr(before, name), getattr(self.config, name)
            if was != now:
                raise ValueError(f"--resume: the run was trained with {name}={was!r} ({checkpoint}) but this resume "
                                 f"asks for {name}={now!r}; a resumed run keeps its data and model settings: drop "
                                 "that setting, or start a new run (--overwrite or another --out)")

    def build_model(self, device: torch.device | str) -> torch.nn.Module:
        return build_model(self.model_config, device=device)

    def draw(self, sampler: np.random.Generator, rows: int, *, pin_memory: bool = False) -> Drawn[list[Example]]:
        examples = self.data.train_examples
        chosen = [examples[i] for i in sampler.integers(0, len(examples), rows)]
        return Drawn(chosen, rows, sum(len(target) + 1 for _, target in chosen), pinned=pin_memory)  # + EOS

    def select(self, drawn: Drawn[list[Example]], rows: slice, device: torch.device) -> Batch[Seq2SeqBatch]:
        """The rows padded into one host buffer (page-locked when ``drawn.pinned``), copied at once."""
        batch = collate(drawn.data[rows], device=device, pin_memory=drawn.pinned)
        return Batch(batch, batch.target_tokens)

    def forward(self, model: torch.nn.Module, batch: Batch[Seq2SeqBatch]) -> Output:
        b = batch.inputs
        hidden = model(b.src, b.tgt_in, b.src_mask, b.tgt_mask, return_hidden=True)
        return Output(hidden, model.lm_head.weight, b.tgt_out)

    def facts(self, global_batch: int) -> Facts:
        examples = self.data.train_examples
        mean = sum(len(t) + 1 for _, t in examples) / len(examples)
        return Facts(model=self.config.arch, data=str(self.config.task or self.config.pairs),
                     examples=len(self.data.train_pairs), tokens_per_step=global_batch * mean)

    def flops_per_token(self) -> float:
        """The usual 6 x parameters per trained token (an estimate: it leaves out attention scores)."""
        return 6.0 * sum(p.numel() for p in self.build_model("meta").parameters())

    def evaluate(self, model: torch.nn.Module, where: EvalContext) -> dict[str, float]:
        cfg, data = self.config, self.data
        count = cfg.eval_batches * where.global_batch
        loss, accuracy = teacher_forced_loss(model, data.valid_examples[:count], batch_size=max(cfg.batch_size, 256),
                                             device=where.device, precision=where.precision)
        with autocast_context(where.precision, where.device):
            scores = evaluate_translations(model, data.valid_pairs[:count], data.src_vocab, data.tgt_vocab,
                                           device=where.device, with_bleu=self._bleu)
        metrics = {"val_loss": loss, "val_token_accuracy": accuracy, "val_exact_match": scores.exact_match}
        if scores.bleu is not None:
            metrics["val_bleu"] = scores.bleu
        return metrics

    @property
    def _bleu(self) -> bool:
        try:
            import sacrebleu  # noqa: F401
        except ImportError:
            return False
        return is_text_task(self.config)

    def early_stop(self, metrics: dict[str, float]) -> str | None:
        target = self.config.target_exact_match
        return "target reached" if target is not None and metrics["val_exact_match"] >= target else None

    def write_run_files(self, run_dir: Path, *, world_size: int, total_steps: int, parameters: int) -> None:
        cfg, data = self.config, self.data
        settings = {**cfg.to_dict(), "parameters": parameters, "world_size": world_size, "total_steps": total_steps}
        facts = {"task": cfg.task, "pairs": cfg.pairs, "tokenize": cfg.tokenize, "tokenizer": cfg.tokenizer,
                 "vocab": {"kind": data.src_vocab.kind, "source_size": data.src_vocab.size,
                           "target_size": data.tgt_vocab.size},
                 "train_pairs": len(data.train_pairs), "valid_pairs": len(data.valid_pairs),
                 "dropped_too_long": data.dropped, "fingerprint": data.fingerprint}
        write_run_config(run_dir, RunConfig(Kind.SEQ2SEQ, settings, asdict(self.model_config), facts))
        if not cfg.resume:
            write_vocab_json(run_dir, {"source": data.src_vocab.to_dict(), "target": data.tgt_vocab.to_dict()})


def train(config: Seq2SeqTrainConfig, *, step_callbacks: list[Callable] | None = None,
          say: Callable[[str], None] | None = None) -> TrainResult:
    """Train (or resume) the seq2seq run described by ``config`` (see :class:`Seq2SeqTask` and the
    engine, :class:`seqlab.training.engine.Engine`)."""
    return Engine(Seq2SeqTask(config), step_callbacks=step_callbacks, say=say).run()
