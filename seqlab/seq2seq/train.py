"""Deprecated: ``seqlab.seq2seq.train`` was split by concern (read for one more release).

Each old name warns and resolves to its new home::

    Seq2SeqTrainConfig                         seqlab.seq2seq.train_config
    train                                      seqlab.seq2seq.task (the training engine + Seq2SeqTask)
    Seq2SeqTrainResult                         seqlab.training.result.TrainResult
    load_run, read_vocabs                      seqlab.seq2seq.loading
    LoadedRun                                  seqlab.seq2seq.loading.Seq2SeqRun
    translate_ids, decode_limit                seqlab.seq2seq.decoding
    evaluate_translations, masked_cross_entropy, is_text_task   seqlab.seq2seq.evaluation
    EvalResult                                 seqlab.seq2seq.evaluation.TranslationScores
    validation_loss                            seqlab.seq2seq.evaluation.teacher_forced_loss
    load_pairs, build_vocabs, prepare_data, Seq2SeqData, VALID_SEED_OFFSET   seqlab.seq2seq.dataset

``Seq2SeqTrainer`` is gone: ``seqlab.training.engine.Engine(Seq2SeqTask(config))`` runs the loop.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

MOVED = {
    "Seq2SeqTrainConfig": ("seqlab.seq2seq.train_config", "Seq2SeqTrainConfig"),
    "train": ("seqlab.seq2seq.task", "train"),
    "Seq2SeqTrainResult": ("seqlab.training.result", "TrainResult"),
    "load_run": ("seqlab.seq2seq.loading", "load_run"),
    "read_vocabs": ("seqlab.seq2seq.loading", "read_vocabs"),
    "LoadedRun": ("seqlab.seq2seq.loading", "Seq2SeqRun"),
    "translate_ids": ("seqlab.seq2seq.decoding", "translate_ids"),
    "decode_limit": ("seqlab.seq2seq.decoding", "decode_limit"),
    "evaluate_translations": ("seqlab.seq2seq.evaluation", "evaluate_translations"),
    "masked_cross_entropy": ("seqlab.seq2seq.evaluation", "masked_cross_entropy"),
    "is_text_task": ("seqlab.seq2seq.evaluation", "is_text_task"),
    "EvalResult": ("seqlab.seq2seq.evaluation", "TranslationScores"),
    "validation_loss": ("seqlab.seq2seq.evaluation", "teacher_forced_loss"),
    "load_pairs": ("seqlab.seq2seq.dataset", "load_pairs"),
    "build_vocabs": ("seqlab.seq2seq.dataset", "build_vocabs"),
    "prepare_data": ("seqlab.seq2seq.dataset", "prepare_data"),
    "Seq2SeqData": ("seqlab.seq2seq.dataset", "Seq2SeqData"),
    "VALID_SEED_OFFSET": ("seqlab.seq2seq.dataset", "VALID_SEED_OFFSET"),
}


def __getattr__(name: str) -> Any:
    if name == "Seq2SeqTrainer":
        raise AttributeError("Seq2SeqTrainer is gone: seqlab.training.engine.Engine(seqlab.seq2seq.task.Seq2SeqTask("
                             "config)) runs seq2seq training (seqlab.seq2seq.task.train(config) for short)")
    if name not in MOVED:
        raise AttributeError(f"module 'seqlab.seq2seq.train' has no attribute {name!r}")
    module, new = MOVED[name]
    warnings.warn(f"seqlab.seq2seq.train.{name} moved to {module}.{new}; the old path works for one more release",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), new)


def __dir__() -> list[str]:
    return sorted(MOVED)
