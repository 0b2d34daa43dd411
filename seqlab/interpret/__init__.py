"""Information flow inside a TransformerLM: cached activations, the logit lens, direct logit
attribution, activation patching, attention knockout, head roles and token dependencies.

Modules, one concept each: ``cache`` (``run_with_cache``: the forward re-executed from the
model's own submodules, keeping named activations), ``lens``, ``attribution``, ``patching``,
``edge_knockout`` (``knockout``: a module named like its function would shadow it in this package),
``heads``, ``dependencies``, ``figures`` (heatmap PNGs) and ``cli``
(``seqlab interpret``). Names load on first use (seqlab/lazy.py).
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.interpret.attribution": ("direct_logit_attribution",),
    "seqlab.interpret.cache": ("Cache", "run_with_cache"),
    "seqlab.interpret.dependencies": ("token_dependencies",),
    "seqlab.interpret.heads": ("ROLES", "ROLE_THRESHOLDS", "head_roles", "head_scores", "repeated_tokens"),
    "seqlab.interpret.edge_knockout": ("knockout",),
    "seqlab.interpret.lens": ("LogitLens", "logit_lens"),
    "seqlab.interpret.patching": ("WHERE", "logit_difference", "patch"),
})
