"""CLI: ``seqlab induction`` (how a Transformer learns to copy: induction heads against one layer
and an LSTM). Only the standard library is imported here; torch loads inside the handler."""

from __future__ import annotations

import argparse
import os
import sys

from seqlab.cli_types import non_negative_int, positive_int


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "induction", help="the induction-head experiment: 1 vs 2 attention layers, MLPs, an LSTM",
        description="Train a 1-layer and a 2-layer attention-only Transformer, a 2-layer Transformer with MLPs "
                    "and an LSTM on random tokens ending in a repeated segment; at every evaluation log the "
                    "in-context loss (loss on the repeat minus loss before it) and every head's induction, "
                    "previous-token, duplicate-token and first-token scores; after training measure the accuracy "
                    "on the repeat against the repeat distance. Writes OUT/results.json, induction.png, report.md "
                    "and the runs under OUT/runs/. The same command run again continues (finished models are kept, "
                    "an interrupted one resumes from its checkpoint); other settings (--fast, --seed) into the same "
                    "OUT, or a non-empty OUT that is not this experiment's, are refused unless --overwrite. OUT is "
                    "locked while the experiment runs. Ctrl-C or SIGTERM saves the model in training and exits 130 "
                    "or 143; rerun to continue.")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the experiment's folder: new, empty, or one this command wrote (it is continued)")
    p.add_argument("--fast", action="store_true", help="a short smoke run (tiny models, few steps: the attention "
                   "models 300, the one with MLPs and the LSTM 70, so only attn1 against attn2 compares "
                   "architectures)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--threads", type=positive_int, default=None, metavar="N", help="torch CPU threads (default 1)")
    p.add_argument("--overwrite", action="store_true",
                   help="start over in --out: delete an earlier experiment's results, figure and runs there "
                        "(other files are left alone)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run_induction)


def _run_induction(args: argparse.Namespace) -> int:
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print(f"seqlab induction: error: --out {args.out} exists and is not a directory", file=sys.stderr)
        return 2
    from seqlab.induction.experiment import run_induction

    try:
        results = run_induction(args.out, fast=args.fast, seed=args.seed, threads=args.threads,
                                progress=not args.no_progress, overwrite=args.overwrite)
    except (ValueError, OSError, RuntimeError) as error:  # FileExistsError: another experiment's --out, a lock
        print(f"seqlab induction: error: {error}", file=sys.stderr)
        return 1
    note = (results.get("budgets") or {}).get("note")
    if note:
        print(note)
    print(f"{results['total_seconds']:.0f} s; report: {os.path.join(args.out, 'report.md')}")
    if results["status"] == "completed":
        return 0
    from seqlab.training.interrupt import stopped_exit_status

    return stopped_exit_status(results.get("stop_signal"))
