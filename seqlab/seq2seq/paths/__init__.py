"""The information-paths experiment (``seqlab paths``): RNN vs RNN + attention vs Transformer at
equal parameter counts, exact match against source length.

    from seqlab.seq2seq.paths import FAST, run_paths

    results = run_paths("paths_out", settings=FAST, tasks=("reverse",))   # about 10 s on a CPU
    results["tasks"]["reverse"]["archs"]["transformer"]["in_range_exact_match"]

Modules, one concept each: ``settings`` (what is trained and tested: ``PathsSettings``, ``FULL``,
``FAST``, the tasks and architectures), ``experiment`` (training through the engine, evaluation,
resuming, signals: ``run_paths``), ``results`` (results.json, the folder's ownership, merging
tasks), ``chart`` (what the accuracy chart shows, for the PNG and the explorer: one style per
architecture, the small-sample rule), ``figures`` (the PNGs), ``report`` (report.md).
Names load on first use (seqlab/lazy.py): ``chart``, ``results`` and ``settings`` import neither
torch nor the training engine, so the explorer can read results through them.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.seq2seq.paths.settings": ("ARCHS_COMPARED", "FAST", "FULL", "PATHS_TASKS", "PathsSettings"),
    "seqlab.seq2seq.paths.experiment": ("alignment_share", "evaluation_pairs", "run_paths", "sized_configs"),
    "seqlab.seq2seq.paths.results": ("read_results",),
    "seqlab.seq2seq.paths.chart": ("ARCH_STYLES", "MIN_PAIRS", "chart_data", "wilson_interval"),
    "seqlab.seq2seq.paths.figures": ("draw_attention", "draw_dependency", "draw_paths", "paths_figure"),
    "seqlab.seq2seq.paths.report": ("findings", "write_report"),
})
