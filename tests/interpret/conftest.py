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


@pytest.fixture(scope="session")
def s2s_run(tmp_path_factory):
    """A seq2seq run directory: an RNN with attention trained 3 steps on the copy task (its weights
    are what they are; the measurements are compared with the library's own numbers)."""
    from seqlab.seq2seq.settings import Seq2SeqTrainConfig
    from seqlab.seq2seq.task import train

    run = tmp_path_factory.mktemp("interpret_s2s") / "run"
    train(Seq2SeqTrainConfig(out_dir=str(run), task="copy", min_len=3, max_len=6, train_size=40, valid_size=4,
                             arch="rnn-attention", d_model=16, num_layers=1, max_steps=3, batch_size=8,
                             progress=False, threads=1, seed=0), say=lambda message: None)
    return run


def saturated_model() -> TransformerLM:
    """A small model whose output layer gives token 42 logit 40 after the prompt b"hello" (p ~ 1)."""
    model = small_model(9)
    with torch.no_grad():
        hidden = model(torch.tensor([list(b"hello")]), return_hidden=True)[0, -1]
        model.lm_head.weight.zero_()
        model.lm_head.weight[42] = 40.0 * hidden / hidden.pow(2).sum()
    return model
