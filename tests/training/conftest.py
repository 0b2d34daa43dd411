"""Fixtures for the training-pipeline tests: a small byte-level data directory (no tokenizer needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seqlab.lm.stories import END_OF_TEXT, generate_stories


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
