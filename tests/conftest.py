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
# how many times a test polls for a child process's state (a marker, a log line, a folder) before it
# calls the child hung: a bound on attempts, not a clock; polls sleep POLL_S, so the bound is minutes,
# while what a test waits for comes within seconds even on a loaded 2-core machine
WAIT_POLLS = 30_000
POLL_S = 0.01


def wait_until(process, done: Callable[[], bool], poll_s: float = POLL_S, polls: int = WAIT_POLLS) -> None:
    """Poll ``done()`` until it holds, while the child ``process`` (a subprocess.Popen) runs; fail with
    the child's output if it exits first, or after ``polls`` attempts (a hang guard)."""
    import time

    for _ in range(polls):
        if done():
            return
        assert process.poll() is None, process.communicate()
        time.sleep(poll_s)
    raise AssertionError(f"still waiting after {polls} polls (a hang)")


def held(marker: Path, run: str, step: int) -> list[str]:
    """The start of a child's command line that holds run folder ``run`` at training step ``step``
    until a stop signal reached it (tests/hold.py); follow it with ``seqlab ARGS...`` or ``-c SCRIPT``."""
    import sys

    return [sys.executable, "-m", "tests.hold", str(marker), run, str(step)]


def wait_for_hold(process, marker: Path) -> None:
    """Wait until the child started with :func:`held` is held: a signal sent now lands in that step."""
    wait_until(process, marker.is_file)


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


def _train_s2s(out: Path, *flags: str) -> Path:
    from seqlab.cli import main

    common = ["--d-model", "32", "--num-heads", "2", "--num-layers", "1", "--batch-size", "32", "--lr", "0.01",
              "--warmup-steps", "5", "--no-progress", "--threads", "1", "--max-steps", "40", "--eval-interval", "40",
              "--eval-batches", "1"]
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
                      "--valid-size", "20", "--arch", "transformer", "--num-layers", "2")
