"""aten operations (≈ GPU kernel launches) and host-device syncs of one training step, per backend.

    python benchmarks/launch_count.py [--batches 8,128] [--d-model 64] [--vocab-size 512] [--trainer]

Model: TransformerLM with context 256, 4 layers, 16 heads (the operation count does not depend on
the width or the vocabulary, so the defaults are small). For each attention backend it prints

* ops per forward + backward (model, cross-entropy, backward) at each batch size, counted on the
  "meta" device (shapes only: batch 128 costs nothing), which takes the GPU path like CUDA;
* ops and syncs of a whole training step (forward, loss, backward, clip_grad_norm, AdamW) at the
  first batch size on real CPU tensors, with the GPU path forced (seqlab.model.gpu_path_forced),
  and on the plain CPU path for comparison.

With ``--trainer`` it also runs the real ``seqlab.lm.Trainer`` (tiny model, built-in stories as
bytes) for 7 steps with log_interval 3 and prints the host reads of each step of the loop, on the
forced GPU path and on the CPU path: aten syncs plus ``Tensor.tolist``/``Tensor.numpy`` calls (these
read a CPU tensor without an aten operation, so a dispatch mode alone does not see them).

Goal (issue 11): with attention="reference" the forward + backward count is flat in the batch
(within 10%) and at most ~2,000; the training step makes 0 syncs on the GPU path. The same holds
for attention="sdpa" (issue 18), the backend "auto" picks on CUDA.
tests/model/test_attention_backends.py keeps these numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))  # benchmarks.instruments

ATTENTION_CHOICES = ("reference", "chunked", "sdpa")  # flash runs on CUDA only (here: Triton's interpreter)
SHAPE = dict(context_length=256, num_layers=4, num_heads=16)


def build(attention: str, device: str, d_model: int = 64, vocab_size: int = 512):
    import torch

    from seqlab.model import TransformerLM

    torch.manual_seed(0)
    return TransformerLM(vocab_size, SHAPE["context_length"], d_model, SHAPE["num_layers"], SHAPE["num_heads"],
                         attention=attention, device=device)


def count_forward_backward(attention: str, batch: int, *, device: str = "meta", d_model: int = 64,
                           vocab_size: int = 512) -> int:
    """aten operations of cross_entropy(model(x), y).backward() for one batch."""
    import torch

    from benchmarks.instruments.op_count import OpCounter
    from seqlab.model.loss import cross_entropy

    model = build(attention, device, d_model, vocab_size)
    ids = torch.zeros(batch, SHAPE["context_length"] + 1, dtype=torch.long, device=device)
    with OpCounter() as counter:
        cross_entropy(model(ids[:, :-1]), ids[:, 1:]).backward()
    return counter.total


def count_training_step(attention: str, batch: int, *, gpu_path: bool, d_model: int = 64,
                        vocab_size: int = 512):
    """OpCounter of the second full training step (the first creates AdamW's state) on CPU tensors."""
    import torch

    from benchmarks.instruments.op_count import OpCounter
    from seqlab.model import gpu_path_forced
    from seqlab.model.loss import cross_entropy
    from seqlab.training.clipping import clip_grad_norm
    from seqlab.training.optimizer import AdamW

    model = build(attention, "cpu", d_model, vocab_size)
    optimizer = AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, vocab_size, (batch, SHAPE["context_length"] + 1))

    def step():
        loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
        loss.backward()
        clip_grad_norm(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    with gpu_path_forced() if gpu_path else contextlib.nullcontext():
        step()
        with OpCounter() as counter:
            step()
    return counter


@contextlib.contextmanager
def counting_host_reads():
    """An OpCounter that also counts Tensor.tolist / Tensor.numpy calls (in ``counter.ops`` under those names)."""
    import torch

    from benchmarks.instruments.op_count import OpCounter

    counter = OpCounter()
    originals = {name: getattr(torch.Tensor, name) for name in ("tolist", "numpy")}

    def wrap(name):
        def read(tensor, *args, **kwargs):
            counter.ops[f"Tensor.{name}"] += 1
            return originals[name](tensor, *args, **kwargs)
        return read

    for name in originals:
        setattr(torch.Tensor, name, wrap(name))
    try:
        with counter:
            yield counter
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


def trainer_reads_per_step(gpu_path: bool, *, steps: int = 7, log_interval: int = 3) -> list[int]:
    """Host reads in each step of the real Trainer loop (step, log, eval and save of the last step, callbacks)."""
    import tempfile
    from pathlib import Path

    import numpy as np

    from seqlab.lm.settings import TrainConfig
    from seqlab.lm.stories import END_OF_TEXT, generate_stories
    from seqlab.lm.task import Trainer
    from seqlab.model import gpu_path_forced

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        for split, count in (("train", 200), ("valid", 20)):
            text = END_OF_TEXT.join(generate_stories(count, 0 if split == "train" else 1)).encode()
            np.save(data / f"{split}.npy", np.frombuffer(text, dtype=np.uint8).astype(np.uint16))
        (data / "meta.json").write_text(json.dumps({"vocab_size": 256, "dtype": "uint16"}))
        config = TrainConfig(data_dir=str(data), out_dir=str(Path(tmp) / "run"), context_length=16, d_model=16,
                             num_layers=1, num_heads=2, batch_size=4, threads=1, progress=False, eval_batches=1,
                             max_steps=steps, log_interval=log_interval, eval_interval=1000,
                             checkpoint_interval=1000)
        totals: list[int] = []  # reads so far when the loop starts (after the setup) and after each step

        class MarkedTrainer(Trainer):
            def _loop(self):
                totals.append(reads(counter))
                return super()._loop()

        with gpu_path_forced() if gpu_path else contextlib.nullcontext(), counting_host_reads() as counter:
            MarkedTrainer(config, step_callbacks=[lambda trainer, step: totals.append(reads(counter))]).run()
    return [b - a for a, b in zip(totals, totals[1:])]


def reads(counter) -> int:
    return counter.syncs + counter.ops["Tensor.tolist"] + counter.ops["Tensor.numpy"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", default="8,128", help="comma list of batch sizes")
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--vocab-size", type=int, default=512)
    parser.add_argument("--trainer", action="store_true", help="also count the host reads per step of the Trainer loop")
    parser.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    sizes = dict(d_model=args.d_model, vocab_size=args.vocab_size)
    print(f"TransformerLM context {SHAPE['context_length']}, {SHAPE['num_layers']} layers, "
          f"{SHAPE['num_heads']} heads, d_model {args.d_model}, vocab {args.vocab_size}")
    results: dict = {}
    header = " ".join(f"{'batch ' + str(b):>10s}" for b in batches)
    print(f"\nops per forward + backward (meta device = GPU path)\n{'backend':10s} {header}")
    for attention in ATTENTION_CHOICES:
        counts = [count_forward_backward(attention, b, **sizes) for b in batches]
        results[attention] = {"forward_backward_ops": dict(zip(batches, counts))}
        print(f"{attention:10s} " + " ".join(f"{c:>10,d}" for c in counts))
    batch = batches[0]
    print(f"\ntraining step (forward, loss, backward, clip, AdamW) at batch {batch}, CPU tensors")
    print(f"{'backend':10s} {'path':9s} {'ops':>7s} {'syncs':>6s}  sync operations")
    for attention in ATTENTION_CHOICES:
        for gpu_path in (True, False):
            counter = count_training_step(attention, batch, gpu_path=gpu_path, **sizes)
            path = "gpu" if gpu_path else "cpu"
            results[attention][f"step_{path}_path"] = {"ops": counter.total, "syncs": counter.syncs,
                                                       "sync_ops": dict(counter.sync_ops)}
            print(f"{attention:10s} {path:9s} {counter.total:7,d} {counter.syncs:6d}  {dict(counter.sync_ops) or ''}")
    if args.trainer:
        print("\nTrainer loop, 7 steps, log_interval 3 (eval and checkpoint at the last step): host reads per step")
        for gpu_path in (True, False):
            per_step = trainer_reads_per_step(gpu_path)
            path = "gpu" if gpu_path else "cpu"
            results[f"trainer_{path}_path_reads_per_step"] = per_step
            print(f"{path} path: {per_step}")
    if args.json:
        from seqlab.atomic import atomic_write_text

        atomic_write_text(args.json, json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
