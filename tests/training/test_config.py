"""TrainConfig: TOML parsing, flag precedence, ablation flags, validation, resolved config on disk."""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import pytest

import seqlab
from seqlab.lm.settings import TrainConfig, config_from_argv, read_toml
from seqlab.model import ModelConfig
from seqlab.runs.config import write_run_config


def test_defaults_without_file_or_flags():
    assert config_from_argv([]) == TrainConfig()


def test_toml_sections_and_flat_keys(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('data_dir = "data/x"\n[model]\nd_model = 64\nnum_heads = 2\nrope_theta = 500\n'
                    '[optimizer]\nlr = 1e-3\n[schedule]\nbatch_size = 8\ntoken_budget = 1_000_000\n')
    cfg = config_from_argv(["--config", str(path)])
    assert (cfg.data_dir, cfg.d_model, cfg.num_heads, cfg.lr, cfg.batch_size) == ("data/x", 64, 2, 1e-3, 8)
    assert cfg.rope_theta == 500.0 and isinstance(cfg.rope_theta, float)  # an int where a float goes
    assert cfg.token_budget == 1_000_000
    assert cfg.num_layers == TrainConfig().num_layers  # untouched keys keep their defaults


def test_flags_win_over_toml(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[model]\nd_model = 64\nnum_layers = 3\n[system]\ncompile = true\n")
    cfg = config_from_argv(["--config", str(path), "--d-model", "96", "--no-compile", "--lr", "0.01"])
    assert (cfg.d_model, cfg.num_layers, cfg.compile, cfg.lr) == (96, 3, False, 0.01)


def test_ablation_flags_and_generic_fields():
    cfg = config_from_argv(["--no-rmsnorm", "--post-norm", "--nope", "--silu-ffn"])
    assert (cfg.norm, cfg.norm_position, cfg.positional, cfg.ffn) == ("none", "post", "nope", "silu")
    model = cfg.model_config(vocab_size=300)
    assert isinstance(model, ModelConfig)
    assert model.d_ff == 4 * cfg.d_model  # SiLU FFN default width
    assert config_from_argv(["--norm", "none"]).norm == "none"


def test_optional_fields_accept_none():
    cfg = config_from_argv(["--d-ff", "none", "--token-budget", "2e6"])
    assert cfg.d_ff is None and cfg.token_budget == 2_000_000


@pytest.mark.parametrize("text, message", [
    ("[model]\nwidth = 3\n", "unknown key 'model.width'"),
    ("[modle]\nd_model = 3\n", r"unknown section \[modle\]"),
    ("[model]\nd_model = \"big\"\n", "expected int"),
    ("d_model = 64\n[model]\nd_model = 32\n", "given twice"),
    ("d_model = \n", "invalid TOML"),
    ("norm = \"layernorm\"\n", "norm='layernorm'"),
    ("batch_size = 0\n", "batch_size=0"),
    ("min_lr = -1e-4\n", r"min_lr=-0.0001: must be >= 0"),
    ("grad_clip = -1\n", r"grad_clip=-1.0: must be >= 0"),
    ("threads = 0\n", r"threads=0: must be >= 1"),
])
def test_bad_toml_is_a_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        config_from_argv(["--config", str(path)])
    if "TOML" in message or "unknown" in message or "expected" in message or "twice" in message:
        assert str(path) in str(info.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.toml"):
        read_toml(tmp_path / "nope.toml")


def test_token_budget_sets_steps_for_any_world_size():
    cfg = TrainConfig(batch_size=4, context_length=16, grad_accum_steps=2, token_budget=1000)
    assert cfg.tokens_per_step() == 128
    assert cfg.total_steps() == 8  # ceil(1000 / 128)
    assert cfg.total_steps(world_size=2) == 4  # ceil(1000 / 256)
    assert TrainConfig(max_steps=7).total_steps(world_size=4) == 7


def test_saved_config_roundtrip_with_model_section(tmp_path):
    cfg = TrainConfig(data_dir="d", d_model=64, num_heads=4, positional="nope")
    model = cfg.model_config(vocab_size=500)
    write_run_config(tmp_path, cfg.run_config(model, world_size=1, total_steps=cfg.total_steps()))
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model"] == asdict(model) and saved["model"]["vocab_size"] == 500
    assert (saved["kind"], saved["data"]["data_dir"], saved["seqlab_version"]) == ("lm", "d", seqlab.__version__)
    assert TrainConfig.from_json(tmp_path / "config.json") == cfg


def test_resume_reads_the_run_config_under_the_flags(tmp_path):
    run = tmp_path / "run"
    cfg = TrainConfig(data_dir="d", out_dir=str(run), d_model=48, num_heads=3 * 2, lr=0.02)
    write_run_config(run, cfg.run_config(cfg.model_config(300), world_size=1, total_steps=cfg.total_steps()))
    cfg = config_from_argv(["--out-dir", str(run), "--resume", "--lr", "0.01"])
    assert (cfg.data_dir, cfg.d_model, cfg.num_heads, cfg.lr, cfg.resume) == ("d", 48, 6, 0.01, True)


def test_a_corrupt_run_config_is_named(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"d_model": 32,\n oops}')
    with pytest.raises(ValueError, match=r"config\.json, line 2: invalid JSON"):
        config_from_argv(["--out-dir", str(run), "--resume"])


def test_train_help_states_each_default_once(capsys):
    from seqlab.cli import main

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # undo line wrapping
    assert "--d-model D_MODEL model width (default: 128)" in text
    assert "vocabulary size (default: from the data's meta.json)" in text
    assert "(default: None)" not in text and "(default: )" not in text
    assert not re.search(r"\(default: [^)]*\) \(default:", text)
