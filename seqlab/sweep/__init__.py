"""Experiments over many runs: ``seqlab sweep`` (a grid or a recipe of runs, trained one after
another with ``seqlab train``'s engine) and ``seqlab compare`` (the same table and curves for any runs).

``grid`` parses ``--grid KEY=V1,V2`` and names the runs, ``recipes`` holds the CS336 experiments
(learning rate, batch size, ablations), ``divergence`` stops a run whose loss runs away, ``records``
reads what a run directory says (status, losses, tokens, speed), ``report`` writes sweep.json /
report.md, ``figures`` draws curves.png and final.png, ``progress`` prints a line per run with the
sweep's ETA, and ``runner`` runs (and resumes) a sweep. Names load on first use (``seqlab/lazy.py``).
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.sweep.grid": ("Axis", "GridError", "Variant", "grid_variants", "parse_axis", "parse_grid", "run_name"),
    "seqlab.sweep.recipes": ("RECIPES", "recipe_variants"),
    "seqlab.sweep.divergence": ("DivergenceWatch", "first_rise"),
    "seqlab.sweep.records": ("RunRecord", "read_run"),
    "seqlab.sweep.runner": ("SweepOutcome", "SweepPlan", "plan_sweep", "run_sweep"),
    "seqlab.sweep.report": ("compare_runs",),
})
