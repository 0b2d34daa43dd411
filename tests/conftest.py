"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CS336_DIR = REPO_ROOT.parent / "shared" / "fixtures" / "cs336"


@pytest.fixture(scope="session")
def cs336_dir() -> Path:
    """Public CS336 assignment data laid beside the checkout; skip when a clone has none."""
    if not CS336_DIR.is_dir():
        pytest.skip(f"fixture folder {CS336_DIR} is absent (it ships only beside the project checkout)")
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
