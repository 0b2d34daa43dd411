"""The language model family: a Transformer LM trained on a prepared token split.

Modules, one concept each, named as in :mod:`seqlab.seq2seq`: ``settings`` (``TrainConfig``),
``data`` (preparing and loading token splits, batches), ``stories`` and ``download`` (the built-in
and TinyStories texts), ``task`` (the engine's language-model task, ``Trainer``, ``train``),
``loading`` (a run's model and tokenizer), ``evaluation`` (validation loss, perplexity),
``inspection`` (attention weights, shapes, next-token candidates) and ``cli``.

    from seqlab.lm import TrainConfig, train, load_model
    train(TrainConfig(data_dir="data/ts", out_dir="runs/ts", max_steps=1000))
    loaded = load_model(run="runs/ts")

Names load on first use (see seqlab/lazy.py).
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.lm.settings": ("TrainConfig",),
    "seqlab.lm.data": ("PreparedData", "get_batch", "prepare", "read_meta", "sample_windows"),
    "seqlab.lm.task": ("LanguageModelTask", "Trainer", "train"),
    "seqlab.lm.loading": ("LoadedModel", "check_vocabularies", "load_model"),
    "seqlab.lm.evaluation": ("EvalResult", "evaluate", "validation_loss"),
    "seqlab.lm.inspection": ("ForwardTrace", "next_token_candidates", "trace_forward"),
})
