"""Shared test fixtures."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


def _triton_interpreter_without_cuda() -> None:
    """Without CUDA, Triton kernels (seqlab.model.flash_kernels) run in Triton's CPU interpreter. Triton
    reads TRITON_INTERPRET when triton.language and each kernel are defined, so it is set here, before
    any test module can import triton (importing torch does not)."""
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")


_triton_interpreter_without_cuda()

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
