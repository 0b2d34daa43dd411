"""The LM head + cross-entropy: full logits vs seqlab.model.loss.linear_cross_entropy by chunk size.

    python benchmarks/linear_cross_entropy.py [--tokens 8192] [--vocab 10000] [--d-model 512]
                                              [--chunks 256,512,1024,2048,4096] [--repeats 3]
                                              [--device cpu|cuda] [--dtype fp32|bf16] [--threads N]
                                              [--clock wall|process] [--compile] [--no-memory]
                                              [--pad-vocab 128]

For each variant it times forward + backward (best of --repeats, after one warm-up) and measures
the peak memory it allocates above the inputs (benchmarks.instruments.peak_memory: torch.profiler's
allocation records on a CPU, max_memory_allocated on CUDA):

* ``full (seqlab)``: logits = hidden @ weight.T, then seqlab's cross_entropy (what the trainer did);
* ``full (F.cross_entropy)``: the same with torch's fused kernel (the peer);
* ``linear_cross_entropy chunk=C``: C tokens per block; ``chunk=default`` is chunk_size=None (on
  CUDA that is LINEAR_CE_GPU_BLOCKS equal blocks);
* ``--pad-vocab M``: also ``chunk=default pad=M``, the vocabulary of the fused loss's matmuls rounded
  up to a multiple of M (``pad_vocab_multiple``: e.g. 50,257 -> 50,304 with 128), issue 18 item 5.

The fastest chunk on the CPU is seqlab.model.loss.LINEAR_CE_CPU_ROWS (recorded in BENCHMARKS.md).
Add ``--compile`` on CUDA to time the torch.compile'd forms. Exits 2 when --device cuda has no GPU.
"""

from __future__ import annotations

import argparse
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))  # benchmarks.instruments
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--vocab", type=int, default=10_000)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--chunks", default="256,512,1024,2048,4096", help="comma-separated tokens per block")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--clock", default="wall", choices=("wall", "process"),
                        help="process = CPU time of this process (steady on a shared machine; use with --threads 1)")
    parser.add_argument("--compile", action="store_true", help="torch.compile each variant (CUDA)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory pass")
    parser.add_argument("--pad-vocab", type=int, default=0, help="also time the default chunking with the "
                        "vocabulary padded to a multiple of this (0: not)")
    args = parser.parse_args(argv)

    import torch
    import torch.nn.functional as F

    from benchmarks.instruments.peak_memory import peak_memory
    from seqlab.model.loss import cross_entropy, linear_cross_entropy

    if args.device == "cuda" and not torch.cuda.is_available():
        print("benchmarks/linear_cross_entropy.py --device cuda needs a CUDA GPU; none is available",
              file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    torch.manual_seed(0)
    hidden = torch.randn(args.tokens, args.d_model, device=device, dtype=dtype, requires_grad=True)
    weight = (torch.randn(args.vocab, args.d_model, device=device, dtype=dtype) / args.d_model**0.5).requires_grad_()
    targets = torch.randint(0, args.vocab, (args.tokens,), device=device)

    variants = {
        "full (seqlab)": lambda h, w, t: cross_entropy(h @ w.t(), t),
        "full (F.cross_entropy)": lambda h, w, t: F.cross_entropy((h @ w.t()).float(), t),
        "linear_cross_entropy chunk=default": lambda h, w, t: linear_cross_entropy(h, w, t),
    }
    if args.pad_vocab > 1:
        variants[f"linear_cross_entropy chunk=default pad={args.pad_vocab}"] = (
            lambda h, w, t: linear_cross_entropy(h, w, t, pad_vocab_multiple=args.pad_vocab))
    for chunk in (int(c) for c in args.chunks.split(",") if c):
        variants[f"linear_cross_entropy chunk={chunk}"] = (
            lambda h, w, t, _c=chunk: linear_cross_entropy(h, w, t, chunk_size=_c))

    clock = time.perf_counter if args.clock == "wall" else time.process_time

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize()

    print(f"tokens {args.tokens}, vocab {args.vocab}, d_model {args.d_model}, {args.dtype}, {device}, "
          f"{torch.get_num_threads()} threads, {args.clock} clock, torch {torch.__version__}")
    print(f"{'variant':40s} {'ms':>9s} {'peak MB':>9s}")
    reference = None
    for name, fn in variants.items():
        if args.compile:
            fn = torch.compile(fn)

        def run():
            hidden.grad = weight.grad = None
            loss = fn(hidden, weight, targets)
            loss.backward()
            return loss

        loss = run()  # warm-up (and compilation)
        if reference is None:
            reference = loss.detach().float()
        elif not torch.allclose(loss.detach().float(), reference, rtol=1e-2 if dtype != torch.float32 else 1e-5):
            print(f"{name}: loss {loss.item()} differs from {reference.item()}", file=sys.stderr)
            return 1
        best = float("inf")
        for _ in range(args.repeats):
            synchronize()
            start = clock()
            run()
            synchronize()
            best = min(best, clock() - start)
        peak = float("nan")
        if not args.no_memory:
            hidden.grad = weight.grad = None
            peak = peak_memory(run, device) / 1e6
        print(f"{name:40s} {best * 1e3:9.1f} {peak:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
