"""`seqlab labs [--output DIR] [--only NAME]`: run every NumPy lab and report.

Prints each worked value next to the lecture's number, each gradient check with its max relative
error and PASS/FAIL against 1e-7, the final training losses and the greedy "hello" predictions.
Exits 1 if anything fails. With --output, writes DIR/results.json (nested: results["recurrence"]
["states"]) and DIR/loss_curves.png, each through a temporary file and os.replace.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from seqlab.atomic import atomic_path

LAB_NAMES = ("recurrence", "clipping", "mlp", "conv", "rnn", "lstm", "gru", "stacked", "attention", "char_lm")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "labs", help="run the NumPy reference labs: worked values and gradient checks",
        description="Run every NumPy lab (float64, hand-written gradients checked against finite differences).")
    parser.add_argument("--out", "--output", dest="output", type=Path, default=None,
                        help="directory for results.json and loss_curves.png (created if missing)")
    parser.add_argument("--only", choices=LAB_NAMES, default=None, metavar="NAME",
                        help=f"run one lab: {', '.join(LAB_NAMES)}")
    parser.set_defaults(func=run_labs)


def _short(value, limit: int = 60) -> str:
    if isinstance(value, float):
        text = f"{value:.10g}"
    elif isinstance(value, list) and value and all(isinstance(v, float) for v in value):
        text = "[" + ", ".join(f"{v:.10g}" for v in value) + "]"
    else:
        text = json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def format_report(run, tolerance: float) -> str:
    from seqlab.labs.gradcheck import passed  # the one pass rule (a NaN error fails)

    check_ok = {name: all(passed(e, tolerance) for e in errors.values())
                for name, errors in run.gradient_checks.items()}
    lines = [f"seqlab labs: worked values and gradient checks (float64, gradient tolerance {tolerance:g})"]
    sections = list(dict.fromkeys([c.section for c in run.comparisons] + list(run.check_sections.values())))
    sections.sort(key=lambda name: LAB_NAMES.index(name) if name in LAB_NAMES else len(LAB_NAMES))
    for section in sections:
        lines.append(f"\n== {section} ==")
        for c in (c for c in run.comparisons if c.section == section):
            status = "PASS" if c.ok else "FAIL"
            lines.append(f"  {status}  {c.label:<52} {_short(c.value, 44):<44} (expected {_short(c.expected, 44)})")
        for name, errors in run.gradient_checks.items():
            if run.check_sections[name] != section:
                continue
            worst = max(errors.values())
            status = "PASS" if check_ok[name] else "FAIL"
            detail = "  ".join(f"{param} {err:.1e}" for param, err in errors.items())
            lines.append(f"  {status}  gradient check {name:<37} max rel err {worst:.2e}")
            lines.append(f"        {detail}")
    results = run.results
    lines.append("\n== summary ==")
    if "xor" in results:
        lines.append(f"  XOR MLP final loss       {results['xor']['final_loss']:.6f}")
    if "char_lm" in results:
        lm = results["char_lm"]
        lines.append(f"  char LM final loss       {lm['final_loss']:.6f}  ({len(lm['loss_trace']) - 1} steps)")
        lines.append(f"  greedy 'hell' -> {lm['greedy']!r} (teacher forcing), from 'h' -> {lm['generated']!r} (free running)")
    lines.append(f"  gradient checks          {len(run.gradient_checks)} run, "
                 f"{sum(not ok for ok in check_ok.values())} failed")
    failures = run.failures
    lines.append("  ALL PASS" if not failures else "  FAILED: " + "; ".join(failures))
    return "\n".join(lines)


def write_json(results: dict, path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, allow_nan=False)
        f.write("\n")


def plot_loss_curves(curves: dict[str, list[float]], path: Path) -> None:
    """One panel per trained model, loss on a log scale against the gradient step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.6), squeeze=False)
    for ax, (name, trace) in zip(axes[0], curves.items()):
        ax.plot(range(len(trace)), trace, lw=1.5)
        ax.set_yscale("log")
        ax.set_title(f"{name}\nfinal loss {trace[-1]:.4g}")
        ax.set_xlabel("gradient step")
        ax.set_ylabel("mean cross-entropy")
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)


def _output_error(out_dir: Path, error: OSError) -> str:
    reason = error.strerror or str(error)
    where = f" ({error.filename})" if error.filename and str(error.filename) != str(out_dir) else ""
    return f"error: cannot write to --output {out_dir}: {reason}{where}; give a directory you can write to"


def run_labs(args: argparse.Namespace) -> int:
    from seqlab.labs.gradcheck import TOLERANCE
    from seqlab.labs.results import collect

    start = time.perf_counter()
    out_dir = None if args.output is None else Path(args.output)
    if out_dir is not None:  # refused before the labs run, not after
        if out_dir.exists() and not out_dir.is_dir():
            print(f"error: --output {out_dir} exists and is not a directory", file=sys.stderr)
            return 2
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:  # the folder cannot be made: a failure, like a write that fails later
            print(_output_error(out_dir, error), file=sys.stderr)
            return 1
    run = collect(args.only)
    written = []
    if out_dir is not None:   # files first: the report may go to a closed pipe (| head)
        try:
            write_json(run.results, out_dir / "results.json")
            written.append(out_dir / "results.json")
            if run.curves:
                plot_loss_curves(run.curves, out_dir / "loss_curves.png")
                written.append(out_dir / "loss_curves.png")
        except OSError as error:
            print(_output_error(out_dir, error), file=sys.stderr)
            return 1
    print(format_report(run, TOLERANCE))
    for path in written:
        print(f"wrote {path}")
    print(f"done in {time.perf_counter() - start:.2f} s")
    return 1 if run.failures else 0
