"""Tokens/s of batched generation whose rows slide their windows at different steps (CPU).

Usage: python benchmarks/generate_batch_slide.py [--batch 8] [--new-tokens 256] [--repeats 1] [--threads 1]

Prompts of evenly spread lengths (16 .. context - 16) in one batch, greedy, KV cache on: every row
slides on its own schedule (seqlab/inference/windows.py), so the batch pays one re-prefill per
row per slide instead of one per batch. The script times the batch against the same prompts
generated one at a time and counts the rows whose batched output equals their output alone
(all of them since issue 13; run it with PYTHONPATH pointing at an older checkout to compare).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import torch

from seqlab.inference.generate import generate
from seqlab.model import TransformerLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_kv_cache import TINYSTORIES, time_call  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, shared machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    model = TransformerLM(**TINYSTORIES).eval()
    ctx = TINYSTORIES["context_length"]
    lengths = torch.linspace(16, ctx - 16, args.batch).round().long().tolist()
    prompts = [torch.randint(0, TINYSTORIES["vocab_size"], (n,)).tolist() for n in lengths]
    generate(model, prompts[0], 8, temperature=0)  # warm-up

    t_batch, batched = time_call(lambda: generate(model, prompts, args.new_tokens, temperature=0), args.repeats)
    t_alone, alone = time_call(lambda: [generate(model, p, args.new_tokens, temperature=0) for p in prompts],
                               args.repeats)
    result = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}",
        "batch": args.batch,
        "prompt_tokens": lengths,
        "new_tokens": args.new_tokens,
        "batched_tokens_per_s": args.batch * args.new_tokens / t_batch,
        "one_at_a_time_tokens_per_s": args.batch * args.new_tokens / t_alone,
        "speedup_from_batching": t_alone / t_batch,
        "rows_equal_to_alone": sum(b == a for b, a in zip(batched, alone)),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
