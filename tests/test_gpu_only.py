"""Checks that need a CUDA GPU (skipped elsewhere; benchmarks/gpu_all.sh runs them on a GPU machine):
the compiled decode step with CUDA graphs gives the eager path's tokens, a training step makes exactly
one host-to-device copy, from pinned memory, and the compiled Trainer (model and fused loss in one
region) trains like the eager one."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

PROMPTS = [[5, 9, 2, 30], [7], list(range(1, 12)), [3, 3, 3, 3, 3, 3]]


def _model(**kwargs):
    from seqlab.model import TransformerLM

    torch.manual_seed(0)
    return TransformerLM(37, 16, 64, 2, 4, 96, **kwargs).cuda().eval()


@pytest.mark.parametrize("batch", [1, 4])
def test_cuda_graph_decoding_gives_the_eager_tokens(batch):
    from seqlab.inference.generate import generate

    model = _model(num_kv_heads=2)
    prompts = PROMPTS[:batch]
    expected = generate(model, prompts, 40, temperature=0)  # 40 tokens through 16 positions: slides
    assert generate(model, prompts, 40, temperature=0, compile=True) == expected
    assert generate(model, prompts, 40, temperature=0, compile=True) == expected  # replayed, not recompiled
    sampled = generate(model, prompts, 40, temperature=0.8, top_k=10, seed=3)
    assert generate(model, prompts, 40, temperature=0.8, top_k=10, seed=3, compile=True) == sampled


def _trainer(tmp_path, name, **overrides):
    from seqlab.lm.settings import TrainConfig
    from seqlab.lm.task import Trainer
    from tests.training.conftest import write_byte_data

    data = tmp_path / "data"
    if not data.exists():
        write_byte_data(data)
    config = TrainConfig(data_dir=str(data), out_dir=str(tmp_path / name), context_length=64, d_model=64,
                         num_layers=2, num_heads=4, batch_size=16, max_steps=30, warmup_steps=2, lr=3e-3,
                         device="cuda", precision="bf16", progress=False, eval_interval=10**6, eval_batches=1,
                         checkpoint_interval=10**6, log_interval=1, **overrides)
    return Trainer(config, say=lambda message: None)


def test_a_training_step_makes_one_pinned_host_to_device_copy(tmp_path):
    from torch.profiler import ProfilerActivity, profile

    trainer = _trainer(tmp_path, "copies")
    trainer.prepare()
    try:
        assert trainer.fused_loss and trainer.pin_memory
        for step in range(3):
            trainer.train_step(step)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for step in range(3, 8):
                trainer.train_step(step)
            torch.cuda.synchronize()
    finally:
        trainer.close()
    copies = [e.name for e in prof.events() if "HtoD" in e.name and e.device_type.name == "CUDA"]
    assert len(copies) == 5, copies  # one per step
    assert not any("Pageable" in name for name in copies), copies


def test_the_compiled_trainer_trains_like_the_eager_one(tmp_path):
    from seqlab.runs.log import read_jsonl

    runs = {}
    for name, compile in (("eager", False), ("compiled", True)):
        trainer = _trainer(tmp_path, name, compile=compile)
        result = trainer.run()
        assert result.status == "completed" and trainer.compiled == compile
        runs[name] = [r["train_loss"] for r in read_jsonl(tmp_path / name / "log.jsonl") if "train_loss" in r]
    assert runs["compiled"][-1] < runs["compiled"][0] - 0.5  # it learns
    assert runs["compiled"] == pytest.approx(runs["eager"], rel=5e-2)  # bf16: close, not equal
