"""Fixtures for the training-pipeline tests: a small byte-level data directory (no tokenizer needed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from seqlab.training.stories import END_OF_TEXT, generate_stories


def write_byte_data(directory: Path, num_train: int = 300, num_valid: int = 40) -> Path:
    """train.npy/valid.npy of UTF-8 bytes of built-in stories (vocab 256) + meta.json."""
    directory.mkdir(parents=True, exist_ok=True)
    for split, count, seed in (("train", num_train, 0), ("valid", num_valid, 1)):
        text = END_OF_TEXT.join(generate_stories(count, seed))
        ids = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.uint16)
        np.save(directory / f"{split}.npy", ids)
    (directory / "meta.json").write_text(json.dumps({"vocab_size": 256, "dtype": "uint16"}))
    return directory


@pytest.fixture(scope="session")
def byte_data(tmp_path_factory) -> Path:
    return write_byte_data(tmp_path_factory.mktemp("byte_data"))


@pytest.fixture
def poison_gradient(monkeypatch) -> Callable[[int], dict]:
    """``poison_gradient(step)``: at that (1-based) optimizer step one gradient entry becomes NaN just
    before clipping, while the loss stays finite (an overflow in the backward pass). Returns a dict
    whose "n" counts the clipping calls, i.e. the steps run."""
    from seqlab.training import engine as engine_module

    def install(step: int) -> dict:
        real_clip, calls = engine_module.clip_grad_norm, {"n": 0}

        def poison_then_clip(parameters, max_norm):
            parameters = list(parameters)
            calls["n"] += 1
            if calls["n"] == step:
                parameters[0].grad.view(-1)[0] = float("nan")
            return real_clip(parameters, max_norm)

        monkeypatch.setattr(engine_module, "clip_grad_norm", poison_then_clip)
        return calls

    return install
