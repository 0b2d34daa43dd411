"""Small random TransformerLMs built here (d_model 32, 2 layers) and a run directory around one."""

from __future__ import annotations

import pytest
import torch

from seqlab.model import TransformerLM

VOCAB = 256  # the byte-level tokenizer of `byte_run`


def small_model(seed: int = 0, **extra) -> TransformerLM:
    torch.manual_seed(seed)
    model = TransformerLM(VOCAB, 64, 32, 2, 4, **extra).eval()
    with torch.no_grad():  # larger weights than the initialisation, so attention is far from uniform
        for layer in model.layers:
            layer.attn.q_proj.weight.mul_(3.0)
            layer.attn.k_proj.weight.mul_(3.0)
    return model


@pytest.fixture
def model() -> TransformerLM:
    return small_model()


@pytest.fixture(scope="session")
def byte_run(tmp_path_factory):
    """A run directory: a random small model's checkpoint and a byte-level tokenizer (256 ids)."""
    from seqlab.runs import save_checkpoint
    from seqlab.tokenizer import Tokenizer

    run = tmp_path_factory.mktemp("interpret") / "run"
    Tokenizer({i: bytes([i]) for i in range(256)}, []).save(run / "tokenizer")
    save_checkpoint(small_model(3), None, 1, run / "checkpoints" / "latest.pt")
    return run
