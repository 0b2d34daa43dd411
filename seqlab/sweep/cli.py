"""CLI: ``seqlab sweep`` and ``seqlab compare``.

Only the standard library is imported here; the sweep (torch, training) loads in the handlers.
"""

from __future__ import annotations

import argparse
import os
import sys

from seqlab.cli_types import file_given_as_folder

RECIPE_CHOICES = ("lr", "batch-size", "ablations")


def register(subparsers) -> None:
    _register_sweep(subparsers)
    _register_compare(subparsers)


# -- seqlab sweep ------------------------------------------------------------------------------------


def _register_sweep(subparsers) -> None:
    from seqlab.lm.settings import add_config_arguments

    sweep = subparsers.add_parser(
        "sweep", help="train a grid of runs (learning rate, batch size, ablations) and plot them",
        description="Train one run per setting of the grid (the Cartesian product of every --grid) and/or "
                    "the --recipe, one after another with `seqlab train`'s engine, into OUT/<run name>/; then "
                    "write OUT/sweep.json, OUT/report.md, OUT/curves.png and OUT/final.png. The base settings "
                    "come from defaults < --from RUN's config.json < --config TOML < flags; every `seqlab "
                    "train` flag applies to every run. Rerunning the same command skips finished runs and "
                    "resumes unfinished ones exactly. A run whose loss becomes non-finite, or after warm-up jumps a nat "
                    "above its starting value or stays above it by more than the noise (5%) for 3 logged steps, "
                    "is recorded as diverged and the sweep goes on. Ctrl-C or "
                    "SIGTERM stops the whole sweep (the current run saves a checkpoint; exit 130 / 143). "
                    "--overwrite deletes this sweep's runs and starts it over. OUT is locked while the sweep "
                    "runs: a second sweep into it is refused, naming the first one's process. --out DIR (required) is the "
                    "sweep's directory: one run folder per setting, plus sweep.json, report.md, curves.png "
                    "and final.png.",
        epilog="example: seqlab sweep --data-dir demo_out/data --grid lr=1e-3,3e-3,1e-2 --grid batch-size=16,64 "
               "--max-steps 300 --out sweeps/lr_bs")
    sweep.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                       help="a TrainConfig field and its values (repeatable; runs are the Cartesian product), "
                            "e.g. --grid lr=1e-3,3e-3 --grid norm=rmsnorm,none")
    sweep.add_argument("--recipe", choices=RECIPE_CHOICES,
                       help="a CS336 experiment around the base config: lr (x1/10 .. x1000), batch-size (1 .. "
                            "x4 at equal tokens), ablations (baseline, no-rmsnorm, post-norm, nope, silu-ffn "
                            "at equal steps)")
    sweep.add_argument("--from", dest="from_run", metavar="RUN",
                       help="start from the settings of an existing run (its config.json); flags override them")
    add_config_arguments(sweep)
    sweep.set_defaults(func=_run_sweep)


def _base_config(args: argparse.Namespace):
    """The sweep's base TrainConfig: defaults < --from RUN < --config TOML < flags."""
    from seqlab.lm.settings import TrainConfig, config_from_args

    if args.from_run:
        from seqlab.runs.kinds import check_kind

        check_kind(args.from_run, "lm", "seqlab sweep --from")  # a seq2seq run, named as one
        if not os.path.isfile(os.path.join(args.from_run, "config.json")):
            raise FileNotFoundError(f"--from {args.from_run}: no config.json there (give the directory of a run "
                                    "made by `seqlab train`, `seqlab demo` or `seqlab sweep`)")
        # with --resume, config_from_args puts the run's config.json between the defaults and the
        # TOML file and flags: exactly the precedence --from needs
        args.resume, args.out_dir = True, args.from_run
    config = config_from_args(args)
    return TrainConfig(**{**config.to_dict(), "out_dir": "", "resume": False, "overwrite": False})


def _run_sweep(args: argparse.Namespace) -> int:
    # --out (the engine's out_dir flag) names the sweep's directory; each run goes to --out/<run name>
    out = vars(args).pop("out_dir", None)
    if not out:
        print("error: seqlab sweep needs --out DIR (the sweep's directory)", file=sys.stderr)
        return 2
    if "resume" in vars(args):
        print("error: seqlab sweep takes no --resume: rerunning the same sweep resumes its unfinished runs "
              "by itself", file=sys.stderr)
        return 2
    if file_given_as_folder(out, "--out"):
        return 2
    overwrite = bool(vars(args).get("overwrite", False))
    from seqlab.sweep.grid import GridError
    from seqlab.sweep.runner import plan_sweep, run_sweep

    try:
        plan = plan_sweep(_base_config(args), out, grid=args.grid, recipe=args.recipe)
    except (GridError, ValueError, FileNotFoundError) as error:  # a missing --config file fails (1)
        print(f"error: {error}", file=sys.stderr)
        return 1 if isinstance(error, FileNotFoundError) else 2
    print(f"sweep {plan.name}: {len(plan.variants)} runs into {out}/ (swept: {', '.join(plan.axes)})",
          file=sys.stderr)
    try:
        outcome = run_sweep(plan, overwrite=overwrite)
    except (ValueError, OSError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    counts: dict[str, int] = {}
    for record in outcome.records:
        counts[record.status] = counts.get(record.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    print(f"sweep {plan.name} {outcome.status}: {len(outcome.records)} runs ({summary})")
    if outcome.best is not None:
        print(f"best: {outcome.best.name}, final val loss {outcome.best.final_val_loss:.4f}")
    written = [n for n in ("sweep.json", "report.md", "curves.png", "final.png") if os.path.exists(os.path.join(out, n))]
    print(f"wrote {', '.join(os.path.join(out, n) for n in written)}")
    if outcome.status.finished:
        return 0
    from seqlab.training.interrupt import stopped_exit_status

    return stopped_exit_status(outcome.stop_signal)


# -- seqlab compare ----------------------------------------------------------------------------------


def _register_compare(subparsers) -> None:
    compare = subparsers.add_parser(
        "compare", help="the table and loss curves of any runs side by side",
        description="Read the config.json and log.jsonl of each RUN (from `seqlab train`, `seqlab demo`, "
                    "`seqlab sweep`, ...; a sweep's directory stands for all its runs) and write "
                    "OUT/compare.json, OUT/report.md (a table sorted by validation loss, finished runs first; runs of "
                    "another kind of model, vocabulary or validation set are ranked in groups of their own) and "
                    "OUT/curves.png "
                    "(training and validation loss against steps and wall-clock time, one line per run).")
    compare.add_argument("runs", nargs="+", metavar="RUN", help="run directories (or sweep directories)")
    compare.add_argument("--out", required=True, metavar="DIR",
                         help="where to write the comparison: a new or empty folder, or an earlier comparison")
    compare.add_argument("--overwrite", action="store_true", help="replace --out whole, whatever it holds")
    compare.set_defaults(func=_run_compare)


def _run_compare(args: argparse.Namespace) -> int:
    from seqlab.sweep.report import best_by_group, compare_runs, groups

    if file_given_as_folder(args.out, "--out"):
        return 2
    try:
        records = compare_runs(args.runs, args.out, overwrite=args.overwrite)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for record in records:
        loss = "—" if record.final_val_loss is None else f"{record.final_val_loss:.4f}"
        print(f"{record.name}: {record.status}, step {record.steps or 0}, final val loss {loss}"
              + (f" ({record.reason})" if record.reason and record.status == "finished" else ""))
    grouped = groups(records)
    if len(grouped) > 1:
        print(f"note: these runs fall into {len(grouped)} groups whose losses cannot be compared (another kind of "
              "model, vocabulary or validation set); each is ranked on its own:")
        best = best_by_group(records)
        for name, group in grouped.items():
            winner = f"best {best[name].name}" if name in best else "no finished run"
            print(f"  {name}: {', '.join(r.name for r in group)}; {winner}")
    print(f"wrote {os.path.join(args.out, 'report.md')}, {os.path.join(args.out, 'curves.png')}")
    return 0
