"""AdamW and clip_grad_norm: the per-parameter loop vs the multi-tensor (foreach) form.

    python benchmarks/adamw_foreach.py [--layers 4] [--d-model 512] [--vocab 10000] [--steps 20] [--rounds 3] [--device cpu|cuda]
                                       [--threads N] [--clock wall|process]

Model: the CS336 TinyStories shape (vocab 10,000, context 256, d_model 512, 16 heads, d_ff 1,344;
--layers 4 gives 39 parameter tensors, 22.7M entries), float32 parameters with random gradients.
It times, per step (best of --rounds, each the mean of --steps steps, rounds alternating):

* seqlab AdamW(foreach=False) (the loop) and AdamW(foreach=True);
* seqlab clip_grad_norm(foreach=False) and (foreach=True), with max norm 1 (every step scales);
* the peers torch.optim.AdamW(foreach=False) and (foreach=True), and (CUDA) fused=True;

and the aten operations of one step of each seqlab form (benchmarks.instruments.op_count). The CPU numbers
decide AdamW's and clip_grad_norm's foreach=None on a CPU (BENCHMARKS.md). Exits 2 when --device
cuda has no GPU.
"""

from __future__ import annotations

import argparse
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))  # benchmarks.instruments
import time

SHAPE = dict(vocab_size=10_000, context_length=256, d_model=512, num_heads=16, d_ff=1344)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=SHAPE["d_model"], help="width (d_ff = 2.625 x d_model)")
    parser.add_argument("--vocab", type=int, default=SHAPE["vocab_size"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--clock", default="wall", choices=("wall", "process"),
                        help="process = CPU time of this process (steady on a shared machine; use with --threads 1)")
    args = parser.parse_args(argv)

    import torch

    from benchmarks.instruments.op_count import OpCounter
    from seqlab.model import TransformerLM
    from seqlab.training.clipping import clip_grad_norm
    from seqlab.training.optimizer import AdamW, weight_decay_groups

    if args.device == "cuda" and not torch.cuda.is_available():
        print("benchmarks/adamw_foreach.py --device cuda needs a CUDA GPU; none is available", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    torch.manual_seed(0)
    shape = dict(SHAPE, vocab_size=args.vocab, d_model=args.d_model, d_ff=round(args.d_model * 2.625))
    model = TransformerLM(num_layers=args.layers, **shape, device=device)
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    variants = {
        "seqlab AdamW loop": AdamW(weight_decay_groups(model), foreach=False).step,
        "seqlab AdamW foreach": AdamW(weight_decay_groups(model), foreach=True).step,
        "seqlab clip_grad_norm loop": lambda: clip_grad_norm(params, 1.0, foreach=False),
        "seqlab clip_grad_norm foreach": lambda: clip_grad_norm(params, 1.0, foreach=True),
        "torch AdamW foreach=False (peer)": torch.optim.AdamW(weight_decay_groups(model), foreach=False).step,
        "torch AdamW foreach=True (peer)": torch.optim.AdamW(weight_decay_groups(model), foreach=True).step,
    }
    if device.type == "cuda":
        variants["torch AdamW fused=True (peer)"] = torch.optim.AdamW(weight_decay_groups(model), fused=True).step
    # the optimizers step on the same parameters: the numbers drift, the work per step does not
    for fn in variants.values():
        fn()  # creates the optimizer state
    best = {name: float("inf") for name in variants}
    for _ in range(args.rounds):
        for name, fn in variants.items():
            sync()
            start = clock()
            for _ in range(args.steps):
                fn()
            sync()
            best[name] = min(best[name], (clock() - start) / args.steps)
    print(f"{len(params)} parameter tensors, {sum(p.numel() for p in params):,} entries, {device}, "
          f"{torch.get_num_threads()} threads, {args.clock} clock, torch {torch.__version__}")
    print(f"{'variant':36s} {'ms/step':>9s} {'aten ops':>9s}")
    for name, fn in variants.items():
        ops = ""
        if name.startswith("seqlab"):
            with OpCounter() as counter:
                fn()
            ops = sum(n for op, n in counter.ops.items() if op.startswith("aten."))
        print(f"{name:36s} {best[name] * 1e3:9.2f} {ops:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
