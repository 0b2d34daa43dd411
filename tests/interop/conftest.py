"""Fixtures for the Hugging Face interop tests: a tiny run trained here, random Llama folders
saved here with transformers (no downloads), and the comparisons both directions share."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("safetensors")

ROPE_THETA = 5000.0  # not the default, so a run's θ must really travel
NORM_EPS = 1e-6  # idem for ε (seqlab's default is 1e-5)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> Path:
    """A tiny LM trained here: BPE (320 ids) on built-in stories, 2 layers, 2 heads, 30 steps."""
    from seqlab.lm.data import prepare
    from seqlab.lm.settings import TrainConfig
    from seqlab.lm.stories import write_corpus
    from seqlab.lm.task import train

    root = tmp_path_factory.mktemp("trained")
    train_text, valid_text = write_corpus(root / "train.txt", 300, 0), write_corpus(root / "valid.txt", 40, 1)
    prepare(train_text, valid_text, 320, root / "data", workers=1, progress=False)
    train(TrainConfig(data_dir=str(root / "data"), out_dir=str(root / "run"), context_length=32, d_model=32,
                      num_layers=2, num_heads=2, batch_size=8, max_steps=30, warmup_steps=3, lr=1e-2,
                      eval_interval=30, eval_batches=2, checkpoint_interval=30, threads=1, progress=False,
                      rope_theta=ROPE_THETA, norm_eps=NORM_EPS))
    return root / "run"


def hf_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0]


def seqlab_logits(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([ids]))[0]


def hf_greedy(model, prompt: list[int], new_tokens: int, eos_id: int | None) -> list[int]:
    """transformers' greedy generate (no sampling), the new ids only, up to and including eos."""
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                             max_new_tokens=new_tokens, do_sample=False, eos_token_id=eos_id,
                             pad_token_id=eos_id if eos_id is not None else 0)
    return out[0, len(prompt):].tolist()
