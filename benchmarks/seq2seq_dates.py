"""Wall time for a TransformerSeq2Seq to learn ``dates`` to 99% exact match on CPU.

Trains with ``seqlab seq2seq train`` settings (character vocabularies, greedy decoding) and stops
as soon as the validation exact match (greedy, on ``--valid-size`` unseen dates, checked every
``--eval-interval`` steps) reaches ``--target``. Then decodes ``--test-size`` further unseen
dates (a fresh seed, sources excluded from training) and reports exact match there, so the number
is not picked on the data that decided when to stop.

    python benchmarks/seq2seq_dates.py                    # the BENCHMARKS.md settings
    python benchmarks/seq2seq_dates.py --threads 1 --json

Wall time includes the evaluations (they are part of "time to 99%"); the total adds the start-up
(imports, generating pairs). The process's CPU time is printed too: on a shared machine the wall
time mostly measures the other jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--max-steps", type=int, default=3000, help="schedule length and hard cap")
    parser.add_argument("--train-size", type=int, default=20000)
    parser.add_argument("--eval-interval", type=int, default=100)
    parser.add_argument("--valid-size", type=int, default=1000, help="validation dates, all scored at each evaluation")
    parser.add_argument("--test-size", type=int, default=1000)
    parser.add_argument("--target", type=float, default=0.99)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="run directory (default: a temporary one)")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    t_start, cpu_start = time.perf_counter(), time.process_time()
    import torch

    from seqlab.seq2seq import Seq2SeqTrainConfig, evaluate_translations, load_run
    from seqlab.seq2seq.builtin_tasks import make_pairs
    from seqlab.seq2seq.data import load_pairs
    from seqlab.seq2seq.task import train

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="seq2seq-dates-") as tmp:
        out = args.out or os.path.join(tmp, "run")
        cfg = Seq2SeqTrainConfig(
            out_dir=out, task="dates", arch="transformer", d_model=args.d_model, num_heads=args.num_heads,
            num_layers=args.num_layers, train_size=args.train_size, max_steps=args.max_steps,
            batch_size=args.batch_size, lr=args.lr, warmup_steps=args.warmup_steps, eval_interval=args.eval_interval,
            eval_batches=-(-args.valid_size // args.batch_size), valid_size=args.valid_size,
            checkpoint_interval=args.max_steps, target_exact_match=args.target, seed=args.seed, threads=args.threads,
            device="cpu", progress=False, overwrite=True)
        result = train(cfg, say=lambda message: None)
        run = load_run(out, device="cpu")
        seen = {s for s, _ in load_pairs(cfg)[0]} | {s for s, _ in load_pairs(cfg)[1]}
        test = make_pairs("dates", args.test_size, seed=args.seed + 7_000_001, exclude=seen)
        scored = evaluate_translations(run.model, test, run.src_vocab, run.tgt_vocab)
    numbers = {
        "reached_target": result.stopped_by == "target reached", "target": args.target,
        "steps": result.steps, "train_wall_seconds": round(result.elapsed, 1),
        "total_wall_seconds": round(time.perf_counter() - t_start, 1),
        "process_cpu_seconds": round(time.process_time() - cpu_start, 1),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "validation_exact_match": result.metrics.get("val_exact_match"), "test_exact_match": scored.exact_match,
        "test_pairs": len(test), "parameters": result.parameters,
        "target_tokens_per_second": round(result.tokens_per_second),
        "threads": torch.get_num_threads(), "torch": torch.__version__, "cpus": os.cpu_count(),
        "settings": vars(args),
    }
    if args.json:
        print(json.dumps(numbers))
    else:
        state = "reached" if numbers["reached_target"] else "did NOT reach"
        print(f"transformer ({numbers['parameters']:,} parameters, {numbers['threads']} thread(s)) {state} "
              f"{args.target:.0%} validation exact match on dates after {result.steps} steps: "
              f"{numbers['train_wall_seconds']} s training (evaluations included), "
              f"{numbers['total_wall_seconds']} s in all ({numbers['process_cpu_seconds']} s of CPU; load average "
              f"{numbers['load_average_1min_at_end']} at the end)")
        print(f"exact match on {len(test)} further unseen dates: {scored.exact_match:.2%}; "
              f"{numbers['target_tokens_per_second']:,} target tokens/s in training steps")
    return 0 if numbers["reached_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
