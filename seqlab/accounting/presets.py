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
    # GPT-2 shapes as in the assignment: d_ff = 4·d_model, SwiGLU, untied head (so NOT GPT-2 itself:
    # see GPT2_PARAMETERS and preset_note).
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

# The parameters of OpenAI's GPT-2 models themselves (learned positions, GELU MLP, LayerNorm, output
# tied to the token embeddings), for the note that the gpt2-* presets are not those models.
GPT2_PARAMETERS = {"gpt2-small": 124_439_808, "gpt2-medium": 354_823_168, "gpt2-large": 774_030_080,
                   "gpt2-xl": 1_557_611_200}
PRESET_HELP = ("named model shapes; the gpt2-* presets take GPT-2's sizes (layers, d_model, heads, context, "
               "vocabulary) but build this toolkit's Llama-style model (RMSNorm, SwiGLU with d_ff = 4 d_model, "
               "RoPE, untied output layer), so they count more parameters than GPT-2: gpt2-small 190M (GPT-2 "
               "small: 124M), gpt2-xl 2.13B (GPT-2 XL: 1.56B)")


# The training budget a preset comes with, the default of `seqlab accounting --preset NAME`: CS336's
# TinyStories run is 40,000 steps of 32 sequences of 256 tokens = 327,680,000 tokens.
PRESET_BUDGETS: dict[str, dict[str, Any]] = {
    "tinystories": dict(steps=40_000, batch_size=32, source="CS336's TinyStories budget, 327.68M tokens"),
}


def training_budget(name: str | None, steps: int | None, batch_size: int | None) -> tuple[int, int, str | None]:
    """(steps, batch size, where the defaults came from) for the training-time estimate: the given
    values, else the preset's own budget (:data:`PRESET_BUDGETS`), else the generic defaults.

    >>> training_budget("tinystories", None, None)
    (40000, 32, "CS336's TinyStories budget, 327.68M tokens")
    """
    budget = PRESET_BUDGETS.get(name or "")
    if budget is None or (steps is not None and batch_size is not None):
        return (DEFAULT_TRAIN_STEPS if steps is None else steps,
                DEFAULT_TRAIN_BATCH if batch_size is None else batch_size, None)
    return (budget["steps"] if steps is None else steps, budget["batch_size"] if batch_size is None else batch_size,
            budget["source"])


def preset_note(name: str, parameters: int) -> str | None:
    """What a preset is, when its name could mislead: the gpt2-* presets are GPT-2's sizes in this
    toolkit's architecture, not GPT-2 (``parameters``: the preset's own count, for the comparison)."""
    if name not in GPT2_PARAMETERS:
        return None
    size = name.removeprefix("gpt2-").upper() if name == "gpt2-xl" else name.removeprefix("gpt2-")
    return (f"preset {name}: GPT-2 {size}'s sizes with this toolkit's Llama-style blocks (RMSNorm, SwiGLU "
            f"d_ff = 4 d_model, RoPE, untied output layer): {_millions(parameters)} parameters, not GPT-2 "
            f"{size}'s {_millions(GPT2_PARAMETERS[name])}")


def _millions(count: int) -> str:
    """190460160 -> '190M', 2127057600 -> '2.13B'."""
    return f"{count / 1e9:.2f}B" if count >= 1e9 else f"{count / 1e6:.0f}M"
