"""The cost of `seqlab train --track-heads`: the head-score eval hook against the evaluation it
joins, on seqlab demo's model (vocab 1,024, context 128, d_model 128, 4 layers, 4 heads).

    python benchmarks/track_heads.py [--repeats 5] [--threads 2]

Times (median of --repeats, random weights of the shape): the hook (one forward of 4 x 64
repeated tokens through the model's blocks with attention weights, and the four scores), and the
demo's own evaluation (eval_batches 10 x batch 16 x 128 tokens, seqlab.lm.evaluation's formula).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqlab.lm.telemetry import head_score_hook
from seqlab.model import ModelConfig, TransformerLM
from seqlab.model.loss import cross_entropy
from seqlab.training.task import EvalContext


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=1024, context_length=128, d_model=128, num_layers=4, num_heads=4)
    model = TransformerLM.from_config(config).eval()
    hook = head_score_hook(config.vocab_size, config.context_length)
    where = EvalContext(torch.device("cpu"), "fp32", [slice(0, 16)], 16)
    batches = [torch.randint(0, 1024, (16, 129)) for _ in range(10)]

    def evaluation() -> None:
        with torch.no_grad():
            for ids in batches:
                cross_entropy(model(ids[:, :-1]), ids[:, 1:]).item()

    def tracked() -> None:
        with torch.no_grad():
            hook(model, where)

    t_hook, t_eval = median_seconds(tracked, args.repeats), median_seconds(evaluation, args.repeats)
    print(f"threads {args.threads}: head-score hook {1000 * t_hook:.1f} ms per evaluation; the demo's evaluation "
          f"{1000 * t_eval:.1f} ms; overhead {100 * t_hook / t_eval:.1f}% of an evaluation")


if __name__ == "__main__":
    main()
