"""The figures of a sweep or a comparison, written atomically with matplotlib (Agg, no pyplot).

``curves.png``
    Training loss (top row) and validation loss (bottom row) against optimizer steps (left) and
    wall-clock minutes of training (right), one colour per run and one legend entry per run beside
    the panels; diverged runs are dashed. When the runs differ in tokens per step (a batch-size
    sweep), a third column puts them on one axis of training tokens. The loss axis ends a little
    above the highest starting loss, so one run that blew up does not flatten the others.

``final.png``
    The final validation loss against each swept value, one panel per swept key: numbers on a
    (log, when they span a factor of 10 or more) number line, anything else as categories. With
    more than one key, one line per combination of the other keys. Diverged runs are red crosses
    (at the top of the panel when they have no validation loss or one far above the others);
    unfinished runs are hollow circles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_path
from seqlab.sweep.grid import format_value
from seqlab.sweep.records import RunRecord


def _figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import (
        Figure,  # no pyplot: no global state, safe outside the main thread
    )

    return Figure(figsize=(width, height), layout="constrained")


def _save(fig, path: Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    return path


def _colors(count: int) -> list:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if count <= 10 else "tab20" if count <= 20 else "viridis"]
    if count > 20:
        return [cmap(i / max(1, count - 1)) for i in range(count)]
    return [cmap(i) for i in range(count)]


def _loss_limits(runs: list[RunRecord]) -> tuple[float, float] | None:
    """(low, high) of the loss axis: from the lowest loss to a little above the highest starting loss
    of the runs that did not diverge (of all runs when every one diverged)."""
    calm = [run for run in runs if run.status != "diverged" and (run.train or run.val)] or runs
    losses = [p[3] for run in calm for p in run.train + run.val]
    if not losses:
        return None
    starts = [run.train[0][3] for run in calm if run.train] or [max(losses)]
    low, high = min(losses), max(max(starts), min(losses) + 1e-3)
    pad = 0.05 * (high - low)
    return low - pad, high + 2 * pad


def plot_curves(runs: list[RunRecord], path: str | Path, *, title: str) -> Path:
    """curves.png (see the module docstring); returns the path."""
    return _save(curves_figure(runs, title=title), Path(path))


def curves_figure(runs: list[RunRecord], *, title: str):
    """The figure of curves.png: a 2 x (2 or 3) grid of axes, rows train / validation loss."""
    per_step = {run.train[-1][2] // run.train[-1][0] for run in runs
                if run.train and isinstance(run.train[-1][2], int) and run.train[-1][0]}
    longest = max((p[1] for run in runs for p in run.train + run.val), default=0.0)
    clock = (1 / 60, "minutes") if longest >= 120 else (1.0, "seconds")
    columns = [("step", 0, 1.0, "optimizer step"),
               ("wallclock", 1, clock[0], f"wall-clock time ({clock[1]} of training)")]
    if len(per_step) > 1:
        columns.append(("tokens", 2, 1.0, "training tokens"))
    fig = _figure(4.2 * len(columns) + 2.6, 7.0)
    axes = fig.subplots(2, len(columns), sharey="row", squeeze=False)
    limits = _loss_limits(runs)
    colors = _colors(len(runs))
    for row, (kind, label) in enumerate((("train", "training loss"), ("val", "validation loss"))):
        for col, (_key, index, scale, xlabel) in enumerate(columns):
            axis = axes[row][col]
            for run, color in zip(runs, colors):
                points = [p for p in getattr(run, kind) if p[index] is not None]
                if not points:
                    continue
                style = "--" if run.status == "diverged" else "-"
                axis.plot([p[index] * scale for p in points], [p[3] for p in points], style, color=color,
                          linewidth=1.2 if kind == "train" else 1.6, marker="o" if kind == "val" else None,
                          markersize=3, label=run.label if (row, col) == (0, 0) else None)
            axis.grid(alpha=0.3)
            if row == 1:
                axis.set_xlabel(xlabel)
            if col == 0:
                axis.set_ylabel(f"{label} (nats/token)")
            if limits is not None:
                axis.set_ylim(*limits)
    if any(run.train or run.val for run in runs):
        fig.legend(loc="outside right upper", fontsize=8 if len(runs) <= 12 else 6, title="run",
                   title_fontsize=9, ncols=1 if len(runs) <= 24 else 2)
    fig.suptitle(title)
    return fig


def _numeric(values: list[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def plot_final(runs: list[RunRecord], axes_keys: list[str], path: str | Path, *, title: str) -> Path:
    """final.png (see the module docstring) for the swept keys ``axes_keys``; returns the path."""
    return _save(final_figure(runs, axes_keys, title=title), Path(path))


def final_figure(runs: list[RunRecord], axes_keys: list[str], *, title: str):
    """The figure of final.png: one panel per swept key."""
    keys = axes_keys or ["run"]
    fig = _figure(max(5.0, 4.6 * len(keys)) + 1.5, 4.2)
    panels = fig.subplots(1, len(keys), squeeze=False)[0]
    calm = [run.final_val_loss for run in runs if run.final_val_loss is not None and run.status != "diverged"]
    finite = calm or [run.final_val_loss for run in runs if run.final_val_loss is not None]
    top = max(finite) if finite else 1.0
    bottom = min(finite) if finite else 0.0
    # diverged runs are drawn at this height when their loss is unknown or far above the others
    marker_y = top + 0.1 * max(top - bottom, 0.05 * abs(top), 1e-3)
    for axis, key in zip(panels, keys):
        values = [run.point.get(key) if key != "run" else run.name for run in runs]
        numeric = _numeric(values)
        categories = list(dict.fromkeys(format_value(v) for v in values))
        x_of = (lambda v: v) if numeric else (lambda v: categories.index(format_value(v)))
        others = [k for k in keys if k != key and k != "run"]
        groups: dict[str, list[tuple[Any, RunRecord]]] = {}
        for value, run in zip(values, runs):
            label = ", ".join(f"{k}={format_value(run.point.get(k))}" for k in others)
            groups.setdefault(label, []).append((value, run))
        for number, (label, members) in enumerate(groups.items()):
            members.sort(key=lambda m: x_of(m[0]))
            good = [(x_of(v), r.final_val_loss) for v, r in members
                    if r.status != "diverged" and r.final_val_loss is not None]
            line = axis.plot([g[0] for g in good], [g[1] for g in good], "-", color=f"C{number % 10}",
                             label=label or None, linewidth=1.4)[0]
            for v, r in members:
                if r.status == "diverged" or r.final_val_loss is None:
                    continue
                hollow = r.status != "finished"
                axis.plot([x_of(v)], [r.final_val_loss], "o", color=line.get_color(), markersize=6,
                          markerfacecolor="white" if hollow else line.get_color())
            crosses = [(x_of(v), min(r.final_val_loss, marker_y) if r.final_val_loss is not None else marker_y)
                       for v, r in members if r.status == "diverged"]
            for x, y in crosses:
                axis.plot([x], [y], "x", color="tab:red", markersize=9, markeredgewidth=2)
                axis.annotate("diverged", (x, y), textcoords="offset points", xytext=(0, -15), ha="center",
                              color="tab:red", fontsize=8)
        if numeric:
            positive = [v for v in values if v is not None and v > 0]
            if positive and len(positive) == len(values) and max(positive) / min(positive) >= 10:
                axis.set_xscale("log")
        else:
            axis.set_xticks(range(len(categories)), categories, rotation=20 if len(categories) > 4 else 0)
        axis.set_xlabel(key)
        axis.grid(alpha=0.3)
        if len(groups) > 1:
            axis.legend(fontsize=8)
    panels[0].set_ylabel("final validation loss (nats/token)")
    if finite:
        for axis in panels:
            axis.set_ylim(bottom - 0.1 * (marker_y - bottom) - 1e-3, marker_y + 0.1 * (marker_y - bottom) + 1e-3)
    fig.suptitle(title)
    return fig
