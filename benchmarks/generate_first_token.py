"""Time to the first streamed token of ``seqlab.inference.generate_stream`` against the number of
tokens requested (issue 21: a request for 10**9 tokens used to plan and allocate every step before
the first one). TinyStories-shaped model, random init, CPU.

Usage: python benchmarks/generate_first_token.py [--threads 1] [--repeats 3]

Prints, for max_new_tokens 10, 10**4, 10**6 and 10**9: the best time to the first token, the time
to the first 300 tokens (past the 256-token context, so one window slide is included) and the
process's peak resident memory afterwards. The first-token times should be equal within noise.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from itertools import islice

import torch

from seqlab.inference.generate import generate_stream
from seqlab.model import TransformerLM

TINYSTORIES = dict(vocab_size=10000, context_length=256, d_model=512, num_layers=4, num_heads=16,
                   d_ff=1344, rope_theta=10000.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = TransformerLM(**TINYSTORIES).eval()
    prompt = list(range(1, 17))
    list(islice(generate_stream(model, prompt, 10, temperature=0), 10))  # warm-up
    rows = []
    for requested in (10, 10**4, 10**6, 10**9):
        first, three_hundred = float("inf"), float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            stream = generate_stream(model, prompt, requested, temperature=0)
            next(stream)
            first = min(first, time.perf_counter() - start)
            if requested >= 300:
                list(islice(stream, 299))
                three_hundred = min(three_hundred, time.perf_counter() - start)
        rows.append({"max_new_tokens": requested, "first_token_s": round(first, 4),
                     "first_300_tokens_s": None if requested < 300 else round(three_hundred, 3),
                     "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
        print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
