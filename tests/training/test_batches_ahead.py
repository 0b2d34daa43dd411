"""Batches without stalls (issue 18 item 3): each micro-batch reaches the device in ONE asynchronous copy of
one (pinned, on a GPU) host buffer; the engine draws the next step's batch right after queueing a step's
work, before any host read; a checkpoint keeps the sampler state from before that draw, so resuming gives
the uninterrupted run bit for bit. Checked on CPU tensors: the copies are counted on the way to the
"meta" device (a real device change, with no GPU), and the GPU path is forced (gpu_path_forced)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from seqlab.lm.data import get_batch, sample_windows
from seqlab.lm.settings import TrainConfig
from seqlab.lm.task import LanguageModelTask, Trainer, train
from seqlab.model import gpu_path_forced
from seqlab.runs.checkpoint import read_checkpoint
from seqlab.runs.log import read_jsonl
from seqlab.seq2seq.config import BOS_ID, EOS_ID, PAD_ID
from seqlab.seq2seq.data import collate
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.task import Seq2SeqTask
from seqlab.training import engine as engine_module
from seqlab.training.task import Drawn

pytestmark = pytest.mark.usefixtures("one_thread")
META = torch.device("meta")


class DeviceCopies(TorchDispatchMode):
    """Records every aten copy from a CPU tensor to another device: (op name, non_blocking)."""

    def __init__(self):
        super().__init__()
        self.copies: list[tuple[str, bool]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = f"{func.namespace}.{func._opname}"
        if name in ("aten._to_copy", "aten.copy_") and isinstance(args[0], torch.Tensor):
            source = args[0] if name == "aten._to_copy" else args[1]
            if source.device.type == "cpu" and isinstance(out, torch.Tensor) and out.device.type != "cpu":
                self.copies.append((name, bool(kwargs.get("non_blocking", False))))
        return out


@pytest.fixture
def pins(monkeypatch) -> list[tuple]:
    """Tensor.pin_memory as a recording identity (a CPU-only torch cannot page-lock memory)."""
    calls: list[tuple] = []

    def pin(tensor, *args, **kwargs):
        calls.append(tuple(tensor.shape))
        return tensor

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin)
    return calls


def test_lm_windows_reach_the_device_in_one_asynchronous_copy(pins):
    data = np.arange(1000, dtype=np.uint16)
    task = LanguageModelTask(TrainConfig(data_dir="unused", context_length=8))
    task.data = type("Data", (), {"train": data})()
    drawn = task.draw(np.random.default_rng(3), 6, pin_memory=True)
    assert pins == [(6, 9)] and drawn.tokens == 48  # one pinned (rows, T + 1) buffer per draw
    # the same starts as get_batch draws with the same generator
    x, y = get_batch(data, 6, 8, "cpu", generator=np.random.default_rng(3))
    assert torch.equal(drawn.data[:, :-1], x) and torch.equal(drawn.data[:, 1:], y)
    with DeviceCopies() as recorder:
        batch = task.select(drawn, slice(2, 5), META)
    assert recorder.copies == [("aten._to_copy", True)]  # one copy, non_blocking
    inputs, targets = batch.inputs
    assert inputs.device == targets.device == META and inputs.shape == targets.shape == (3, 8)
    assert batch.tokens == 24 and len(pins) == 1  # select pins nothing more
    on_cpu = task.select(drawn, slice(2, 5), torch.device("cpu")).inputs
    assert torch.equal(on_cpu[0], x[2:5]) and torch.equal(on_cpu[1], y[2:5])


def _padded(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """The oracle: right-padding with PAD by a plain loop."""
    width = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), width), PAD_ID, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, :len(row)] = True
    return ids, mask


def test_a_seq2seq_batch_is_one_asynchronous_copy_of_one_buffer_and_equals_plain_padding(pins):
    examples = [([5, 6], [7, 8, 9]), ([10], [11]), ([4, 4, 4, 4], [])]
    with DeviceCopies() as recorder:
        on_meta = collate(examples, device=META, pin_memory=True)
    assert recorder.copies == [("aten._to_copy", True)] and len(pins) == 1
    assert on_meta.src.device == on_meta.tgt_mask.device == META
    batch = collate(examples)
    src, src_mask = _padded([s for s, _ in examples])
    tgt_in, tgt_mask = _padded([[BOS_ID, *t] for _, t in examples])
    tgt_out, _ = _padded([[*t, EOS_ID] for _, t in examples])
    for got, want in ((batch.src, src), (batch.src_mask, src_mask), (batch.tgt_in, tgt_in),
                      (batch.tgt_out, tgt_out), (batch.tgt_mask, tgt_mask)):
        assert got.dtype == want.dtype and torch.equal(got, want)
    assert batch.target_tokens == 4 + 2 + 1
    task = Seq2SeqTask(Seq2SeqTrainConfig(task="reverse"))
    with DeviceCopies() as recorder:
        task.select(Drawn(examples, 3, 7, pinned=True), slice(0, 2), META)
    assert recorder.copies == [("aten._to_copy", True)] and len(pins) == 2


def test_sample_windows_refuses_bad_shapes_by_name():
    with pytest.raises(ValueError, match="needs at least 9"):
        sample_windows(np.arange(5), 2, 8)
    with pytest.raises(ValueError, match="1-D array"):
        sample_windows(np.zeros((3, 3)), 2, 2)


# -- the engine ------------------------------------------------------------------------------------------

TINY = dict(context_length=16, d_model=16, num_layers=1, num_heads=2, batch_size=4, threads=1, progress=False,
            eval_batches=1, warmup_steps=2, lr=1e-2)


def _config(data, out, **overrides) -> TrainConfig:
    return TrainConfig(data_dir=str(data), out_dir=str(out), **{**TINY, **overrides})


def test_the_next_batch_is_drawn_after_the_step_is_queued_and_before_the_host_reads(byte_data, tmp_path,
                                                                                      monkeypatch):
    events: list[str] = []
    real_draw = LanguageModelTask.draw
    monkeypatch.setattr(LanguageModelTask, "draw", lambda self, *a, **k: events.append("draw") or real_draw(self, *a, **k))

    class Reader(engine_module.StepReader):
        def read(self, *args, **kwargs):
            events.append("read")
            return super().read(*args, **kwargs)

    monkeypatch.setattr(engine_module, "StepReader", Reader)
    real_step = engine_module.AdamW.step
    monkeypatch.setattr(engine_module.AdamW, "step", lambda self, *a, **k: events.append("update")
                        or real_step(self, *a, **k))
    with gpu_path_forced():
        train(_config(byte_data, tmp_path / "run", max_steps=4, log_interval=2, eval_interval=100,
                      checkpoint_interval=100))
    # step 1 draws its own batch; every later batch is drawn right after the previous update, before
    # the read of a log step; nothing is drawn after the last step
    assert events == ["draw", "update", "draw", "update", "draw", "read", "update", "draw", "update", "read"]


@pytest.mark.parametrize("accumulation", [1, 2])
def test_one_asynchronous_copy_per_micro_batch(byte_data, tmp_path, monkeypatch, accumulation):
    copies: list[bool] = []
    real_to = torch.Tensor.to

    def counted_to(tensor, *args, **kwargs):
        target = kwargs.get("device", args[0] if args else None)
        if isinstance(target, (torch.device, str)) and not tensor.is_floating_point():  # token ids to a device
            copies.append(bool(kwargs.get("non_blocking", False)))
        return real_to(tensor, *args, **kwargs)

    per_step: dict[int, list[bool]] = {}

    def at_step(trainer, step):
        per_step[step] = list(copies)
        copies.clear()

    config = _config(byte_data, tmp_path / "run", max_steps=4, log_interval=100, eval_interval=100,
                     checkpoint_interval=100, grad_accum_steps=accumulation, batch_size=4 // accumulation)
    trainer = Trainer(config, step_callbacks=[at_step])
    monkeypatch.setattr(torch.Tensor, "to", counted_to)
    with gpu_path_forced():
        trainer.run()
    # steps 2-3 (step 1 starts after setup's copies, step 4 also evaluates and saves)
    assert per_step[2] == per_step[3] == [True] * accumulation, per_step


def test_resume_with_a_batch_drawn_ahead_equals_the_uninterrupted_run(byte_data, tmp_path):
    settings = dict(max_steps=8, log_interval=2, eval_interval=4, checkpoint_interval=100, warmup_steps=2)
    with gpu_path_forced():
        whole = train(_config(byte_data, tmp_path / "whole", **settings))

        def stop_at_3(trainer, step):
            if step == 3:
                assert trainer._ahead is not None  # step 4's batch is already drawn
                trainer.request_stop("test")

        broken = tmp_path / "broken"
        first = train(_config(byte_data, broken, **settings), step_callbacks=[stop_at_3])
        assert (first.status, first.steps) == ("interrupted", 3)
        saved = read_checkpoint(broken / "checkpoints" / "latest.pt")["extra"]["sampler"]
        second = train(_config(byte_data, broken, resume=True, **settings))
    assert second.status == whole.status == "completed"
    # the checkpoint holds the generator after 3 draws, not 4
    sampler = np.random.default_rng(TINY.get("seed", 0))
    data_len = len(np.load(byte_data / "train.npy", mmap_mode="r"))
    for _ in range(3):
        sampler.integers(0, data_len - 16, size=4)
    assert saved == sampler.bit_generator.state
    losses = lambda run: [(r["step"], r["train_loss"]) for r in read_jsonl(run / "log.jsonl") if "train_loss" in r]
    assert losses(broken) == losses(tmp_path / "whole")  # bit for bit
    a = read_checkpoint(tmp_path / "whole" / "checkpoints" / "latest.pt")
    b = read_checkpoint(broken / "checkpoints" / "latest.pt")
    assert all(torch.equal(t, b["model"][k]) for k, t in a["model"].items())
    assert a["extra"]["sampler"] == b["extra"]["sampler"]


def test_a_failed_first_compiled_step_is_redone_eagerly_with_the_same_batch(byte_data, tmp_path, monkeypatch):
    """The compile trial restores the sampler and the batch drawn ahead: the run equals an eager one."""

    class FailsOnce(torch.nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module, self.failed = module, False

        def forward(self, batch):
            if not self.failed:
                self.failed = True
                raise RuntimeError("backend exploded")
            return self.module(batch)

    monkeypatch.setattr(engine_module, "compile_model", lambda module, device: (FailsOnce(module), None))
    said: list[str] = []
    settings = dict(max_steps=4, log_interval=1, eval_interval=100, checkpoint_interval=100)
    with gpu_path_forced():
        train(_config(byte_data, tmp_path / "compiled", compile=True, **settings), say=said.append)
        train(_config(byte_data, tmp_path / "eager", **settings), say=said.append)
    assert any("the compiled model failed (RuntimeError: backend exploded)" in line for line in said)
    losses = lambda run: [r["train_loss"] for r in read_jsonl(run / "log.jsonl") if "train_loss" in r]
    assert losses(tmp_path / "compiled") == losses(tmp_path / "eager")
