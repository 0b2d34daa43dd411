"""Kept for the import path named in issue 6 (``seqlab.generate.generate``); the code lives in
``seqlab.inference`` (sampling.py, generate.py)."""

from seqlab.inference.generate import generate, generate_stream
from seqlab.inference.sampling import next_token_distribution, sample_next, top_k_mask, top_p_mask

__all__ = ["generate", "generate_stream", "next_token_distribution", "sample_next", "top_k_mask", "top_p_mask"]
