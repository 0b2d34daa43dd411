"""The divergence rule (after warm-up, a logged training loss a nat above its starting value, or
above it by more than the noise for 3 logged steps in a row, or a non-finite one) on made-up and on
real curves, the log tail the watch reads, and the watch's cost on the GPU path: it calls no torch
function at all, so it cannot synchronise with a device."""

from __future__ import annotations

import json
import math

import torch
from torch.overrides import TorchFunctionMode

from seqlab.model import gpu_path_forced
from seqlab.sweep.divergence import DivergenceWatch, LogTail, first_rise
from seqlab.lm import train
from tests.sweep.conftest import tiny_base


def _records(losses, every=5):
    return [{"step": every * (i + 1), "wallclock": 0.1 * i, "train_loss": loss} for i, loss in enumerate(losses)]


def test_a_rise_counts_after_warm_up_when_it_jumps_or_stays_above_the_noise():
    # a jump of more than a nat: at once, but not during warm-up (steps 5, 10)
    records = _records([5.0, 6.4, 4.0, 6.1])
    assert first_rise(records[:3], warmup_steps=10) is None
    reason = first_rise(records, warmup_steps=10)
    assert reason.startswith("the training loss 6.1 at step 20 is more than 1 nat above its starting value 5 (step 5)")
    # above the start within the noise margin (5% of 5 = 0.25), however long: noise
    assert first_rise(_records([5.0] + [5.2, 5.24, 5.1, 5.249] * 5), warmup_steps=0) is None
    # above the margin for two logged steps, then back: noise; for three in a row: a rise that stays
    assert first_rise(_records([5.0, 5.3, 5.4, 5.2, 5.3, 5.4]), warmup_steps=0) is None
    reason = first_rise(_records([5.0, 5.3, 5.4, 5.2, 5.3, 5.4, 5.5]), warmup_steps=0)
    assert reason == ("the training loss stayed above its starting value 5 (step 5) by more than the noise margin "
                      "0.25 for 3 logged steps in a row after the 0 warm-up steps: 5.3 (step 25), 5.4 (step 30), "
                      "5.5 (step 35)")
    # equal to the start is not above it; validation records are not training losses
    assert first_rise(_records([5.0, 3.0, 5.0]) + [{"step": 20, "val_loss": 9.0}], warmup_steps=0) is None
    assert "is nan at step 10" in first_rise(_records([5.0, float("nan")]), warmup_steps=100)
    assert "is inf at step 10" in first_rise(_records([5.0, float("inf")]), warmup_steps=100)
    # small losses: the margin is at least 0.05 nats
    assert first_rise(_records([0.2, 0.24, 0.24, 0.24]), warmup_steps=0) is None
    assert "noise margin 0.05 " in first_rise(_records([0.2, 0.26, 0.26, 0.26]), warmup_steps=0)


def test_real_curves_noise_is_not_divergence_and_a_learning_rate_of_1_is(byte_data, tmp_path):
    """Two runs of a sweep, logged every step after one warm-up step: lr 1e-4 learns slowly, and its
    noisy logged loss goes above the first one (the old rule's "divergence"); lr 1.0 blows up. Only
    the second is diverged, stopped where the rule finds it in its log."""
    from seqlab.sweep import plan_sweep, run_sweep

    out = tmp_path / "lr"
    base = tiny_base(byte_data, log_interval=1, warmup_steps=1, max_steps=30, eval_interval=30,
                     checkpoint_interval=30)
    run_sweep(plan_sweep(base, out, grid=["lr=1e-4,1.0"]), say=lambda *a, **k: None)
    runs = {r["name"]: r for r in json.loads((out / "sweep.json").read_text())["runs"]}
    curves = {name: [(r["step"], r["train_loss"]) for r in map(json.loads, (out / name / "log.jsonl").read_text()
                     .splitlines()) if "train_loss" in r] for name in runs}
    slow = [loss for _, loss in curves["lr=1e-4"]]
    assert len(slow) == 30 and any(loss > slow[0] for loss in slow[1:])  # noise above the start: a naive rule fires
    assert sum(slow[-5:]) / 5 < slow[0]  # it learns
    assert [runs[n]["status"] for n in ("lr=1e-4", "lr=1")] == ["finished", "diverged"]
    blown = curves["lr=1"]
    first_jump = next(step for step, loss in blown[1:] if loss > blown[0][1] + 1.0)  # the oracle: a nat above
    assert runs["lr=1"]["steps"] == first_jump == blown[-1][0]
    assert "more than 1 nat above its starting value" in runs["lr=1"]["reason"]


def test_a_first_logged_loss_already_blown_up_is_capped_at_a_nat_above_uniform():
    """The first logged loss averages the first log interval; when the model blew up inside it, the
    starting value is ln V + 1 instead (oracle: math.log), and a run below that is left alone."""
    ceiling = math.log(300) + 1.0
    blown_up = _records([348.0, 187.0, 37.0], every=10)
    assert first_rise(blown_up, warmup_steps=3) is None  # without the vocabulary, as before
    reason = first_rise(blown_up, warmup_steps=3, vocab_size=300)
    assert reason.startswith(f"the training loss 187 at step 20 is more than 1 nat above its starting value {ceiling:.4g} "
                             f"(ln 300 + 1: the first logged loss, 348 at step 10, was already past it)")
    # a run that starts near uniform (ln 300 = 5.70) and learns slowly is not diverged, even above ln V
    slow = _records([5.9, 5.85, 5.8], every=10)
    assert first_rise(slow, warmup_steps=3, vocab_size=300) is None
    # a start below the ceiling keeps the first logged loss as the starting value
    assert "starting value 5.9 (step 10)" in first_rise(_records([5.9, 7.0], every=10), 3, vocab_size=300)
    assert first_rise(_records([ceiling + 0.5, ceiling - 0.1], every=10), 3, vocab_size=300) is None


def test_a_sweep_marks_a_run_that_blew_up_inside_its_first_log_interval(byte_data, tmp_path):
    """lr=10, logged every 10 steps: the first logged loss is already far above uniform and the loss
    then falls; the sweep reads the vocabulary from the data and marks the run diverged."""
    from seqlab.lm.data import read_meta
    from seqlab.sweep import plan_sweep, run_sweep

    out = tmp_path / "lr"
    base = tiny_base(byte_data, log_interval=10, max_steps=30, eval_interval=30, checkpoint_interval=30)
    run_sweep(plan_sweep(base, out, grid=["lr=10"]), say=lambda *a, **k: None)
    losses = [r["train_loss"] for r in map(json.loads, (out / "lr=10" / "log.jsonl").read_text().splitlines())
              if "train_loss" in r]
    ceiling = math.log(read_meta(byte_data)["vocab_size"]) + 1.0
    assert losses[0] > ceiling and losses[1] > ceiling  # the oracle: the rule on the log itself
    outcome = json.loads((out / "sweep.json").read_text())["runs"][0]
    assert outcome["status"] == "diverged" and "was already past it" in outcome["reason"]
    assert outcome["steps"] == 20  # stopped at the first log step after warm-up that is above the ceiling


def test_the_log_tail_returns_whole_new_lines_and_rereads_a_shrunk_file(tmp_path):
    path = tmp_path / "log.jsonl"
    tail = LogTail(path)
    assert tail.new_records() == []  # no file yet
    path.write_text(json.dumps({"step": 1}) + "\n" + '{"step": 2, "tr')
    assert tail.new_records() == [{"step": 1}]
    with path.open("a") as fh:
        fh.write('ain_loss": 3.5}\n')
    assert tail.new_records() == [{"step": 2, "train_loss": 3.5}]
    assert tail.new_records() == []
    path.write_text(json.dumps({"step": 1}) + "\n")  # a resumed run truncated its log
    assert tail.new_records() == [{"step": 1}]


class _TorchCalls(TorchFunctionMode):
    """Every torch function and Tensor method called while active (``.item()``, ``.tolist()``,
    ``float(t)`` included): code that calls none cannot make the host wait for a device."""

    def __init__(self):
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(getattr(func, "__name__", repr(func)))
        return func(*args, **(kwargs or {}))


def test_the_watch_touches_no_tensor_on_the_gpu_path(byte_data, tmp_path):
    with _TorchCalls() as probe:  # the probe sees a host read
        torch.ones(2).sum().item()
    assert "item" in probe.calls
    config = tiny_base(byte_data, out_dir=str(tmp_path / "run"), max_steps=12, log_interval=3, warmup_steps=2,
                       lr=30.0)
    watch = DivergenceWatch(tmp_path / "run" / "log.jsonl", config.warmup_steps)
    calls, seen = [], []

    def observed(trainer, step):
        with _TorchCalls() as probe:
            watch(trainer, step)
        calls.extend(probe.calls)
        seen.append(watch.detector.start is not None)

    with gpu_path_forced():  # the trainer reads the device only at log steps; the watch never
        result = train(config, step_callbacks=[observed])
    assert calls == [] and len(seen) == result.steps
    # it read the log as the trainer wrote it: the start at the first log step, the rise at a later one
    assert seen[:2] == [False, False] and seen[2]
    assert watch.reason is not None and "nat above its starting value" in watch.reason
    assert result.status == "interrupted" and result.stopped_by == f"diverged: {watch.reason}"
    logged = [r for r in map(json.loads, (tmp_path / "run" / "log.jsonl").read_text().splitlines()) if "train_loss" in r]
    assert first_rise(logged, config.warmup_steps) == watch.reason
