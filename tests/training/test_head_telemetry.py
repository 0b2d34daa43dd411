"""Eval hooks of the engine and ``seqlab train --track-heads``: the head scores in log.jsonl equal
seqlab.interpret.head_scores of the saved checkpoint on the same seeded batch."""

from __future__ import annotations

import pytest
import torch

from seqlab.interpret import head_scores
from seqlab.interpret.heads import ROLES
from seqlab.lm.settings import TrainConfig, config_from_argv, read_toml
from seqlab.lm.task import train
from seqlab.lm.telemetry import BATCHES, SEED, head_key, head_series
from seqlab.runs.checkpoint import load_model_from_checkpoint
from seqlab.runs.log import read_jsonl

TINY = dict(context_length=32, d_model=32, num_layers=2, num_heads=2, batch_size=8, threads=1,
            progress=False, eval_batches=2, max_steps=6, warmup_steps=1, eval_interval=3, checkpoint_interval=3,
            log_interval=3)


def _evals(run):
    return [r for r in read_jsonl(run / "log.jsonl") if "val_loss" in r]


def test_an_eval_hook_sees_the_model_in_eval_mode_without_gradients_and_its_metrics_are_logged(byte_data, tmp_path):
    seen = []

    def hook(model, where):
        seen.append((model.training, torch.is_grad_enabled(), str(where.device)))
        return {"my/weight_norm": float(model.lm_head.weight.norm())}

    run = tmp_path / "run"
    result = train(TrainConfig(data_dir=str(byte_data), out_dir=str(run), **TINY), eval_hooks=[hook])
    assert seen == [(False, False, "cpu")] * 2
    evals = _evals(run)
    assert [r["step"] for r in evals] == [3, 6]
    model = load_model_from_checkpoint(run / "checkpoints" / "latest.pt", device="cpu")[0]
    assert evals[-1]["my/weight_norm"] == pytest.approx(float(model.lm_head.weight.detach().norm()), rel=1e-6)
    assert result.metrics["my/weight_norm"] == evals[-1]["my/weight_norm"]


def test_track_heads_logs_the_head_scores_of_the_checkpoint(byte_data, tmp_path):
    run = tmp_path / "run"
    train(TrainConfig(data_dir=str(byte_data), out_dir=str(run), track_heads=True, **TINY))
    final = _evals(run)[-1]
    assert final["step"] == 6
    model = load_model_from_checkpoint(run / "checkpoints" / "step_0000006.pt", device="cpu")[0]
    oracle = head_scores(model, seq_len=16, batches=BATCHES, seed=SEED)  # context 32: the half is 16
    for role in ROLES:
        for layer in range(2):
            for head in range(2):
                assert final[head_key(role, layer, head)] == pytest.approx(float(oracle[role][layer, head]), abs=1e-5)
    assert sum(key.startswith("heads/") for key in final) == 4 * 2 * 2
    series = head_series(read_jsonl(run / "log.jsonl"))
    assert series["steps"] == [3, 6] and (series["layers"], series["heads"]) == (2, 2)
    assert series["best"]["induction"][-1] == pytest.approx(float(oracle["induction"].max()), abs=1e-5)


def test_without_track_heads_nothing_is_logged_and_the_flag_and_toml_key_set_it(byte_data, tmp_path):
    run = tmp_path / "run"
    train(TrainConfig(data_dir=str(byte_data), out_dir=str(run), **{**TINY, "max_steps": 3}))
    assert not any(key.startswith("heads/") for r in read_jsonl(run / "log.jsonl") for key in r)
    assert head_series(read_jsonl(run / "log.jsonl")) is None
    assert config_from_argv(["--track-heads"]).track_heads is True
    assert config_from_argv([]).track_heads is False
    toml = tmp_path / "c.toml"
    toml.write_text("[eval]\ntrack_heads = true\n")
    assert read_toml(toml) == {"track_heads": True}


def test_track_heads_refuses_a_context_too_short_to_repeat(byte_data, tmp_path):
    config = TrainConfig(data_dir=str(byte_data), out_dir=str(tmp_path / "run"), track_heads=True,
                         **{**TINY, "context_length": 3})
    with pytest.raises(ValueError, match="context_length is 3: use --context-length 4 or more"):
        train(config)
