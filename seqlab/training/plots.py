"""Loss-curve plot of a run: train and validation loss against steps and against wallclock time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_path


def plot_loss_curve(records: list[dict[str, Any]], path: str | Path, *, title: str | None = None) -> Path:
    """Write a two-panel PNG (loss vs step, loss vs wallclock minutes) atomically; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # no pyplot: no global state, safe outside the main thread

    path = Path(path)
    train = [r for r in records if r.get("train_loss") is not None]
    val = [r for r in records if r.get("val_loss") is not None]
    fig = Figure(figsize=(10, 4), layout="constrained")
    by_step, by_time = fig.subplots(1, 2, sharey=True)
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
    by_step.set_ylabel("cross-entropy loss (nats/token)")
    by_step.legend()
    if title:
        fig.suptitle(title)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    return path
