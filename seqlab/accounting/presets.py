"""Named model shapes (``seqlab accounting --preset NAME``, ModelConfig fields) and the default
assumptions of the training-time question.

Plain data with no imports, so the CLI can list the names and defaults without loading torch.
"""

from __future__ import annotations

from typing import Any

DEFAULT_MEMORY_GB = 80.0
# The assignment's question: an A100 at 19.5 TFLOP/s float32, 50% MFU, 400K steps of batch 1024.
DEFAULT_PEAK_FLOPS = 19.5e12
DEFAULT_MFU = 0.5
DEFAULT_TRAIN_STEPS = 400_000
DEFAULT_TRAIN_BATCH = 1024

PRESETS: dict[str, dict[str, Any]] = {
    # GPT-2 shapes as in the assignment: d_ff = 4·d_model, SwiGLU, untied head.
    "gpt2-small": dict(vocab_size=50257, context_length=1024, num_layers=12, d_model=768,
                       num_heads=12, d_ff=3072),
    "gpt2-medium": dict(vocab_size=50257, context_length=1024, num_layers=24, d_model=1024,
                        num_heads=16, d_ff=4096),
    "gpt2-large": dict(vocab_size=50257, context_length=1024, num_layers=36, d_model=1280,
                       num_heads=20, d_ff=5120),
    "gpt2-xl": dict(vocab_size=50257, context_length=1024, num_layers=48, d_model=1600,
                    num_heads=25, d_ff=6400),
    "tinystories": dict(vocab_size=10000, context_length=256, num_layers=4, d_model=512,
                        num_heads=16, d_ff=1344, rope_theta=10000.0),
    # Small Llama-family shapes with grouped-query attention and tied embeddings, as published in
    # their config.json files (Llama 3.2's rope scaling changes no count).
    "smollm-135m": dict(vocab_size=49152, context_length=2048, num_layers=30, d_model=576,
                        num_heads=9, num_kv_heads=3, d_ff=1536, rope_theta=10000.0, tie_embeddings=True),
    "llama3.2-1b": dict(vocab_size=128256, context_length=131072, num_layers=16, d_model=2048,
                        num_heads=32, num_kv_heads=8, d_ff=8192, rope_theta=500000.0, tie_embeddings=True),
}
