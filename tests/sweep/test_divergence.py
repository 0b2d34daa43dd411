"""The divergence rule (a logged training loss above its starting value after warm-up, or a
non-finite one), the log tail the watch reads, and the watch's cost on the GPU path: no host read."""

from __future__ import annotations

import json

import torch

from seqlab.model import gpu_path_forced
from seqlab.model.op_count import OpCounter
from seqlab.sweep.divergence import DivergenceWatch, LogTail, first_rise
from seqlab.training import train
from tests.sweep.conftest import tiny_base


def _records(losses, every=5):
    return [{"step": every * (i + 1), "wallclock": 0.1 * i, "train_loss": loss} for i, loss in enumerate(losses)]


def test_a_rise_counts_only_after_warm_up_and_above_the_first_logged_loss():
    # up during warm-up (steps 5, 10): not divergence; above the start at step 20 (> 10): divergence
    records = _records([5.0, 5.4, 4.0, 5.1])
    assert first_rise(records[:3], warmup_steps=10) is None
    reason = first_rise(records, warmup_steps=10)
    assert reason.startswith("the training loss 5.1 at step 20 is above its starting value 5 (step 5)")
    # equal to the start is not above it; validation records are not training losses
    assert first_rise(_records([5.0, 3.0, 5.0]) + [{"step": 20, "val_loss": 9.0}], warmup_steps=0) is None
    assert "is nan at step 10" in first_rise(_records([5.0, float("nan")]), warmup_steps=100)
    assert "is inf at step 10" in first_rise(_records([5.0, float("inf")]), warmup_steps=100)


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


class _HostReads(OpCounter):
    """OpCounter's synchronising aten ops plus the host reads that bypass aten (tolist, numpy, item)."""

    def __init__(self, monkeypatch):
        super().__init__()
        self.direct = 0
        for name in ("tolist", "numpy", "item"):
            original = getattr(torch.Tensor, name)

            def counted(tensor, *args, _original=original, **kwargs):
                self.direct += 1
                return _original(tensor, *args, **kwargs)

            monkeypatch.setattr(torch.Tensor, name, counted)

    @property
    def reads(self) -> int:
        return self.syncs + self.direct


def test_the_watch_adds_no_host_read_to_any_step_on_the_gpu_path(byte_data, tmp_path, monkeypatch):
    config = tiny_base(byte_data, out_dir=str(tmp_path / "run"), max_steps=12, log_interval=3, warmup_steps=2,
                       lr=30.0)
    watch = DivergenceWatch(tmp_path / "run" / "log.jsonl", config.warmup_steps)
    counter = _HostReads(monkeypatch)
    reads, seen = [], []

    def counted(trainer, step):
        before = counter.reads
        watch(trainer, step)
        reads.append(counter.reads - before)
        seen.append(watch.detector.start is not None)

    with gpu_path_forced(), counter:
        result = train(config, step_callbacks=[counted])
    assert reads and set(reads) == {0}, reads
    # it read the log as the trainer wrote it: the start at the first log step, the rise at a later one
    assert seen[:2] == [False, False] and seen[2]
    assert watch.reason is not None and "above its starting value" in watch.reason
    assert result.status == "interrupted" and result.stopped_by == f"diverged: {watch.reason}"
    logged = [r for r in map(json.loads, (tmp_path / "run" / "log.jsonl").read_text().splitlines()) if "train_loss" in r]
    assert first_rise(logged, config.warmup_steps) == watch.reason
