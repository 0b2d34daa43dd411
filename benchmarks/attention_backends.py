"""Attention backends side by side: reference, chunked, sdpa (torch's fused kernel) and flash (Triton).

    python benchmarks/attention_backends.py [--device cuda|cpu] [--shapes cs336,gpt2] [--dtype bf16]
                                            [--repeats 20] [--causal/--no-causal] [--threads N]

Shapes (batch, heads, seq, head_dim): ``cs336`` = (128, 16, 256, 32), the TinyStories model's
attention; ``gpt2`` = (16, 12, 1024, 64), GPT-2 small's; ``small`` = (8, 8, 128, 32) for a quick CPU
look. For each backend it checks the output against the reference (max abs difference printed),
then times forward alone and forward + backward (median of --repeats after warm-up; CUDA events
via torch.cuda.synchronize) and reports the peak memory of forward + backward.

On CUDA (the default) all four backends run (flash needs triton); this is the measurement behind
`auto` on CUDA (BENCHMARKS.md). Without a CUDA GPU, --device cuda exits 2 with a message;
--device cpu times reference, chunked and sdpa in float32 (flash only runs in Triton's slow
interpreter on a CPU, so it is skipped there).
"""

from __future__ import annotations

import argparse
import statistics
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))  # benchmarks.instruments
import time

SHAPES = {"cs336": (128, 16, 256, 32), "gpt2": (16, 12, 1024, 64), "small": (8, 8, 128, 32)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--shapes", default="cs336,gpt2", help=f"comma-separated, from {sorted(SHAPES)}")
    parser.add_argument("--dtype", default=None, choices=("bf16", "fp16", "fp32"),
                        help="default: bf16 on CUDA, fp32 on a CPU")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shape(s) {unknown}; choose from {sorted(SHAPES)}")

    import torch

    from benchmarks.instruments.peak_memory import peak_memory
    from seqlab.model.attention import scaled_dot_product_attention
    from seqlab.model.backend_support import attention_backend_supports
    from seqlab.model.chunked_attention import chunked_attention
    from seqlab.model.sdpa_attention import sdpa_attention

    def attention_function(name):
        if name == "flash":
            from seqlab.model.flash_attention import flash_attention

            return flash_attention
        return {"reference": scaled_dot_product_attention, "chunked": chunked_attention, "sdpa": sdpa_attention}[name]

    if args.device == "cuda" and not torch.cuda.is_available():
        print("benchmarks/attention_backends.py needs a CUDA GPU for the flash and sdpa kernels it compares; "
              "none is available (run with --device cpu for the CPU backends)", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[
        args.dtype or ("bf16" if device.type == "cuda" else "fp32")]

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def timed(fn) -> float:
        fn()
        sync()
        times = []
        for _ in range(args.repeats):
            sync()
            start = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    print(f"{device}, {dtype}, causal={args.causal}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name() if device.type == 'cuda' else f'{torch.get_num_threads()} threads'}")
    for shape_name in shapes:
        batch, heads, seq, head_dim = SHAPES[shape_name]
        torch.manual_seed(0)
        q, k, v = (torch.randn(batch, heads, seq, head_dim, device=device, dtype=dtype, requires_grad=True)
                   for _ in range(3))
        grad_out = torch.randn_like(q)
        print(f"\n{shape_name}: batch {batch}, heads {heads}, seq {seq}, head_dim {head_dim}")
        print(f"{'backend':10s} {'fwd ms':>9s} {'fwd+bwd ms':>11s} {'peak MB':>9s} {'max |diff|':>11s}")
        with torch.no_grad():
            expected = attention_function("reference")(q, k, v, causal=args.causal).float()
        for name in ("reference", "chunked", "sdpa", "flash"):
            if name == "flash" and device.type == "cpu":
                print(f"{name:10s} (CUDA only; on a CPU it runs in Triton's interpreter, not worth timing)")
                continue
            if not attention_backend_supports(name, device, dtype, has_mask=False, head_dim=head_dim):
                print(f"{name:10s} (not supported here: needs triton and a CUDA GPU)")
                continue
            fn = attention_function(name)

            def forward(fn=fn):
                with torch.no_grad():
                    return fn(q, k, v, causal=args.causal)

            def forward_backward(fn=fn):
                q.grad = k.grad = v.grad = None
                fn(q, k, v, causal=args.causal).backward(grad_out)

            diff = (forward().float() - expected).abs().max().item()
            fwd, both = timed(forward), timed(forward_backward)
            peak = peak_memory(forward_backward, device) / 1e6
            print(f"{name:10s} {fwd * 1e3:9.2f} {both * 1e3:11.2f} {peak:9.1f} {diff:11.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
