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
