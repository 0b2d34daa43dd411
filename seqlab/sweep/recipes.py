"""The three experiments of CS336 assignment 1 as sweeps around a base config (``--recipe``).

``lr``
    The peak learning rate times 1/10, 1/3, 1, 10/3, ... up to 1000 (half decades, rounded to two
    significant digits): from clearly too small to past the edge of divergence, so the figure shows
    the U-shape and where it ends. Small models tolerate surprisingly large rates (a 2-layer,
    d_model 64 model on the built-in stories first diverges at about 3), so the grid climbs far; a
    run that diverges stops at once, so the runs past the edge cost little. An explicit ``min_lr``
    is scaled with the rate (the cosine keeps its ratio).

``batch-size``
    1, then the base batch size times 1/16, 1/4, 1 and 4 (whole numbers, each once), all at the
    base run's number of *tokens*: a run with a four times larger batch takes a quarter of the
    steps (``token_budget``), unless the base trains for a time budget, which is then the same
    for every run. The learning rate stays the base one; sweep it too with ``--grid lr=...``.

``ablations``
    The base model and the four ablations of the assignment at equal steps: ``no-rmsnorm``
    (``norm=none``), ``post-norm`` (``norm_position=post``), ``nope`` (``positional=nope``) and
    ``silu-ffn`` (``ffn=silu`` with ``d_ff`` 3/2 of the SwiGLU width, given or default, so the
    two-matrix SiLU network has exactly the parameters of the three-matrix SwiGLU one; CS336's
    ``4 * d_model`` is this for a SwiGLU width of ``8/3 * d_model``). An ablation the base
    already has is left out. A time budget would give the runs unequal steps, so it is refused.

Example, around the default learning rate 3e-3::

    >>> from seqlab.training import TrainConfig
    >>> [v.name for v in recipe_variants("lr", TrainConfig(data_dir="d"))]
    ['lr=3e-4', 'lr=1e-3', 'lr=3e-3', 'lr=0.01', 'lr=0.03', 'lr=0.1', 'lr=0.3', 'lr=1', 'lr=3']
    >>> [v.name for v in recipe_variants("batch-size", TrainConfig(data_dir="d", batch_size=32))]
    ['batch_size=1', 'batch_size=2', 'batch_size=8', 'batch_size=32', 'batch_size=128']
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
    variants = []
    for factor in LR_FACTORS:
        lr = _round(base.lr * factor)
        settings: dict[str, Any] = {"lr": lr}
        if base.min_lr is not None:
            settings["min_lr"] = min(lr, base.min_lr * lr / base.lr)
        variants.append(Variant(f"lr={format_value(lr)}", settings, {"lr": lr}))
    return variants


def batch_size_variants(base: TrainConfig) -> list[Variant]:
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
