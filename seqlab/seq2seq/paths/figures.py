"""The figures of ``seqlab paths`` (matplotlib, Agg): ``paths.png`` (exact match vs source length),
``attention_{task}_{arch}.png`` and ``dependency_{task}.png``.

``paths.png`` draws :func:`seqlab.seq2seq.paths.chart.chart_data`, the same data and styles the
explorer's section 14 draws: one panel per task, one line per architecture in its colour, dash
and marker, each point with its 95% Wilson interval; under each panel a strip with the number of
test pairs at each length (the lengths under the small-sample rule are pale and left out above);
one legend for the figure; coinciding lines named under the panel.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import torch

from seqlab.atomic import atomic_path
from seqlab.seq2seq.paths.chart import MIN_PAIRS, chart_data

MARKERS = {"circle": "o", "square": "s", "triangle": "^"}
LINE_WIDTH = 1.6
SHADE = "#d9d9d9"


def save_figure(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)


def line_style(dash: list[float] | tuple[float, ...]) -> Any:
    """matplotlib's linestyle for a dash pattern in line widths (matplotlib scales dashes by the
    line width, as the page does with stroke-dasharray)."""
    return "-" if not dash else (0, tuple(dash))


def draw_attention(path: Path, maps: torch.Tensor, src_labels: list[str], tgt_labels: list[str],
                   title: str) -> None:
    """One panel per decoder layer of maps (layers, 1, heads, T, S): its attention over the source, mean over heads."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, 3.6 * len(maps) + 1), 4.0), layout="constrained")
    axes = fig.subplots(1, len(maps), squeeze=False)[0]
    means = [weights[0].float().mean(0) for weights in maps]
    peak = max(float(mean.max()) for mean in means)  # one scale for every panel, shown by the colour bar
    for layer, (axis, mean) in enumerate(zip(axes, means)):
        image = axis.imshow(mean.numpy(), cmap="viridis", vmin=0, vmax=peak, aspect="auto")
        axis.set_xticks(range(len(src_labels)), src_labels, fontsize=7)
        axis.set_yticks(range(len(tgt_labels)), tgt_labels, fontsize=7)
        axis.set_xlabel("source")
        axis.set_title(f"layer {layer}" if len(maps) > 1 else "attention", fontsize=9)
    axes[0].set_ylabel("output (predicting)")
    fig.colorbar(image, ax=list(axes), label="attention weight (mean over heads)", shrink=0.9)
    fig.suptitle(title, fontsize=10)
    save_figure(fig, path)


def draw_dependency(path: Path, deps: dict[str, torch.Tensor], src_labels: list[str], tgt_labels: list[str],
                    title: str) -> None:
    """One panel per architecture: Jacobian norm of each output's logits w.r.t. each source
    embedding, each row scaled to sum to 1."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.4 * len(deps) + 1, 3.6), layout="constrained")
    axes = fig.subplots(1, len(deps), squeeze=False)[0]
    shares = {arch: dep / dep.sum(-1, keepdim=True).clamp_min(1e-12) for arch, dep in deps.items()}
    peak = max(float(rows.max()) for rows in shares.values())  # one scale for every panel (the colour bar)
    for axis, (arch, rows) in zip(axes, shares.items()):
        image = axis.imshow(rows.numpy(), cmap="magma", vmin=0, vmax=peak, aspect="auto")
        axis.set_xticks(range(len(src_labels)), src_labels, fontsize=7)
        axis.set_yticks(range(len(tgt_labels)), tgt_labels, fontsize=7)
        axis.set_xlabel("source position")
        axis.set_title(arch, fontsize=9)
    axes[0].set_ylabel("output position")
    fig.colorbar(image, ax=list(axes), label="share of the output's dependency\n(each row sums to 1)", shrink=0.9)
    fig.suptitle(title, fontsize=10)
    save_figure(fig, path)


def panel_notes(task: dict[str, Any]) -> list[str]:
    """The lines under a panel: pairs per length, what the small-sample rule left out, coinciding lines."""
    notes = []
    if task["pairs_per_length"]:
        low, high = task["pairs_per_length"]
        notes.append(f"{low} test pairs per length" if low == high else f"{low}-{high} test pairs per length")
    left = task["left_out"]
    if left["lengths"]:
        count = len(left["lengths"])
        notes.append(f"{count} length{'s' if count > 1 else ''} with < {MIN_PAIRS} pairs left out ({left['pairs']} pairs)")
    for group in task["coincide"]:
        notes.append(f"{' = '.join(group)} at every length (points shifted sideways)")
    if task["missing"]:
        notes.append(f"not trained yet: {', '.join(task['missing'])}")
    return notes


def paths_figure(results: dict[str, Any]):
    """The Figure of paths.png (see the module docstring); each architecture's main line has its
    name as label and gid."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter

    data = chart_data(results)
    tasks, styles = data["tasks"], data["styles"]
    fig = Figure(figsize=(4.6 * max(1, len(tasks)), 5.0), layout="constrained")
    grid = fig.add_gridspec(2, max(1, len(tasks)), height_ratios=[4, 1])
    drawn: list[str] = []
    shaded = False
    for col, task in enumerate(tasks):
        axis = fig.add_subplot(grid[0, col])
        strip = fig.add_subplot(grid[1, col], sharex=axis)
        lengths = sorted({p[0] for a in task["archs"] for p in a["points"]})
        for arch in task["archs"]:
            style, points = styles[arch["arch"]], arch["shown"]
            ys = [p["exact_match"] for p in points]
            errors = [[max(0.0, y - p["low"]) for y, p in zip(ys, points)],  # >= 0 however y was rounded
                      [max(0.0, p["high"] - y) for y, p in zip(ys, points)]]
            bars = axis.errorbar([p["x"] for p in points], ys, yerr=errors, color=style["color"],
                                 linestyle=line_style(style["dash"]), linewidth=LINE_WIDTH,
                                 marker=MARKERS.get(style["marker"], "o"), markersize=4.5, elinewidth=0.8,
                                 capsize=2, label=arch["arch"])
            bars.lines[0].set_gid(arch["arch"])
            drawn += [arch["arch"]] if arch["arch"] not in drawn else []
        if task["train_lengths"] and lengths and lengths[-1] > task["train_lengths"][1]:
            for ax in (axis, strip):
                ax.axvspan(task["train_lengths"][1] + 0.5, lengths[-1] + 0.5, color=SHADE, alpha=0.45, linewidth=0)
            shaded = True
        counts = {p[0]: p[2] for a in task["archs"] for p in a["points"]}
        strip.bar(lengths, [counts[n] for n in lengths], width=0.7,
                  color=["#8c8c8c" if counts[n] >= MIN_PAIRS else "#e0e0e0" for n in lengths])
        strip.axhline(MIN_PAIRS, color="#555555", linewidth=0.8, linestyle=(0, (3, 2)))
        axis.set_ylim(-0.03, 1.03)
        axis.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        axis.set_title(task["task"])
        axis.grid(alpha=0.3)
        axis.tick_params(labelbottom=False)
        if lengths:
            axis.set_xlim(lengths[0] - 0.6, lengths[-1] + 0.6)
        notes = [line for note in panel_notes(task) for line in textwrap.wrap(note, 58)]
        strip.set_xlabel("\n".join(["source length (characters)", *notes]), fontsize=9)
        strip.tick_params(labelsize=8)
        strip.set_ylim(0, max([*counts.values(), MIN_PAIRS]) * 1.15)
        if col == 0:
            axis.set_ylabel("exact match (95% Wilson interval)")
            strip.set_ylabel("test pairs", fontsize=8)
    handles = [Line2D([], [], color=styles[a]["color"], linestyle=line_style(styles[a]["dash"]), linewidth=LINE_WIDTH,
                      marker=MARKERS.get(styles[a]["marker"], "o"), markersize=4.5, label=a) for a in drawn]
    if shaded:
        handles.append(Patch(color=SHADE, alpha=0.45, label="longer than training"))
    if handles:
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), fontsize=9, frameon=False)
    return fig


def draw_paths(path: Path, results: dict[str, Any]):
    """paths.png; returns the Figure."""
    fig = paths_figure(results)
    save_figure(fig, path)
    return fig
