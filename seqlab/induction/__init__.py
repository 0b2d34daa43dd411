"""How a Transformer learns to copy (``seqlab induction``): attention-only Transformers of one and
two layers, one with MLPs, and an LSTM, on random tokens that repeat.

    from seqlab.induction import FAST, run_induction

    results = run_induction("induction_out", fast=True)
    results["models"]["attn2"]["final"]["induction"]     # the best layer-2 head's induction score

Modules: ``settings`` (what is trained: ``InductionSettings``, ``FULL``, ``FAST``, the models),
``task`` (the repeated-tokens task on the engine, the LSTM LM, the in-context metrics),
``experiment`` (the campaign: ``run_induction``), ``results`` (results.json and OUT's ownership),
``figures`` (induction.png), ``report`` (report.md). ``settings`` and ``results`` import neither
torch nor the engine, so the explorer reads results through them.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.induction.settings": ("FAST", "FULL", "MODELS", "InductionSettings"),
    "seqlab.induction.experiment": ("run_induction",),
    "seqlab.induction.results": ("read_results",),
    "seqlab.induction.task": ("LSTMLM", "RepeatTrainConfig", "in_context_metrics", "repeat_batch"),
})
