"""CLI: ``seqlab accounting``.

Only the standard library is imported at the top; the accounting modules load inside the handler.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from seqlab.cli_types import finite_float


def register(subparsers: Any) -> None:
    # plain data, no torch (the costs and report modules load in the handler)
    from seqlab.accounting.presets import (
        DEFAULT_MEMORY_GB,
        DEFAULT_MFU,
        DEFAULT_PEAK_FLOPS,
        DEFAULT_TRAIN_BATCH,
        DEFAULT_TRAIN_STEPS,
        PRESET_HELP,
        PRESETS,
    )

    p = subparsers.add_parser(
        "accounting", help="parameters, FLOPs, memory and training time of a Transformer LM",
        description="Parameter count, forward FLOPs by component (2mnp rule, full n x n attention), "
                    "training/AdamW FLOPs, float32 memory and training time, from the model config.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", choices=sorted(PRESETS), help=PRESET_HELP)
    src.add_argument("--config", metavar="FILE", help="TOML or JSON file with ModelConfig fields")
    p.add_argument("--context-length", type=int, help="sequence length (default: the model's)")
    p.add_argument("--batch-size", type=int, default=1, help="batch for FLOPs and memory (default 1)")
    p.add_argument("--memory-gb", type=finite_float, default=DEFAULT_MEMORY_GB,
                   help="accelerator memory for the largest batch (default 80 GB = 80e9 bytes)")
    p.add_argument("--steps", type=int, default=None,
                   help=f"training steps (default: the preset's own budget, e.g. tinystories 40000 x 32 sequences "
                        f"= CS336's 327.68M tokens; else {DEFAULT_TRAIN_STEPS})")
    p.add_argument("--train-batch-size", type=int, default=None,
                   help=f"batch for the training-time estimate (default: the preset's, else {DEFAULT_TRAIN_BATCH})")
    p.add_argument("--mfu", type=finite_float, default=DEFAULT_MFU, help="model FLOPs utilization (0.5)")
    p.add_argument("--peak-flops", type=finite_float, default=DEFAULT_PEAK_FLOPS,
                   help="peak FLOP/s (19.5e12, A100 float32)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _check_config_kind(path: str) -> None:
    """A run directory, or a seq2seq run's config.json, gets a message saying what to give instead."""
    import os

    from seqlab.runs.kinds import commands_for, run_kind

    kind = run_kind(path)
    if kind == "seq2seq":
        raise ValueError(f"{path} belongs to a seq2seq run (from `seqlab seq2seq train`): `seqlab accounting` "
                         "counts Transformer language models; for the seq2seq run use "
                         f"{commands_for('seq2seq', os.path.dirname(path) if path.endswith('config.json') else path)}; "
                         "its config.json records the parameter count (settings \"parameters\")")
    if os.path.isdir(path):
        hint = f"; for this run give --config {os.path.join(path, 'config.json')}" if kind == "lm" else ""
        raise ValueError(f"{path} is a directory; --config takes a TOML or JSON file of ModelConfig fields{hint}")


def _run(args: argparse.Namespace) -> int:
    from seqlab.accounting.presets import PRESETS, preset_note, training_budget
    from seqlab.accounting.report import (
        ReportOptions,
        account,
        as_model_config,
        format_report,
        load_config_file,
    )

    try:
        if args.config:
            _check_config_kind(args.config)
        try:
            fields_ = dict(PRESETS[args.preset]) if args.preset else load_config_file(args.config)
        except (ValueError, TypeError) as exc:  # a missing or damaged --config file fails (1)
            print(f"seqlab accounting: error: {exc}", file=sys.stderr)
            return 1
        shape = as_model_config(fields_)
        args.steps, args.train_batch_size, budget_source = training_budget(args.preset, args.steps,
                                                                           args.train_batch_size)
        positive = {"--batch-size": args.batch_size, "--context-length": args.context_length,
                    "--steps": args.steps, "--train-batch-size": args.train_batch_size,
                    "--memory-gb": args.memory_gb}
        wrong = [f"{flag} {value:g}" for flag, value in positive.items() if value is not None and not value > 0]
        if wrong:
            raise ValueError(f"these must be positive: {', '.join(wrong)}")
        report = account(shape, ReportOptions(
            context_length=args.context_length, batch_size=args.batch_size,
            memory_gb=args.memory_gb, train_steps=args.steps,
            train_batch_size=args.train_batch_size, mfu=args.mfu, peak_flops=args.peak_flops))
    except (ValueError, TypeError) as exc:
        where = f"{args.config}: " if args.config and not str(exc).startswith(str(args.config)) else ""
        print(f"seqlab accounting: error: {where}{exc}", file=sys.stderr)
        return 2
    note = preset_note(args.preset, report["parameters"]) if args.preset else None
    if budget_source:
        note = (note + "; " if note else "") + (f"training time for {budget_source} ({args.steps:,} steps of "
                                                f"{args.train_batch_size}); change it with --steps and "
                                                "--train-batch-size")
    if args.json:
        print(json.dumps({**report, "note": note} if note else report))
    else:
        print(format_report(report) + (f"\nnote: {note}" if note else ""))
    return 0
