"""induction.png: three panels, one colour per model (the same in each, one legend).

1. in-context loss (loss on the repeat minus loss before it, nats/token) against training steps:
   0 = the context does not help; the drop is the "induction bump";
2. the best last-layer head's induction score (mean attention from each repeated token to the
   token after its earlier copy) against steps, Transformers only: it rises with the drop of 1
   in the two-layer models and stays low in the one-layer model;
3. accuracy on the repeat against the repeat distance, every model (the LSTM's falls with distance).

When the models trained different numbers of steps, each label gives its steps and the title says
that only models of equal steps compare (:func:`seqlab.induction.results.budgets`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_path
from seqlab.induction.results import budgets

COLORS = {"attn1": "#d62728", "attn2": "#1f77b4", "mlp2": "#2ca02c", "lstm": "#9467bd"}


def induction_figure(results: dict[str, Any]):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4.6), layout="constrained")
    loss_ax, score_ax, distance_ax = fig.subplots(1, 3)
    budget = budgets(results)
    for name, record in results["models"].items():
        steps = "" if budget["equal"] else f", {record['steps']} steps"  # unequal budgets: each label says its own
        curve, color, label = record["curve"], COLORS.get(name, "black"), f"{record['label']} ({name}{steps})"
        loss_ax.plot(curve["steps"], curve["in_context_loss"], "-o", markersize=2.5, color=color, label=label)
        if record["arch"] == "transformer":
            score_ax.plot(curve["steps"], curve["induction"], "-o", markersize=2.5, color=color)
        bump = record.get("bump")
        if bump and record["arch"] == "transformer" and record["layers"] > 1:
            loss_ax.axvspan(bump["from_step"], bump["to_step"], color=color, alpha=0.12)
        distances = sorted(record["by_distance"], key=int)
        distance_ax.plot([int(d) for d in distances], [record["by_distance"][d] for d in distances], "-o",
                         markersize=3, color=color)
    loss_ax.axhline(0, color="grey", linewidth=0.8)
    loss_ax.set(title="In-context loss: loss on the repeat minus loss before it\n(below 0 = the context helps; "
                      "shaded: the largest drop)", xlabel="optimizer step", ylabel="nats per token")
    score_ax.set(title="Induction score of the best last-layer head\n(mean attention to the token after the "
                       "earlier copy)", xlabel="optimizer step", ylabel="score (0 to 1)", ylim=(0, 1.02))
    distance_ax.set(title="Accuracy on the repeat against the repeat distance\n(chance = 1 / vocabulary)",
                    xlabel="repeat distance (tokens back to the earlier copy)", ylabel="share of tokens predicted",
                    ylim=(0, 1.02))
    vocab = results["settings"]["vocab_size"]
    distance_ax.axhline(1 / vocab, color="grey", linewidth=0.8, linestyle=":")
    for axis in (loss_ax, score_ax, distance_ax):
        axis.grid(alpha=0.3)
    fig.legend(loc="outside lower center", ncols=len(results["models"]), fontsize=9)
    s = results["settings"]
    title = (f"How a Transformer learns to copy: random tokens (vocabulary {vocab}) ending in a segment repeated once, "
             f"distance {s['min_repeat']} to {s['half']}")
    if not budget["equal"]:
        counts = sorted(set(budget["steps"].values()), reverse=True)
        title += (f"\nUnequal budgets ({' vs '.join(f'{n} steps' for n in counts)}): a model trained fewer steps may "
                  "only be less trained; compare models at equal steps")
    fig.suptitle(title)
    return fig


def draw_induction(path: str | Path, results: dict[str, Any]) -> Path:
    with atomic_path(Path(path)) as tmp:
        induction_figure(results).savefig(tmp, dpi=110)
    return Path(path)
