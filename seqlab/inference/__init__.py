"""Using a trained model: sampling text (``generate``), held-out perplexity (``evaluate``),
loading models from runs and checkpoints (``load_model``) and looking inside the forward pass
(``trace_forward``: per-head attention weights and shapes).

Modules, one concept each: ``sampling`` (temperature, top-k, top-p), ``generate`` (decoding with a
KV cache and a sliding window), ``windows`` (per-row sliding windows of a batch), ``evaluate``
(perplexity over a token split), ``loading`` (reading checkpoints, rebuilding the model),
``inspect`` (attention weights, shapes, next-token candidates) and ``cli`` (``seqlab generate``,
``seqlab eval``).

Names load on first use (see seqlab/lazy.py), so ``seqlab --help`` does not import torch. Note that
``seqlab.inference.generate`` and ``seqlab.inference.evaluate`` are the *functions*; import from the
modules of the same names with ``from seqlab.inference.generate import ...``.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.inference.evaluate": ("EvalResult", "evaluate", "window_starts"),
    "seqlab.inference.generate": ("generate", "generate_stream"),
    "seqlab.inference.inspect": ("ForwardTrace", "attention_maps", "attention_weights", "next_token_candidates",
                                 "trace_forward"),
    "seqlab.inference.loading": (
        "LoadedModel",
        "check_vocabularies",
        "checkpoint_path",
        "load_model",
        "load_model_from_checkpoint",
        "read_checkpoint",
    ),
    "seqlab.inference.sampling": (
        "check_sampling_args",
        "next_token_distribution",
        "sample_next",
        "top_k_mask",
        "top_p_mask",
    ),
})
