"""Heatmap PNGs for `seqlab interpret`: one matrix, its axes labelled with the actual tokens (or
layers and heads), a colour bar saying what the numbers are, and a title saying what they mean,
the absolute range of the values and any note (a saturated prediction, an effect below float32
resolution). The colour scale is fixed by ``bound`` (seqlab.interpret.notes.colour_scale: never
below a floor), so a map of rounding noise stays pale instead of filling the scale."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence

from seqlab.atomic import atomic_path


def heatmap(values, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str, colorbar: str,
            path: str | os.PathLike, row_title: str = "", col_title: str = "", cells: Sequence[Sequence[str]] | None = None,
            diverging: bool = False, bound: float | None = None, notes: Sequence[str] = ()) -> None:
    """Write values (rows, cols) as a PNG at ``path`` (atomically). cells: optional text per cell;
    diverging=True centres the colour map on 0 (signed effects), from -bound to bound; otherwise the
    scale runs from 0 to bound (default: the largest value); notes go under the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    data = np.asarray(values, dtype=float)
    rows, cols = data.shape
    width = min(24.0, 6.5 + 0.45 * cols + (0.4 * cols if cells is not None else 0))
    height = min(18.0, 2.0 + 0.35 * rows)
    fig, ax = plt.subplots(figsize=(width, height))
    if bound is None:
        bound = float(np.nanmax(np.abs(data))) if np.isfinite(data).any() else 1.0
    bound = bound or 1.0
    if diverging:
        image = ax.imshow(data, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto")
    else:
        image = ax.imshow(data, cmap="viridis", vmin=0.0, vmax=bound, aspect="auto")
    ax.set_xticks(range(cols), labels=list(col_labels), rotation=90 if cols > 8 else 0, fontsize=8)
    ax.set_yticks(range(rows), labels=list(row_labels), fontsize=8)
    ax.set_xlabel(col_title)
    ax.set_ylabel(row_title)
    if cells is not None:
        for r in range(rows):
            for c in range(cols):
                ax.text(c, r, cells[r][c], ha="center", va="center", fontsize=6, color="white")
    fig.colorbar(image, ax=ax, label=colorbar)
    lines = [line for part in (title, *(f"NOTE: {note}" for note in notes)) for line in part.split("\n")]
    ax.set_title("\n".join(wrapped for line in lines for wrapped in textwrap.wrap(line, int(width * 9))), fontsize=10,
                 color="black" if not notes else "#8a2a00")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
