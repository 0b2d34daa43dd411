"""Fixtures for the sweep tests: the byte-level stories data of the training tests, and a tiny base
config (2 layers, d_model 32, context 32, batch 8) whose 30-step runs take about a second."""

from __future__ import annotations

from pathlib import Path

import pytest

from seqlab.lm.settings import TrainConfig
from tests.training.conftest import write_byte_data

TINY = dict(context_length=32, d_model=32, num_layers=2, num_heads=2, batch_size=8, threads=1, progress=False,
            eval_batches=2, max_steps=30, warmup_steps=3, eval_interval=10, log_interval=5,
            checkpoint_interval=10, lr=1e-2)
# the same as command-line flags (for `seqlab sweep` in a subprocess)
TINY_FLAGS = ["--context-length", "32", "--d-model", "32", "--num-layers", "2", "--num-heads", "2",
              "--batch-size", "8", "--threads", "1", "--no-progress", "--eval-batches", "2", "--max-steps", "30",
              "--warmup-steps", "3", "--eval-interval", "10", "--log-interval", "5", "--checkpoint-interval", "10"]


def tiny_base(data: Path, **overrides) -> TrainConfig:
    return TrainConfig(**{**TINY, "data_dir": str(data), **overrides})


@pytest.fixture(scope="session")
def byte_data(tmp_path_factory) -> Path:
    return write_byte_data(tmp_path_factory.mktemp("byte_data"))
