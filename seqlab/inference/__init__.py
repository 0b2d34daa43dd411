"""Using a trained model: sampling text (``generate``), held-out perplexity (``evaluate``) and
loading models from runs and checkpoints (``load_model``).

Modules, one concept each: ``sampling`` (temperature, top-k, top-p), ``generate`` (decoding with a
KV cache and a sliding window), ``evaluate`` (perplexity over a token split), ``loading`` (reading
checkpoints, rebuilding the model) and ``cli`` (``seqlab generate``, ``seqlab eval``).

Names load on first use (see seqlab/lazy.py), so ``seqlab --help`` does not import torch. Note that
``seqlab.inference.generate`` and ``seqlab.inference.evaluate`` are the *functions*; import from the
modules of the same names with ``from seqlab.inference.generate import ...``.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

_EXPORTS = {
    "EvalResult": "seqlab.inference.evaluate",
    "evaluate": "seqlab.inference.evaluate",
    "window_starts": "seqlab.inference.evaluate",
    "generate": "seqlab.inference.generate",
    "generate_stream": "seqlab.inference.generate",
    "LoadedModel": "seqlab.inference.loading",
    "checkpoint_path": "seqlab.inference.loading",
    "load_model": "seqlab.inference.loading",
    "load_model_from_checkpoint": "seqlab.inference.loading",
    "read_checkpoint": "seqlab.inference.loading",
    "check_sampling_args": "seqlab.inference.sampling",
    "next_token_distribution": "seqlab.inference.sampling",
    "sample_next": "seqlab.inference.sampling",
    "top_k_mask": "seqlab.inference.sampling",
    "top_p_mask": "seqlab.inference.sampling",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
