"""Loss-curve plot of a run: train and validation loss against steps and against wallclock time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_path

SECOND_AXIS = {"val_exact_match": "validation exact match"}  # eval metrics in [0, 1], drawn on a right axis


def plot_loss_curve(records: list[dict[str, Any]], path: str | Path, *, title: str | None = None) -> Path:
    """Write a two-panel PNG (loss vs step, loss vs wallclock minutes) atomically; returns the path.

    The loss axis is logarithmic when every loss is positive (a seq2seq loss falls from about 3 to
    0.01, where a linear axis shows a flat line). When eval records carry a metric of SECOND_AXIS
    (seq2seq's validation exact match), it is drawn against a second, right-hand axis."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import (
        Figure,  # no pyplot: no global state, safe outside the main thread
    )

    path = Path(path)
    train = [r for r in records if r.get("train_loss") is not None]
    val = [r for r in records if r.get("val_loss") is not None]
    fig = Figure(figsize=(10, 4), layout="constrained")
    by_step, by_time = fig.subplots(1, 2, sharey=True)
    legend_lines = []  # the left panel's lines, the right-hand axis's included
    for axis, key, label in ((by_step, "step", "step"), (by_time, "wallclock", "wallclock (minutes)")):
        scale = 1 / 60 if key == "wallclock" else 1
        if train:
            axis.plot([r[key] * scale for r in train], [r["train_loss"] for r in train],
                      label="train", color="tab:blue", alpha=0.8, linewidth=1)
        if val:
            axis.plot([r[key] * scale for r in val], [r["val_loss"] for r in val],
                      label="validation", color="tab:orange", marker="o", markersize=3)
        axis.set_xlabel(label)
        axis.grid(alpha=0.3)
        losses = [r["train_loss"] for r in train] + [r["val_loss"] for r in val]
        if losses and min(losses) > 0:
            axis.set_yscale("log")
        for metric, name in SECOND_AXIS.items():
            points = [r for r in records if r.get(metric) is not None]
            if points:
                right = axis.twinx()
                right.plot([r[key] * scale for r in points], [r[metric] for r in points], label=name,
                           color="tab:green", marker="s", markersize=3)
                right.set_ylim(0, 1.02)
                right.set_ylabel(name)
                if axis is by_step:
                    legend_lines += right.get_lines()
    by_step.set_ylabel("cross-entropy loss (nats/token)")
    lines = by_step.get_lines() + legend_lines
    if legend_lines:  # a second axis: no corner is free of both, so the legend goes under the panels
        fig.legend(lines, [line.get_label() for line in lines], loc="outside lower center", ncols=len(lines))
    else:
        by_step.legend(lines, [line.get_label() for line in lines], loc="upper right")
    if title:
        fig.suptitle(title)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    return path
