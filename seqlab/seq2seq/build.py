"""Build a seq2seq model from its config, count its parameters, and size architectures to match.

    config = Seq2SeqConfig("rnn-attention", src_vocab_size=40, tgt_vocab_size=16)
    model = build_model(config)                  # RNNSeq2Seq
    num_parameters(model)                        # each shared tensor counted once

`size_for_parameters` picks d_model so that different architectures have (about) the same
number of parameters: the paths experiment compares them at equal size.
"""

from __future__ import annotations

from dataclasses import replace

from torch import nn

from seqlab.seq2seq.base import Seq2SeqModel
from seqlab.seq2seq.config import ARCHS, Seq2SeqConfig

MAX_D_MODEL = 4096


def build_model(config: Seq2SeqConfig, *, device=None, dtype=None) -> Seq2SeqModel:
    """RNNSeq2Seq for "rnn"/"rnn-attention", TransformerSeq2Seq for "transformer"."""
    if not isinstance(config, Seq2SeqConfig):
        raise TypeError(f"build_model needs a Seq2SeqConfig, got {type(config).__name__}")
    if config.arch == "transformer":
        from seqlab.seq2seq.transformer import TransformerSeq2Seq

        return TransformerSeq2Seq.from_config(config, device=device, dtype=dtype)
    from seqlab.seq2seq.rnn import RNNSeq2Seq

    return RNNSeq2Seq(config, device=device, dtype=dtype)


def num_parameters(model: nn.Module) -> int:
    """Number of trainable numbers; a tensor shared by two modules (tied embeddings) counts once.
    (``seqlab.accounting.costs.count_parameters`` counts a Transformer LM's from its config.)"""
    return sum(p.numel() for p in model.parameters())



def _count_for(config: Seq2SeqConfig) -> int:
    return num_parameters(build_model(config, device="meta"))


def _d_model_step(config: Seq2SeqConfig) -> int:
    if config.arch != "transformer":
        return 2
    step = config.num_heads
    if config.positional == "rope":
        step *= 2  # even head size
    elif config.positional == "sinusoidal" and step % 2:
        step *= 2  # even d_model
    return step


def size_for_parameters(arch: str, target_params: int, base_config: Seq2SeqConfig,
                        tolerance: float = 0.10) -> Seq2SeqConfig:
    """base_config with `arch` and the d_model whose parameter count is closest to target_params.

    d_model moves in steps the architecture allows (a multiple of num_heads for the Transformer);
    every other field is kept (d_ff=None scales with d_model). Raises a ValueError if no d_model
    comes within `tolerance` (10%) of the target.
    Example: size_for_parameters("transformer", 100_000, Seq2SeqConfig("rnn", 20, 20)).
    """
    if arch not in ARCHS:
        raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
    if isinstance(target_params, bool) or not isinstance(target_params, int) or target_params <= 0:
        raise ValueError(f"target_params must be a positive integer, got {target_params!r}")
    step = _d_model_step(replace(base_config, arch=arch))

    def config_for(units: int) -> Seq2SeqConfig:
        return replace(base_config, arch=arch, d_model=units * step)

    # the count grows with d_model: bisect on the number of steps
    lo, hi = 1, MAX_D_MODEL // step
    while lo < hi:
        mid = (lo + hi) // 2
        if _count_for(config_for(mid)) < target_params:
            lo = mid + 1
        else:
            hi = mid
    candidates = [u for u in (lo - 1, lo) if u >= 1]
    best = min(candidates, key=lambda u: abs(_count_for(config_for(u)) - target_params))
    config, count = config_for(best), _count_for(config_for(best))
    if abs(count - target_params) > tolerance * target_params:
        raise ValueError(
            f"no d_model (step {step}) gives arch {arch!r} {target_params} parameters within "
            f"{tolerance:.0%}: the closest is d_model={config.d_model} with {count}; change the layer "
            "counts or the target"
        )
    return config
