"""The head scores of compared runs (those trained with ``--track-heads``): ``heads.png`` and the
report's table. Each run's line is its best head's score per role at each evaluation.

``heads.png``
    One panel per score (previous-token, duplicate-token, induction, first-token), the best head's
    score (0 to 1) against optimizer steps, one colour per run, in the same colours as curves.png.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.lm.telemetry import ROLES, head_series
from seqlab.runs.log import read_jsonl

HEADS_FIGURE = "heads.png"
ROLE_TITLES = {"previous_token": "previous-token score", "duplicate_token": "duplicate-token score",
               "induction": "induction score", "first_token": "first-token (sink) score"}


def run_head_series(run_dir: str | Path) -> dict[str, Any] | None:
    """:func:`seqlab.lm.telemetry.head_series` of a run's log.jsonl; None without scores."""
    log = Path(run_dir) / "log.jsonl"
    return head_series(read_jsonl(log, drop_torn_last_line=True)) if log.is_file() else None


def final_scores(series: dict[str, Any]) -> dict[str, float | None]:
    """The best head's score per role at the run's last evaluation."""
    return {role: values[-1] for role, values in series["best"].items()}


def heads_figure(named: list[tuple[str, dict[str, Any] | None]], *, title: str):
    """The figure of heads.png; ``named`` is (run label, series or None) in curves.png's order."""
    from seqlab.sweep.figures import _colors, _figure

    fig = _figure(13.0, 3.6)
    axes = fig.subplots(1, len(ROLES), sharey=True, squeeze=False)[0]
    for (name, series), color in zip(named, _colors(len(named))):
        if series is None:
            continue
        for axis, role in zip(axes, ROLES):
            values = series["best"].get(role)
            if values:
                axis.plot(series["steps"], values, "-o", color=color, markersize=3, linewidth=1.4,
                          label=name if role == ROLES[0] else None)
    for axis, role in zip(axes, ROLES):
        axis.set_title(ROLE_TITLES[role], fontsize=10)
        axis.set_xlabel("optimizer step")
        axis.set_ylim(0, 1.02)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("best head's score (mean attention)")
    fig.legend(loc="outside right upper", fontsize=8, title="run", title_fontsize=9)
    fig.suptitle(title)
    return fig


def heads_table(named: list[tuple[str, dict[str, Any] | None]]) -> list[str]:
    """Markdown lines: the best head's score per role at each tracked run's last evaluation."""
    lines = ["Best head's score per role at the last evaluation (runs trained with `--track-heads`; "
             "1 = the head attends only there):", "",
             "| run | step | " + " | ".join(ROLE_TITLES[r] for r in ROLES) + " |", "|" + " --- |" * (len(ROLES) + 2)]
    for name, series in named:
        if series is not None:
            scores = final_scores(series)
            cells = ["—" if scores.get(r) is None else f"{scores[r]:.3f}" for r in ROLES]
            lines.append(f"| `{name}` | {series['steps'][-1]} | " + " | ".join(cells) + " |")
    return lines
