"""The three experiments of CS336 assignment 1 as sweeps around a base config (``--recipe``):

- ``lr``: the peak learning rate x1/10 to x1000 in half decades (two significant digits), far past
  the edge of divergence: small models tolerate rates near 3, and a diverged run stops at once;
- ``batch-size``: 1 and the base batch size x1/16, 1/4, 1 and 4, all at the base run's number of
  tokens (or its time budget);
- ``ablations``: the base model and the assignment's four, ``no-rmsnorm``, ``post-norm``, ``nope``
  and ``silu-ffn`` (as many parameters as SwiGLU), at equal steps.

Example, around the default learning rate 3e-3::

    >>> [v.name for v in recipe_variants("lr", TrainConfig(data_dir="d"))]
    ['lr=3e-4', 'lr=1e-3', 'lr=3e-3', 'lr=0.01', 'lr=0.03', 'lr=0.1', 'lr=0.3', 'lr=1', 'lr=3']
"""

from __future__ import annotations

from typing import Any

from seqlab.lm.settings import TrainConfig
from seqlab.model.config import default_d_ff
from seqlab.sweep.grid import GridError, Variant, format_value

RECIPES = ("lr", "batch-size", "ablations")
LR_FACTORS = (0.1, 1 / 3, 1.0, 10 / 3, 10.0, 100 / 3, 100.0, 1000 / 3, 1000.0)  # half decades, x1/10 .. x1000
BATCH_FACTORS = (1 / 16, 1 / 4, 1.0, 4.0)
# (name, field, value): the ablations of the assignment, named like `seqlab train`'s flags
ABLATIONS = (
    ("no-rmsnorm", "norm", "none"),
    ("post-norm", "norm_position", "post"),
    ("nope", "positional", "nope"),
    ("silu-ffn", "ffn", "silu"),
)


def _round(value: float) -> float:
    return float(f"{value:.2g}")


def lr_variants(base: TrainConfig) -> list[Variant]:
    """One run per factor of :data:`LR_FACTORS`; an explicit ``min_lr`` scales with the rate."""
    variants = []
    for factor in LR_FACTORS:
        lr = _round(base.lr * factor)
        settings: dict[str, Any] = {"lr": lr}
        if base.min_lr is not None:
            settings["min_lr"] = min(lr, base.min_lr * lr / base.lr)
        variants.append(Variant(f"lr={format_value(lr)}", settings, {"lr": lr}))
    return variants


def batch_size_variants(base: TrainConfig) -> list[Variant]:
    """Equal tokens (``token_budget``): a 4x batch takes 1/4 of the steps; the lr stays the base one."""
    sizes = sorted({1} | {max(1, round(base.batch_size * factor)) for factor in BATCH_FACTORS})
    tokens = None
    if base.time_budget_s is None:  # equal tokens: each run's steps follow from its batch size
        tokens = base.total_steps() * base.tokens_per_step()
    variants = []
    for size in sizes:
        settings: dict[str, Any] = {"batch_size": size}
        if tokens is not None:
            settings["token_budget"] = tokens
        variants.append(Variant(f"batch_size={size}", settings, {"batch_size": size}))
    return variants


def ablation_variants(base: TrainConfig) -> list[Variant]:
    """The baseline and each ablation the base is not already; a time budget is refused (unequal steps)."""
    if base.time_budget_s is not None:
        raise GridError(f"--recipe ablations compares the runs at equal steps, but --time-budget-s "
                        f"{base.time_budget_s:g} would stop each after its own number of steps; drop it "
                        "and give --max-steps or --token-budget")
    variants = [Variant("baseline", {}, {"ablation": "baseline"})]
    for name, key, value in ABLATIONS:
        if getattr(base, key) == value:
            continue  # the base already is this ablation
        settings: dict[str, Any] = {key: value}
        if key == "ffn":  # SwiGLU has three matrices, SiLU two: 3/2 of the width keeps the parameters
            settings["d_ff"] = round((base.d_ff or default_d_ff(base.d_model, base.ffn)) * 3 / 2)
        variants.append(Variant(name, settings, {"ablation": name}))
    return variants


def recipe_variants(recipe: str, base: TrainConfig) -> list[Variant]:
    """The runs of ``recipe`` (one of :data:`RECIPES`) around ``base``."""
    makers = {"lr": lr_variants, "batch-size": batch_size_variants, "ablations": ablation_variants}
    if recipe not in makers:
        raise GridError(f"--recipe {recipe}: unknown recipe; choose one of {', '.join(RECIPES)}")
    return makers[recipe](base)
