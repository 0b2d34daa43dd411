"""A sweep written by seqlab 0.1.0 (tests/fixtures/sweep_0.1.0, made by its make.py) reruns with its
own command and trains nothing: a setting added since, whose default keeps the old behaviour
(``track_heads``), equals its absence in the old sweep.json. Given with another value, it is
another sweep."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

import seqlab.lm.task
from seqlab.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sweep_0.1.0"


def _command() -> list[str]:
    spec = importlib.util.spec_from_file_location("sweep_fixture_make", FIXTURE / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.COMMAND)


@pytest.fixture
def old_sweep(tmp_path, monkeypatch) -> Path:
    """A copy of the 0.1.0 sweep and its data, as the current folder; training refuses to start."""
    shutil.copytree(FIXTURE / "data", tmp_path / "data")
    shutil.copytree(FIXTURE / "sweep", tmp_path / "sweep")
    monkeypatch.chdir(tmp_path)

    def train(config, **kwargs):
        raise AssertionError(f"{config.out_dir} trained again")

    monkeypatch.setattr(seqlab.lm.task, "train", train)
    return tmp_path / "sweep"


def test_the_fixture_is_a_0_1_0_sweep_without_the_later_setting():
    saved = json.loads((FIXTURE / "sweep" / "sweep.json").read_text())
    assert "track_heads" not in saved["base"] and [r["name"] for r in saved["runs"]] == ["lr=1e-3", "lr=3e-3"]
    config = json.loads((FIXTURE / "sweep" / "lr=1e-3" / "config.json").read_text())
    assert config.get("seqlab_version", "0.1.0") == "0.1.0" and "track_heads" not in config


def test_a_0_1_0_sweep_reruns_with_its_own_command_and_trains_nothing(old_sweep, capsys):
    before = json.loads((old_sweep / "sweep.json").read_text())
    assert main(_command()) == 0
    printed = capsys.readouterr()
    assert "holds another sweep" not in printed.err
    assert "2 runs (2 finished)" in printed.out
    after = json.loads((old_sweep / "sweep.json").read_text())
    assert [(r["name"], r["status"], r["final_val_loss"]) for r in after["runs"]] == \
        [(r["name"], r["status"], r["final_val_loss"]) for r in before["runs"]]


def test_the_later_setting_at_its_default_is_the_same_sweep_and_another_value_is_another(old_sweep, capsys):
    assert main([*_command(), "--no-track-heads"]) == 0
    assert "2 runs (2 finished)" in capsys.readouterr().out
    assert main([*_command(), "--track-heads"]) != 0
    assert "holds another sweep (track_heads false there, true now)" in capsys.readouterr().err


def test_a_0_1_0_sweep_is_compared(old_sweep, tmp_path, capsys):
    assert main(["compare", str(old_sweep), "--out", str(tmp_path / "cmp")]) == 0
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [r["status"] for r in compared["runs"]] == ["finished"] * 2
