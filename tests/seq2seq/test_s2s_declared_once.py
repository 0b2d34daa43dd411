"""The seq2seq model is declared once: Seq2SeqConfig's fields make ``seqlab seq2seq train``'s model
settings (flags, TOML keys, defaults, help, choices); the settings class declares none of them again."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import MISSING, dataclass, field, fields

import pytest

from seqlab import settings
from seqlab.model.config import model_setting_fields
from seqlab.seq2seq import settings as s2s_settings
from seqlab.seq2seq.config import Seq2SeqConfig
from seqlab.seq2seq.settings import MODEL_FIELDS, NOT_SETTINGS, Seq2SeqTrainConfig


def test_every_model_setting_comes_from_seq2seq_config_with_its_metadata():
    train = {f.name: f for f in fields(Seq2SeqTrainConfig)}
    for f in fields(Seq2SeqConfig):
        if f.name in NOT_SETTINGS:
            assert f.name not in train, f"{f.name} is listed as no setting but is one"
            continue
        expected = f.metadata.get("setting_default", f.default)
        assert expected is not MISSING, f.name
        assert train[f.name].default == expected, f.name
        assert train[f.name].metadata["section"] == "model"
        assert train[f.name].metadata["help"] == f.metadata["help"]
        assert train[f.name].metadata.get("choices") == f.metadata.get("choices")
    # the two settings whose run default differs from the model's
    assert (train["arch"].default, train["context_length"].default) == ("transformer", None)
    assert Seq2SeqConfig.__dataclass_fields__["arch"].default is MISSING
    assert Seq2SeqConfig.__dataclass_fields__["context_length"].default == 64
    # the only model setting declared by hand is num_layers, which is no Seq2SeqConfig field
    model_settings = [name for name, f in train.items() if f.metadata["section"] == "model"]
    config_names = {f.name for f in fields(Seq2SeqConfig)}
    assert [name for name in model_settings if name not in config_names] == ["num_layers"]


def test_the_settings_class_declares_no_config_field_itself():
    source = inspect.getsource(Seq2SeqTrainConfig)
    for f in fields(Seq2SeqConfig):
        assert f"    {f.name}:" not in source, f"Seq2SeqTrainConfig declares {f.name} again"
    assert "    num_layers:" in source  # the check reads declarations (a mutant of the test's own oracle)


def test_flags_keep_their_order_and_the_model_gets_the_settings():
    parser = argparse.ArgumentParser()
    settings.add_config_arguments(parser, Seq2SeqTrainConfig)
    group = next(g for g in parser._action_groups if g.title == "model options")
    dests = [action.dest for action in group._group_actions]
    assert dests == ["arch", "d_model", "num_heads", "num_layers", "d_ff", "context_length", "norm", "norm_position",
                     "positional", "ffn", "cell", "attention_score", "tie_embeddings", "attention"]
    config, _ = settings.resolve_settings(Seq2SeqTrainConfig, parser.parse_args(
        ["--arch", "rnn-attention", "--d-model", "48", "--num-layers", "3", "--cell", "lstm",
         "--attention-score", "additive", "--tie-embeddings"]))
    model = config.model_config(src_vocab_size=20, tgt_vocab_size=30, context_length=12)
    assert (model.arch, model.d_model, model.num_encoder_layers, model.num_decoder_layers, model.cell,
            model.attention_score, model.tie_embeddings, model.context_length) == \
        ("rnn-attention", 48, 3, 3, "lstm", "additive", True, 12)
    assert MODEL_FIELDS == ("arch", "d_model", "num_heads", "d_ff", "norm", "norm_position", "positional", "ffn",
                            "cell", "attention_score", "tie_embeddings")
    assert set(MODEL_FIELDS) <= set(s2s_settings.FIXED_ON_RESUME)


def test_among_places_own_fields_between_the_generated_ones():
    @dataclass
    class Config:
        width: int = field(default=8, metadata={"help": "width"})
        heads: int = field(default=2, metadata={"help": "heads"})
        ffn: str = field(default="relu", metadata={"help": "ffn", "choices": ("relu", "gelu")})

    @dataclass
    @model_setting_fields(Config, "model", among={"depth": "heads"})
    class Run(settings.EngineSettings):
        name: str = settings.setting("x", "data", "a name")
        depth: int = settings.setting(3, "model", "layers")
        last: bool = settings.setting(False, "eval", "a flag")

    own = [f.name for f in fields(Run) if f.name not in settings.EngineSettings.__dataclass_fields__]
    assert own == ["name", "width", "heads", "depth", "ffn", "last"]
    assert Run(ffn="gelu").ffn == "gelu" and Run().depth == 3
    with pytest.raises(TypeError, match="among: Bad declares no 'depth'"):
        @model_setting_fields(Config, "model", among={"depth": "heads"})
        class Bad(settings.EngineSettings):
            pass
    with pytest.raises(TypeError, match="declared twice"):
        @model_setting_fields(Config, "model")
        class Twice(settings.EngineSettings):
            heads: int = 4
