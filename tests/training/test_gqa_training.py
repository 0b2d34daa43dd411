"""`seqlab train --num-kv-heads N --tie-embeddings`: the run trains a grouped-query, tied model,
records it in config.json and the checkpoints, and resumes into the same losses as an
uninterrupted run (the tied matrix is one parameter with one AdamW state)."""

from __future__ import annotations

import json

import numpy as np

from seqlab.cli import main
from seqlab.lm.settings import config_from_argv
from seqlab.lm.task import train
from seqlab.runs.checkpoint import load_model_from_checkpoint
from seqlab.runs.log import read_jsonl


def _losses(run) -> list[float]:
    return [r["train_loss"] for r in read_jsonl(run / "log.jsonl") if "train_loss" in r]


def test_train_cli_gqa_tied_run_resumes_like_an_uninterrupted_one(byte_data, tmp_path, capsys):
    flags = ["--data-dir", str(byte_data), "--context-length", "16", "--d-model", "16", "--num-layers", "1",
             "--num-heads", "4", "--num-kv-heads", "2", "--tie-embeddings", "--batch-size", "4",
             "--threads", "1", "--no-progress", "--eval-batches", "1", "--eval-interval", "100",
             "--checkpoint-interval", "3", "--log-interval", "1", "--warmup-steps", "1"]
    whole, split = tmp_path / "whole", tmp_path / "split"
    assert main(["train", *flags, "--out-dir", str(whole), "--max-steps", "6"]) == 0

    def stop_at_3(trainer, step):
        if step == 3:
            trainer.request_stop("test")

    train(config_from_argv([*flags, "--out-dir", str(split), "--max-steps", "6"]), step_callbacks=[stop_at_3])
    assert len(_losses(split)) == 3
    assert main(["train", "--out-dir", str(split), "--resume", "--no-progress"]) == 0
    assert "completed at step 6/6" in capsys.readouterr().out
    np.testing.assert_allclose(_losses(split), _losses(whole), rtol=1e-5)
    model_fields = json.loads((whole / "config.json").read_text())["model"]
    assert (model_fields["num_kv_heads"], model_fields["tie_embeddings"]) == (2, True)
    model, _ = load_model_from_checkpoint(whole / "checkpoints" / "latest.pt")
    assert model.lm_head.weight is model.token_embeddings.weight
    assert model.layers[0].attn.k_proj.weight.shape == (8, 16)  # 2 kv heads of d_head 4
