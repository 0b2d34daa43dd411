"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CS336_DIR = REPO_ROOT / "tests" / "fixtures" / "cs336"


@pytest.fixture(scope="session")
def cs336_dir() -> Path:
    """Public CS336 assignment data (MIT), shipped in ``tests/fixtures/cs336`` with its LICENSE."""
    if not (CS336_DIR / "LICENSE").is_file():
        raise FileNotFoundError(f"{CS336_DIR} is missing: the CS336 fixtures ship with the repository")
    return CS336_DIR


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models gain nothing from threads, and on a busy 2-core machine OpenMP threads spin
    against other processes: a module that asks for this (``pytestmark =
    pytest.mark.usefixtures("one_thread")``) runs single-threaded; the setting is restored after."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def _train_s2s(out: Path, *flags: str) -> Path:
    from seqlab.cli import main

    common = ["--d-model", "32", "--num-heads", "2", "--layers", "1", "--batch-size", "32", "--lr", "0.01",
              "--warmup-steps", "5", "--no-progress", "--threads", "1", "--steps", "40", "--eval-interval", "40",
              "--eval-size", "20"]
    assert main(["seq2seq", "train", *common, *flags, "--out", str(out)]) == 0  # flags override common
    return out


@pytest.fixture(scope="session")
def tiny_s2s_run(tmp_path_factory) -> Path:
    """A seq2seq run (reverse, characters, a Transformer) of 40 steps: seconds. Its outputs are poor;
    tests compare with oracles computed from its loaded model."""
    return _train_s2s(tmp_path_factory.mktemp("s2s") / "reverse", "--task", "reverse", "--min-len", "2",
                      "--max-len", "6", "--train-size", "300", "--valid-size", "20", "--arch", "transformer")


@pytest.fixture(scope="session")
def tiny_fr_en_run(tmp_path_factory) -> Path:
    """A seq2seq run on the built-in fr-en grammar (characters, a 2-layer Transformer), 40 steps."""
    return _train_s2s(tmp_path_factory.mktemp("s2s") / "fr-en", "--task", "fr-en", "--train-size", "300",
                      "--valid-size", "20", "--arch", "transformer", "--layers", "2")
