"""The model's settings are declared once: ModelConfig's fields make TrainConfig's flags and TOML
keys, with ModelConfig's defaults; one list of norms serves every family."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, dataclass, fields

import pytest

from seqlab.lm.settings import TrainConfig, add_config_arguments, config_from_argv, read_toml
from seqlab.model import TransformerLM
from seqlab.model.config import LM_NORMS, NORMS, ModelConfig, model_setting_fields
from seqlab.model.norm import make_norm
from seqlab.seq2seq import config as s2s_config
from seqlab.settings import EngineSettings, flag_names


def test_every_model_field_is_a_train_setting_with_the_model_defaults():
    train = {f.name: f for f in fields(TrainConfig)}
    for f in fields(ModelConfig):
        assert f.name in train, f.name
        expected = f.metadata.get("setting_default", f.default)
        assert expected is not MISSING, f.name
        assert train[f.name].default == expected, f.name
        assert train[f.name].metadata["section"] == "model"
        assert train[f.name].metadata["help"] == f.metadata["help"]
        assert train[f.name].metadata.get("choices") == f.metadata.get("choices")
    defaults = TrainConfig().model_config(vocab_size=50)
    assert defaults == ModelConfig(50, *(f.metadata["setting_default"] for f in fields(ModelConfig)[1:5]))


def test_every_model_field_has_a_flag_and_a_toml_key(tmp_path):
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    flags = {action.dest: action.option_strings for action in parser._actions}
    for f in fields(ModelConfig):
        assert flags[f.name][0] == f"--{f.name.replace('_', '-')}", f.name
    config = config_from_argv(["--d-model", "48", "--num-layers", "3", "--norm-eps", "0.001", "--tie-embeddings"])
    model = config.model_config(vocab_size=20)
    assert (model.d_model, model.num_layers, model.norm_eps, model.tie_embeddings) == (48, 3, 0.001, True)
    toml = tmp_path / "run.toml"
    toml.write_text("[model]\nd_model = 48\nnum_kv_heads = 2\n")
    assert read_toml(toml) == {"d_model": 48, "num_kv_heads": 2}


def test_a_field_added_to_a_model_config_becomes_a_setting_with_no_other_edit():
    from dataclasses import field

    @dataclass
    class Config:
        depth: int = field(metadata={"help": "layers", "setting_default": 3})
        dropout: float = field(default=0.25, metadata={"help": "dropout rate"})

    @dataclass
    @model_setting_fields(Config, "model")
    class Run(EngineSettings):
        pass

    parser = argparse.ArgumentParser()
    from seqlab import settings

    settings.add_config_arguments(parser, Run)
    run, _ = settings.resolve_settings(Run, parser.parse_args(["--dropout", "0.5"]))
    assert (run.depth, run.dropout) == (3, 0.5)
    assert flag_names(Run.__dataclass_fields__["depth"]) == ("--depth",)
    with pytest.raises(TypeError, match="declared twice"):
        @model_setting_fields(Config, "model")
        class Twice(EngineSettings):
            depth: int = 1


def test_train_config_declares_no_model_field_itself():
    import inspect

    import seqlab.lm.settings as module

    source = inspect.getsource(module.TrainConfig)
    for f in fields(ModelConfig):
        assert f"    {f.name}:" not in source, f"TrainConfig declares {f.name} again"


def test_one_list_of_norms():
    assert set(LM_NORMS) <= set(NORMS) and set(s2s_config.NORMS) <= set(NORMS)
    assert LM_NORMS == ("rmsnorm", "none") and s2s_config.NORMS == ("layernorm", "rmsnorm")
    for name in NORMS:
        make_norm(name, 8)
    with pytest.raises(ValueError, match=r"expected one of \('layernorm', 'rmsnorm', 'none'\)"):
        make_norm("batchnorm", 8)
    with pytest.raises(ValueError, match="ModelConfig.norm must be one of"):
        ModelConfig(10, 4, 8, 1, 2, norm="layernorm")


def test_transformer_lm_takes_its_config_and_keywords_go_through_it():
    import torch

    config = ModelConfig(vocab_size=30, context_length=8, d_model=16, num_layers=2, num_heads=2, norm="none")
    torch.manual_seed(0)
    a = TransformerLM(config)
    torch.manual_seed(0)
    b = TransformerLM(30, 8, 16, 2, 2, norm="none")
    torch.manual_seed(0)
    c = TransformerLM.from_config(config)
    assert a.config == b.config == c.config == config and a.config is not config
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(a(ids), b(ids)) and torch.equal(a(ids), c(ids))
    assert len(a.layers) == 2 and a.lm_head.weight.shape == (30, 16)
    with pytest.raises(TypeError, match="takes no other model fields"):
        TransformerLM(config, norm="rmsnorm")
    with pytest.raises(ValueError, match="ModelConfig.num_layers must be a positive integer"):
        TransformerLM(30, 8, 16, 0, 2)
