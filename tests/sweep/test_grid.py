"""Grid parsing (typed values, the Cartesian product, run names), its errors (each naming the key and
the value), and the three recipes checked against the numbers they promise."""

from __future__ import annotations

import doctest
import math

import pytest

import seqlab.sweep.divergence
import seqlab.sweep.grid
import seqlab.sweep.recipes
from seqlab.accounting.costs import count_parameters
from seqlab.lm.settings import TrainConfig
from seqlab.sweep.grid import (
    GridError,
    Variant,
    check_variants,
    grid_variants,
    parse_axis,
    parse_grid,
    run_name,
)
from seqlab.sweep.recipes import recipe_variants


@pytest.mark.parametrize("module", [seqlab.sweep.grid, seqlab.sweep.recipes, seqlab.sweep.divergence])
def test_the_docstring_examples_hold(module):
    assert doctest.testmod(module).failed == 0


def test_values_take_the_type_of_their_field():
    assert parse_axis("lr=1e-3,0.03").values == (0.001, 0.03)
    assert parse_axis("batch-size=16,2e2").values == (16, 200)  # dashes as on the command line; 2e2 is whole
    assert parse_axis("d_ff=none,128").values == (None, 128)
    assert parse_axis("compile=true,off").values == (True, False)
    assert parse_axis("norm=rmsnorm,none").values == ("rmsnorm", "none")
    assert all(type(v) is int for v in parse_axis("batch_size=16,2e2").values)


def test_the_grid_is_the_cartesian_product_in_grid_order():
    axes = parse_grid(["lr=1e-3,3e-3,1e-2", "batch_size=16,64", "norm=rmsnorm,none"])
    variants = grid_variants(axes)
    expected = []  # a plain nested loop: the first --grid varies slowest
    for lr in (1e-3, 3e-3, 1e-2):
        for batch in (16, 64):
            for norm in ("rmsnorm", "none"):
                expected.append({"lr": lr, "batch_size": batch, "norm": norm})
    assert [v.settings for v in variants] == expected
    assert [v.point for v in variants] == expected
    assert variants[0].name == "lr=1e-3,batch_size=16,norm=rmsnorm"
    assert variants[-1].name == "lr=0.01,batch_size=64,norm=none"
    assert len({v.name for v in variants}) == 12


def test_run_names_are_short_and_path_safe():
    assert run_name({"lr": 3e-4, "min_lr": 2.5e-5, "weight_decay": 0.1}) == "lr=3e-4,min_lr=2.5e-5,weight_decay=0.1"
    assert run_name({"data_dir": "data/ts"}) == "data_dir=data_ts"
    assert run_name({"token_budget": 327_680_000, "d_ff": None}) == "token_budget=327680000,d_ff=none"


@pytest.mark.parametrize("spec, words", [
    ("lrr=1e-3,3e-3", ["'lrr'", "did you mean lr"]),                       # an unknown key
    ("lr=1e-3,fast", ["lr takes a float", "'fast'"]),                       # a bad type
    ("batch_size=16,1.5", ["batch_size takes an integer", "'1.5'"]),
    ("lr=nan", ["lr takes a float", "'nan'"]),
    ("compile=maybe", ["compile takes true or false", "'maybe'"]),
    ("norm=rms", ["norm takes one of rmsnorm, none", "'rms'"]),
    ("lr=", ["list of values for lr is empty"]),                            # an empty list
    ("lr= ", ["list of values for lr is empty"]),
    ("lr=1e-3,,3e-3", ["value 2 of lr is empty"]),
    ("lr=1e-3,0.001", ["lr=1e-3 is given twice"]),
    ("out_dir=a,b", ["out_dir cannot be swept"]),
    ("resume=true", ["resume cannot be swept"]),
    ("lr", ["expected KEY=V1,V2"]),
])
def test_grid_errors_name_the_key_and_the_value(spec, words):
    with pytest.raises(GridError) as error:
        parse_axis(spec)
    message = str(error.value)
    assert message.startswith(f"--grid {spec}:")
    for word in words:
        assert word in message


def test_a_key_given_twice_is_an_error():
    with pytest.raises(GridError, match=r"--grid lr=3e-3: lr is already swept by --grid lr=1e-3"):
        parse_grid(["lr=1e-3", "batch_size=8", "lr=3e-3"])


def test_values_the_config_refuses_are_reported_before_training_naming_the_run():
    base = TrainConfig(data_dir="d")
    with pytest.raises(GridError, match=r"run lr=-1 \(lr=-1\): config lr=-1.0: must be > 0"):
        check_variants(base, grid_variants(parse_grid(["lr=1e-3,-1"])))
    with pytest.raises(GridError, match=r"run lr=1e-4 .*min_lr=0.001 is above lr=0.0001"):
        check_variants(TrainConfig(data_dir="d", min_lr=1e-3), grid_variants(parse_grid(["lr=1e-4,1e-2"])))
    twins = [Variant("a", {"lr": 1e-3}), Variant("a", {"lr": 2e-3})]
    with pytest.raises(GridError, match="share the directory name 'a'"):
        check_variants(base, twins)


def test_the_lr_recipe_spans_a_tenth_to_a_thousand_times_the_base_in_half_decades():
    base = TrainConfig(data_dir="d", lr=2e-3, min_lr=2e-4)
    variants = recipe_variants("lr", base)
    lrs = [v.settings["lr"] for v in variants]
    assert lrs[0] == pytest.approx(2e-4) and lrs[2] == pytest.approx(2e-3) and lrs[-1] == pytest.approx(2.0)
    steps = [math.log10(b / a) for a, b in zip(lrs, lrs[1:])]
    assert all(0.45 <= s <= 0.55 for s in steps), steps  # about half a decade each
    for v in variants:  # the cosine keeps its ratio, and every run's config is valid
        assert v.settings["min_lr"] == pytest.approx(v.settings["lr"] / 10)
        assert v.point == {"lr": v.settings["lr"]}
    check_variants(base, variants)


def test_the_batch_size_recipe_trains_every_run_on_the_base_runs_tokens():
    base = TrainConfig(data_dir="d", batch_size=32, context_length=64, max_steps=500)
    variants = recipe_variants("batch-size", base)
    assert [v.settings["batch_size"] for v in variants] == [1, 2, 8, 32, 128]
    tokens = 500 * 32 * 64
    for v in variants:
        config = TrainConfig(**{**base.to_dict(), **v.settings})
        assert config.total_steps() * config.tokens_per_step() == tokens
        assert config.total_steps() == 500 * 32 // v.settings["batch_size"]
    # with a time budget the seconds are what every run shares
    timed = recipe_variants("batch-size", TrainConfig(data_dir="d", batch_size=16, time_budget_s=60))
    assert [v.settings for v in timed] == [{"batch_size": b} for b in (1, 4, 16, 64)]


def test_the_ablations_recipe_is_the_baseline_and_four_ablations_at_equal_steps():
    base = TrainConfig(data_dir="d", d_model=64, max_steps=200)
    variants = recipe_variants("ablations", base)
    assert [v.name for v in variants] == ["baseline", "no-rmsnorm", "post-norm", "nope", "silu-ffn"]
    assert [v.settings for v in variants] == [{}, {"norm": "none"}, {"norm_position": "post"},
                                              {"positional": "nope"}, {"ffn": "silu", "d_ff": 288}]
    configs = [TrainConfig(**{**base.to_dict(), **v.settings}) for v in variants]
    assert {c.total_steps() for c in configs} == {200}
    # the SiLU network gets 3/2 of the SwiGLU width (default 192 at d_model 64, or as given), so both
    # models have the same parameters
    for sized, width in ((base, 288), (TrainConfig(data_dir="d", d_model=32, d_ff=100), 150),
                         (TrainConfig(data_dir="d", d_model=32), 96)):
        silu = next(v for v in recipe_variants("ablations", sized) if v.name == "silu-ffn")
        counts = [count_parameters(TrainConfig(**{**sized.to_dict(), **s}).model_config(256))["total"]
                  for s in ({}, silu.settings)]
        assert silu.settings == {"ffn": "silu", "d_ff": width} and counts[0] == counts[1]
    # an ablation the base already has is not run twice; a time budget is refused
    assert "nope" not in [v.name for v in recipe_variants("ablations", TrainConfig(data_dir="d", positional="nope"))]
    with pytest.raises(GridError, match="equal steps.*--time-budget-s 60"):
        recipe_variants("ablations", TrainConfig(data_dir="d", time_budget_s=60))


def test_a_grid_key_the_recipe_already_sets_is_refused(tmp_path):
    from seqlab.sweep.runner import plan_sweep

    with pytest.raises(GridError, match="--recipe lr already sets lr"):
        plan_sweep(TrainConfig(data_dir=str(tmp_path)), tmp_path / "s", grid=["lr=1e-3"], recipe="lr")
    plan = plan_sweep(TrainConfig(data_dir=str(tmp_path)), tmp_path / "s", grid=["batch_size=8,16"], recipe="ablations")
    assert len(plan.variants) == 10 and plan.variants[1].name == "baseline,batch_size=16"
    assert plan.variants[3].settings == {"norm": "none", "batch_size": 16} and plan.axes == ["ablation", "batch_size"]
