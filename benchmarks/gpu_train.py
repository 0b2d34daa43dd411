"""A short prepared GPU training run of the assignment's TinyStories model: tokens/s and MFU.

    python benchmarks/gpu_train.py [--data-dir data/tinystories] [--batch-size 128] [--steps 120]
                                   [--no-compile] [--attention auto] [--peak-flops 989e12]

Model: vocab 10,000, context 256, d_model 512, 4 layers, 16 heads, d_ff 1344 (SwiGLU, RoPE), bf16
autocast, AdamW, through ``seqlab train``'s own Trainer (the same code path as a real run). Without
``--data-dir`` it trains on uniformly random token ids (throughput does not depend on the text).
The first ``--warmup`` steps (compilation, allocator warm-up) are excluded from the timing: tokens/s
and MFU count timed steps only, and the warm-up's seconds are printed on their own.
``--attention auto`` (the default) runs torch's fused attention (``sdpa``) on CUDA; ``reference``,
``flash`` (the Triton kernel) and ``chunked`` can be named instead.

MFU = (training FLOPs per step from seqlab.accounting: 3 x the forward matmul FLOPs, full n x n
attention) / step time / the GPU's dense bf16 peak (seqlab.runtime.PEAK_BF16_FLOPS,
matched by whole words of the GPU's name, longest entry first, so an "L40" is not an "L4"; or
--peak-flops). Goal: >= 40% MFU, i.e. the assignment's 327,680,000-token run in under 10 minutes
on one H100-class GPU. Refuses to run without CUDA (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ASSIGNMENT_TOKENS = 327_680_000
MODEL = dict(context_length=256, d_model=512, num_layers=4, num_heads=16, d_ff=1344, rope_theta=10000.0)


def synthetic_data(directory: Path, vocab_size: int = 10_000, tokens: int = 20_000_000) -> Path:
    import numpy as np

    rng = np.random.default_rng(0)
    directory.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", tokens), ("valid", tokens // 20)):
        np.save(directory / f"{split}.npy", rng.integers(0, vocab_size, count, dtype=np.uint16))
    (directory / "meta.json").write_text(json.dumps({"vocab_size": vocab_size, "dtype": "uint16"}))
    return directory


def main(argv: list[str] | None = None) -> int:
    from seqlab.model.config import ATTENTIONS  # no torch import

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", help="prepared data (seqlab prepare); default: random ids, vocab 10,000")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--warmup", type=int, default=20, help="untimed first steps")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--precision", default="bf16", choices=("bf16", "fp16", "fp32"))
    parser.add_argument("--attention", default="auto", choices=ATTENTIONS,
                        help="attention backend (auto = sdpa on CUDA)")
    parser.add_argument("--peak-flops", type=float, default=None, help="override the GPU's peak FLOP/s")
    parser.add_argument("--out", default=None, help="run directory (default: a temporary one)")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("benchmarks/gpu_train.py needs a CUDA GPU and none is available here (torch "
              f"{torch.__version__}, cuda build: {torch.version.cuda}). Run it on a GPU machine.", file=sys.stderr)
        return 2
    if not 1 <= args.warmup <= args.steps - 2:
        parser.error("--warmup must be at least 1 and at most --steps - 2 (the last step evaluates and saves)")

    from seqlab.accounting import training_step_flops
    from seqlab.lm.settings import TrainConfig
    from seqlab.lm.task import Trainer
    from seqlab.model import attention_backend
    from seqlab.runtime import gpu_peak_bf16_flops

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    scratch = tempfile.TemporaryDirectory(prefix="seqlab_gpu_train_")
    data_dir = Path(args.data_dir) if args.data_dir else synthetic_data(Path(scratch.name) / "data")
    out_dir = Path(args.out) if args.out else Path(scratch.name) / "run"
    config = TrainConfig(data_dir=str(data_dir), out_dir=str(out_dir), **MODEL, batch_size=args.batch_size,
                         max_steps=args.steps, warmup_steps=min(10, args.steps), lr=1e-3, device="cuda",
                         precision=args.precision, compile=args.compile, attention=args.attention,
                         eval_interval=10**9,
                         eval_batches=2, checkpoint_interval=10**9, log_interval=10,
                         overwrite=True)
    # The clock is read, after a synchronize, only at the two ends of the timed window: the steps in
    # between run as in a real run, where the trainer reads the loss to the host only at its log
    # steps (a synchronize per step would hide that the step itself never waits for the GPU).
    timed_from, timed_to = args.warmup, args.steps - 1  # the last step also evaluates and saves
    marks: dict[int, float] = {}

    def mark(trainer, step):
        if step in (timed_from, timed_to):
            torch.cuda.synchronize()
            marks[step] = time.perf_counter()

    trainer = Trainer(config, step_callbacks=[mark])
    run_start = time.perf_counter()
    result = trainer.run()
    timed_steps = timed_to - timed_from
    step_time = (marks[timed_to] - marks[timed_from]) / timed_steps
    tokens_per_step = config.tokens_per_step()
    flops = training_step_flops(trainer.model_config, config.context_length, config.batch_size)
    peak = args.peak_flops
    if peak is None and trainer.precision != "fp32":
        peak = gpu_peak_bf16_flops(torch.cuda.get_device_name())
    # what ran: the queries' device, dtype and head size decide (auto -> sdpa on CUDA; flash where it runs)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]
    queries = torch.empty(1, MODEL["d_model"] // MODEL["num_heads"], device="cuda", dtype=dtype)
    backend = attention_backend(args.attention, queries)
    report = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "parameters": trainer.raw_model.num_parameters(),
        "batch_size": config.batch_size,
        "precision": trainer.precision,
        "compiled": trainer.compiled,
        "attention": backend,
        "warmup_seconds": round(marks[timed_from] - run_start, 1),  # first steps, compilation included
        "timed_steps": timed_steps,
        "step_ms": round(step_time * 1000, 2),
        "tokens_per_second": round(tokens_per_step / step_time),
        "train_flops_per_step": flops,
        "achieved_tflops": round(flops / step_time / 1e12, 1),
        "peak_tflops": peak / 1e12 if peak else None,
        "mfu": round(flops / step_time / peak, 4) if peak else None,
        "minutes_for_327M_tokens": round(ASSIGNMENT_TOKENS / (tokens_per_step / step_time) / 60, 1),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "final_train_loss": result.train_loss,
    }
    print(json.dumps(report, indent=2))
    if report["mfu"] is None:
        print("MFU: unknown peak for this GPU; pass --peak-flops", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
