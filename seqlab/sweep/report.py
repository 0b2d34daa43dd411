"""What a sweep or a comparison writes, every file atomically: ``sweep.json`` (or ``compare.json``),
``report.md`` (a table sorted by validation loss, the best setting, the diverged runs), and the
figures of :mod:`seqlab.sweep.figures`.

The table of report.md, for a learning-rate sweep::

    | run | lr | status | final val loss | best val loss (step) | train loss | steps | tokens | ...
    | lr=3e-3 | 3e-3 | finished | 2.1043 | 2.1043 (300) | 2.0871 | 300 | 307,200 | ...
    | lr=0.3 | 0.3 | diverged | 5.9012 | 5.7420 (50) | 7.0310 | 60 | 61,440 | ...

Runs are ranked within groups of comparable runs (one kind of model, one vocabulary, one validation
set: :func:`seqlab.sweep.records.comparison_group`); in each, finished runs come first by final
validation loss, then unfinished ones, diverged and failed runs last. The best run of a group is the
first row of its table, so the two always agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.jsonfile import dumps
from seqlab.sweep.grid import format_value
from seqlab.sweep.records import RunRecord, read_run, sweep_runs

COMPARE_FILE = "compare.json"


def groups(records: list[RunRecord]) -> dict[str, list[RunRecord]]:
    """The records by comparison group, in the order the groups first appear."""
    found: dict[str, list[RunRecord]] = {}
    for r in records:
        found.setdefault(r.group, []).append(r)
    return found


def ranked(records: list[RunRecord]) -> list[RunRecord]:
    """Finished runs by final validation loss, then unfinished ones (by loss), then runs without a
    loss; diverged and failed runs last. Records of several groups stay grouped."""
    def key(r: RunRecord) -> tuple:
        ended = 2 if r.status in ("diverged", "failed") else 0 if r.status == "finished" else 1
        return (ended, r.final_val_loss is None, r.final_val_loss or 0.0)

    return [r for group in groups(records).values() for r in sorted(group, key=key)]


def best_by_group(records: list[RunRecord]) -> dict[str, RunRecord]:
    """Each group's best run: the first of its :func:`ranked` rows, where it finished with a loss."""
    best = {}
    for name, group in groups(records).items():
        first = ranked(group)[0]
        if first.status == "finished" and first.final_val_loss is not None:
            best[name] = first
    return best


def best_run(records: list[RunRecord]) -> RunRecord | None:
    """The best run (None when no run finished with a validation loss, or when the runs fall into
    several groups whose losses cannot be compared: see :func:`best_by_group`)."""
    if len(groups(records)) > 1:
        return None
    return next(iter(best_by_group(records).values()), None)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"


def _cell(value: Any, kind: str = "") -> str:
    if value is None:
        return "—"
    if kind == "loss":
        return f"{value:.4f}"
    if kind == "count":
        return f"{value:,}"
    if kind == "rate":
        return f"{value:,.0f}"
    if kind == "share":
        return f"{value:.1%}"
    return format_value(value).replace("|", "\\|")


def results_table(records: list[RunRecord], axes: list[str]) -> list[str]:
    """The Markdown table of report.md, one row per run (:func:`ranked` order)."""
    head = ["run", *axes, "status", "final val loss", "best val loss (step)", "train loss", "steps", "tokens",
            "wall time", "tokens/s", "MFU", "parameters"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in ranked(records):
        steps = _cell(r.steps, "count") + (f"/{r.total_steps:,}" if r.total_steps and r.steps != r.total_steps else "")
        best = "—" if r.best_val_loss is None else f"{r.best_val_loss:.4f} ({r.best_val_step})"
        row = [f"`{r.name}`", *(_cell(r.point.get(k)) for k in axes), r.status, _cell(r.final_val_loss, "loss"),
               best, _cell(r.final_train_loss, "loss"), steps, _cell(r.tokens, "count"), _duration(r.wall_time_s),
               _cell(r.tokens_per_second, "rate"), _cell(r.mfu, "share"), _cell(r.parameters, "count")]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def report_markdown(title: str, intro: list[str], records: list[RunRecord], axes: list[str],
                    figures: list[tuple[str, str]]) -> str:
    """report.md: the title, ``intro`` lines, the best setting, the table, the diverged and failed runs
    with the reason of each, the figures."""
    lines = [f"# {title}", "", *intro, ""]
    grouped = groups(records)
    best = best_by_group(records)
    if len(grouped) > 1:
        lines += [f"These runs fall into {len(grouped)} groups whose losses cannot be compared with each other "
                  "(a loss is per token of one vocabulary, on one validation set, for one kind of model); each "
                  "group is ranked on its own.", ""]
    for name, group in grouped.items():
        if len(grouped) > 1:
            lines += [f"## {name}", ""]
        if name in best:
            winner = best[name]
            setting = ", ".join(f"{k}={format_value(v)}" for k, v in winner.point.items()) or winner.name
            lines += [f"**Best: `{setting}`**: final validation loss {winner.final_val_loss:.4f} "
                      f"(best {winner.best_val_loss:.4f} at step {winner.best_val_step}).", ""]
        else:
            lines += ["No run has finished with a validation loss yet.", ""]
        lines += results_table(group, axes) + [""]
    for status, heading in (("diverged", "Diverged"), ("failed", "Failed")):
        ended = [r for r in records if r.status == status]
        if ended:
            lines += [f"## {heading}", ""] + [f"- `{r.name}`: {r.reason or status}" for r in ended] + [""]
    waiting = [r.name for r in records if r.status in ("unfinished", "pending")]
    if waiting:
        lines += [f"Not finished yet: {', '.join(f'`{n}`' for n in waiting)}.", ""]
    for alt, name in figures:
        lines += [f"![{alt}]({name})", ""]
    lines += ["MFU is shown where the peak FLOP/s of the device a run trained on is known (GPUs in "
              "`seqlab.runtime`'s table); tokens/s is the median over the log intervals.", ""]
    return "\n".join(lines)


def write_json(path: Path, document: dict[str, Any]) -> None:
    atomic_write_text(path, dumps(document, indent=2) + "\n")


def write_figures(out: Path, records: list[RunRecord], axes: list[str] | None, *, title: str) -> list[tuple[str, str]]:
    """curves.png, and with swept ``axes`` final.png; returns (alt text, file name) of each."""
    from seqlab.sweep.figures import plot_curves, plot_final

    plot_curves(records, out / "curves.png", title=title)
    written = [("training and validation loss against steps and wall-clock time", "curves.png")]
    if axes is not None:
        plot_final(records, axes, out / "final.png", title=title)
        written.append(("final validation loss against each swept value", "final.png"))
    return written


# -- seqlab compare ------------------------------------------------------------------------------


def compare_run_dirs(paths: list[str | Path]) -> list[tuple[str, Path]]:
    """(name, run directory) of each RUN given to ``seqlab compare``: a run directory (it has a
    log.jsonl or a config.json), or a sweep directory, which stands for all its runs. Names are the
    directory names, or the paths as given where two directory names are the same."""
    found: list[tuple[str, Path]] = []
    for given in paths:
        path = Path(given)
        if (path / "log.jsonl").is_file() or (path / "config.json").is_file():
            found.append((str(given), path))
            continue
        runs = sweep_runs(path)
        if runs is None:
            what = "does not exist" if not path.exists() else "holds no log.jsonl, config.json or sweep.json"
            raise FileNotFoundError(f"{given} {what}; give the directory of a run (from `seqlab train` or "
                                    "`seqlab sweep`) or of a sweep")
        found += [(str(Path(given) / name), run) for name, run in runs]
    names = [p.name for _, p in found]
    return [(p.name if names.count(p.name) == 1 else given, p) for given, p in found]


COMPARE_FILES = (COMPARE_FILE, "report.md", "curves.png", "heads.png")


def compare_runs(paths: list[str | Path], out: str | Path, *, overwrite: bool = False) -> list[RunRecord]:
    """``seqlab compare``: read every run, write OUT/compare.json, OUT/report.md and OUT/curves.png.

    OUT follows :mod:`seqlab.outdir`'s rule (new, empty, an earlier comparison, or ``overwrite``), so
    a sweep's own report.md or a user's file is never written over."""
    from seqlab.outdir import check_out_folder, holds_only, output_folder

    out = Path(out)
    rule = dict(overwrite=overwrite, recognise=holds_only(COMPARE_FILES, [COMPARE_FILE]), flag="--out")
    check_out_folder(out, "seqlab compare", **rule)
    records = [read_run(path, name=name) for name, path in compare_run_dirs(paths)]
    if not records:
        raise ValueError("no runs to compare")
    title = f"Comparison of {len(records)} runs"
    from seqlab.sweep.heads import HEADS_FIGURE, final_scores, heads_figure, heads_table, run_head_series

    heads = [(r.name, run_head_series(r.run_dir)) for r in records]  # runs trained with --track-heads
    tracked = any(series is not None for _, series in heads)
    with output_folder(out, "seqlab compare", **rule) as building:
        write_json(building / COMPARE_FILE, {
            "runs": [r.summary() for r in records], "best": getattr(best_run(records), "name", None),
            "best_by_group": {group: r.name for group, r in best_by_group(records).items()},
            **({"head_scores": {name: final_scores(s) for name, s in heads if s is not None}} if tracked else {})})
        figures = write_figures(building, records, None, title=title)
        intro = [f"Runs: {', '.join(f'`{r.run_dir}`' for r in records)}."]
        if tracked:
            from seqlab.sweep.figures import _save

            _save(heads_figure(heads, title=f"{title}: the best attention head's score per role"),
                  building / HEADS_FIGURE)
            figures.append(("the best head's score per role against steps", HEADS_FIGURE))
            intro += ["", *heads_table(heads)]
        atomic_write_text(building / "report.md", report_markdown(title, intro, records, [], figures))
    return records
