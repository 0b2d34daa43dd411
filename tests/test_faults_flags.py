"""Issue 13, item 6: every float flag of every command refuses nan and inf when it is parsed."""

from __future__ import annotations

import pytest

from seqlab.cli import main
from seqlab.lm.settings import TrainConfig, config_from_argv

FLAGS = [
    (["train", "--data-dir", "d", "--lr"], "--lr"),
    (["train", "--data-dir", "d", "--weight-decay"], "--weight-decay"),
    (["train", "--data-dir", "d", "--min-lr"], "--min-lr"),  # an optional float field
    (["generate", "--run", "r", "--temperature"], "--temperature"),
    (["generate", "--run", "r", "--top-p"], "--top-p"),
    (["accounting", "--preset", "gpt2-small", "--memory-gb"], "--memory-gb"),
    (["accounting", "--preset", "gpt2-small", "--mfu"], "--mfu"),
    (["demo", "--minutes"], "--minutes"),
]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize("argv,flag", FLAGS, ids=[flag + ":" + argv[0] for argv, flag in FLAGS])
def test_nonfinite_float_flags_are_refused_when_parsed(argv, flag, value, capsys):
    with pytest.raises(SystemExit) as stopped:
        main([*argv[:-1], f"{flag}={value}"])  # "=" so that "-inf" is not read as an option
    assert stopped.value.code == 2  # argparse's usage error, before any work
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and f"'{value}' is not a finite number" in err


def test_finite_values_still_parse_and_a_toml_nan_is_refused(tmp_path):
    assert config_from_argv(["--lr", "3e-4", "--min-lr", "none"]).lr == 3e-4
    assert config_from_argv(["--min-lr", "1e-5"]).min_lr == 1e-5
    toml = tmp_path / "c.toml"
    toml.write_text("[optimizer]\nlr = nan\n")
    with pytest.raises(ValueError, match=r"config lr=nan: must be a finite number"):
        config_from_argv(["--config", str(toml)])
    with pytest.raises(ValueError, match=r"config eps=inf: must be a finite number"):
        TrainConfig(eps=float("inf"))
