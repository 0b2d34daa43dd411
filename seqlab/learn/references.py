"""The NumPy exercises' reference modules by exercise name, and ``helper``: a lab function the checks reuse.

Every exercise names its reference in its step folder (step.toml's ``reference = "package.module.function"``
or check.py's ``reference()``); ``seqlab.learn.catalog.reference`` finds it.
"""

from __future__ import annotations

import importlib

# exercise name -> module that defines the function of that name
REFERENCE_MODULES: dict[str, str] = {
    "scalar_recurrence": "seqlab.labs.recurrence",
    "scalar_recurrence_backward": "seqlab.labs.recurrence",
    "rnn_step": "seqlab.labs.rnn",
    "rnn_forward": "seqlab.labs.rnn",
    "rnn_bptt": "seqlab.labs.rnn",
    "softmax_cross_entropy": "seqlab.labs.rnn",
    "truncated_bptt": "seqlab.labs.rnn",
    "clip_global_norm": "seqlab.labs.clipping",
    "lstm_cell_forward": "seqlab.labs.lstm",
    "lstm_bptt": "seqlab.labs.lstm",
    "gru_cell_forward": "seqlab.labs.gru",
    "gru_bptt": "seqlab.labs.gru",
    "causal_mask": "seqlab.labs.attention",
    "attention": "seqlab.labs.attention",
    "attention_backward": "seqlab.labs.attention",
    "multihead_attention": "seqlab.labs.attention",
    "choose_merge": "seqlab.tokenizer.merges",
    "train_bpe": "seqlab.tokenizer",
}


def reference(name: str):
    """The reference function (or class) of the exercise ``name`` (of this table: seqlab.learn.catalog's
    ``reference`` finds every exercise's)."""
    return getattr(importlib.import_module(REFERENCE_MODULES[name]), name)


def helper(module: str, name: str):
    """A lab helper the mutants and checks reuse (rnn_forward, lstm_forward, ...)."""
    return getattr(importlib.import_module(module), name)
