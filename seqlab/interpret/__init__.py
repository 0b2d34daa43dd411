"""Information flow inside every seqlab model, measured through the models' own taps
(seqlab.model.taps): cached activations, the logit lens, direct logit attribution, activation
patching, attention knockout, head roles and dependencies, each written once for a language model
and every encoder-decoder (``families``: one small adapter per family).

Modules, one concept each: ``inputs`` (what every measurement checks, and the default target),
``families`` (the adapters, and an encoder-decoder's default target ``greedy_target``), ``tapped``
(``run_with_cache``), ``lens``, ``attribution``, ``patching``, ``edge_knockout`` (``knockout``: a
module named like its function would shadow it in this package), ``heads``, ``dependencies``,
``notes`` (saturated and float32-resolution notes, colour scales with a floor), ``cost`` (the work of
a request, before it runs), ``figures`` (heatmap PNGs) and ``cli`` (``seqlab interpret``). Names
load on first use (seqlab/lazy.py).
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.interpret.attribution": ("Attribution", "direct_logit_attribution"),
    "seqlab.interpret.cost": ("Cost", "CostLimitError", "estimate"),
    "seqlab.interpret.dependencies": ("Dependencies", "MEASURES", "token_dependencies"),
    "seqlab.interpret.edge_knockout": ("Knockout", "knockout"),
    "seqlab.interpret.families": ("family", "greedy_target"),
    "seqlab.interpret.heads": ("CONVENTIONS", "ROLES", "ROLE_THRESHOLDS", "convert_scores", "head_roles",
                               "head_scores", "repeated_tokens"),
    "seqlab.interpret.lens": ("LogitLens", "logit_lens"),
    "seqlab.interpret.notes": ("Note",),
    "seqlab.interpret.patching": ("WHERE", "Patching", "logit_difference", "patch"),
    "seqlab.interpret.tapped": ("run_with_cache",),
})
