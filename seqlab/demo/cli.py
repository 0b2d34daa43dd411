"""CLI: ``seqlab demo``.

Only the standard library is imported here; the pipeline (torch, training, inference) loads in the
handler.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from seqlab.cli_types import finite_float, non_negative_int


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo", help="train a small story model end to end on built-in data (two minutes, no internet)",
        description="Write a built-in story corpus (from a small story grammar), train BPE, prepare data, "
                    "train a small model, evaluate, sample a story and write OUT/report.md, all in about "
                    "two minutes (--minutes): training stops when the time left is spent.")
    demo.add_argument("--out", default="demo_out", help="output directory (default: demo_out)")
    demo.add_argument("--overwrite", action="store_true",
                      help="replace an existing --out (the new demo is built beside it and swapped in whole)")
    demo.add_argument("--minutes", type=finite_float, default=2.0,
                      help="length of the whole demo in minutes; training gets what the other stages leave "
                           "(default: 2)")
    demo.add_argument("--fast", action="store_true", help="a few-second smoke run (tiny corpus and model, 40 steps)")
    demo.add_argument("--seed", type=non_negative_int, default=0)
    demo.add_argument("--no-progress", action="store_true")
    demo.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if not args.minutes > 0:
        print(f"error: --minutes must be > 0, got {args.minutes:g}", file=sys.stderr)
        return 2
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print(f"error: --out {args.out} exists and is not a directory", file=sys.stderr)
        return 2
    from seqlab.demo.pipeline import run_demo

    try:
        report = run_demo(args.out, minutes=args.minutes, fast=args.fast, seed=args.seed,
                          progress=not args.no_progress, overwrite=args.overwrite)
    except (ValueError, OSError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"report: {report}")
    return 0
