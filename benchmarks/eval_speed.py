"""`seqlab eval`'s speed against the training step's forward pass, on the same model and tokens.

The peer is what training does for every batch: the model's forward pass and the loss, with autograd
recording (the forward half of a training step). Evaluation does the same arithmetic without
autograd, so it should be at least as fast per token; this script measures both in tokens/s.

    python benchmarks/eval_speed.py                      # a TinyStories-shaped model, 1 and all threads
    python benchmarks/eval_speed.py --threads 2 --tokens 65536
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from seqlab.lm.evaluation import evaluate
from seqlab.model import ModelConfig, TransformerLM
from seqlab.model.loss import cross_entropy


def forward_tokens_per_second(model: TransformerLM, data: np.ndarray, batch_size: int, context: int,
                              repeats: int) -> float:
    """Tokens/s of the training step's forward pass (model + loss, autograd on, train mode)."""
    model.train()
    windows = np.lib.stride_tricks.sliding_window_view(data[: batch_size * context + 1], context + 1)[::context]
    tokens = torch.from_numpy(np.ascontiguousarray(windows[:batch_size], dtype=np.int64))
    cross_entropy(model(tokens[:, :-1]).float(), tokens[:, 1:])  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        loss = cross_entropy(model(tokens[:, :-1]).float(), tokens[:, 1:])
        del loss
    return repeats * tokens[:, 1:].numel() / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="*", default=None, help="thread counts (default: 1 and all)")
    parser.add_argument("--tokens", type=int, default=32 * 256 * 4 + 1, help="tokens to evaluate")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    config = ModelConfig(vocab_size=10_000, context_length=256, d_model=256, num_layers=4, num_heads=8, d_ff=704)
    torch.manual_seed(0)
    model = TransformerLM.from_config(config)
    data = np.random.default_rng(0).integers(0, config.vocab_size, args.tokens).astype(np.uint16)
    counts = args.threads or sorted({1, torch.get_num_threads()})
    print(f"model: {model.num_parameters():,} parameters, context {config.context_length}, batch {args.batch_size}; "
          f"{args.tokens:,} tokens")
    for threads in counts:
        torch.set_num_threads(threads)
        forward = forward_tokens_per_second(model, data, args.batch_size, config.context_length, repeats=3)
        evaluate(model, data[: args.batch_size * config.context_length + 1], args.batch_size)  # warm-up
        started = time.perf_counter()
        result = evaluate(model, data, args.batch_size)
        rate = result.tokens / (time.perf_counter() - started)
        print(f"threads {threads}: eval {rate:,.0f} tokens/s, training forward {forward:,.0f} tokens/s, "
              f"ratio {rate / forward:.2f}")


if __name__ == "__main__":
    main()
