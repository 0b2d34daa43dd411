"""Using a trained language model: sampling text (``generate``: a KV cache, per-row sliding windows,
temperature, top-k, top-p). Loading one from a run (``load_model``), held-out perplexity
(``evaluate``) and a look inside its forward pass (``trace_forward``) sit a layer up, in
:mod:`seqlab.lm`.

Modules: ``sampling``, ``generate``, ``windows``. Names load on first use (see seqlab/lazy.py), so
``seqlab --help`` does not import torch. ``seqlab.inference.generate`` is the *function*; the module
of the same name is reached with ``from seqlab.inference.generate import ...``.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.inference.generate": ("generate", "generate_stream"),
    "seqlab.inference.sampling": (
        "check_sampling_args",
        "next_token_distribution",
        "sample_next",
        "top_k_mask",
        "top_p_mask",
    ),
    "seqlab.runs.checkpoint": ("checkpoint_path", "load_model_from_checkpoint", "read_checkpoint"),
})
