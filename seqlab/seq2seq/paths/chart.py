"""What the accuracy-vs-length chart of ``seqlab paths`` shows, decided once for ``paths.png``
(:mod:`seqlab.seq2seq.paths.figures`) and the explorer's section 14 (``POST /api/paths``), which
only draw it. Standard library only.

- **One style per architecture** (:data:`ARCH_STYLES`): an Okabe-Ito colour (readable with
  colour-blind eyes), a dash pattern, a marker and a small sideways offset of its points, so lines
  and points that coincide stay apart.
- **One rule for small samples**: a length with fewer than :data:`MIN_PAIRS` test pairs is left
  out (a 0 of 3 says little), and every point shown carries its 95% Wilson interval and its
  number of pairs.
- **Coinciding lines are named** (:func:`coinciding`), so a reader knows why a line seems missing.

Worked example (2 of 4 right, 0 of 2 right, 10 of 10 right)::

    wilson_interval(2, 4)        # (0.150, 0.850): half right on 4 pairs is anything from 15% to 85%
    series({"1": {"exact_match": 0.5, "count": 4}, "2": {"exact_match": 0.0, "count": 2},
            "3": {"exact_match": 1.0, "count": 10}}, offset=0.0)
    # [{"length": 1, "x": 1.0, "exact_match": 0.5, "count": 4, "right": 2, "low": 0.150, "high": 0.850},
    #  {"length": 3, ...}]     length 2 is left out: 2 pairs < MIN_PAIRS
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

MIN_PAIRS = 5   # lengths with fewer test pairs are left out of the chart (PNG and page)
Z_95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


@dataclass(frozen=True)
class ArchStyle:
    color: str                  # "#rrggbb"
    dash: tuple[float, ...]     # on/off lengths in line widths; () is a solid line
    marker: str                 # "circle" | "square" | "triangle"
    offset: float               # sideways shift of the points, in source-length units


ARCH_STYLES: dict[str, ArchStyle] = {
    "rnn": ArchStyle("#d55e00", (), "circle", -0.18),                    # vermilion, solid
    "rnn-attention": ArchStyle("#0072b2", (4.0, 2.0), "square", 0.0),     # blue, dashed
    "transformer": ArchStyle("#009e73", (1.2, 1.6), "triangle", 0.18),    # bluish green, dotted
}
OTHER_STYLE = ArchStyle("#666666", (6.0, 2.0, 1.0, 2.0), "circle", 0.0)  # an architecture not listed above


def arch_style(arch: str) -> ArchStyle:
    return ARCH_STYLES.get(arch, OTHER_STYLE)


def wilson_interval(right: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a share ``right / n`` (95% by default): unlike p ± z·se it stays
    inside [0, 1] and is not empty at 0 or n right.

    >>> [round(v, 3) for v in wilson_interval(0, 10)]
    [0.0, 0.278]
    """
    if n <= 0:
        raise ValueError(f"wilson_interval needs n >= 1 pairs, got {n}")
    p = right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # the interval holds p; min/max keep it so where rounding would not (0 or n right)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def series(by_length: dict[str, dict[str, float]], offset: float) -> list[dict[str, Any]]:
    """The points one architecture shows: lengths with at least MIN_PAIRS pairs, in order of length,
    each with its share right, its pair count and its Wilson interval (x = length + offset)."""
    points = []
    for length, value in sorted(by_length.items(), key=lambda item: int(item[0])):
        count = int(value["count"])
        if count < MIN_PAIRS:
            continue
        right = round(value["exact_match"] * count)
        low, high = wilson_interval(right, count)
        points.append({"length": int(length), "x": int(length) + offset, "exact_match": value["exact_match"],
                       "count": count, "right": right, "low": low, "high": high})
    return points


def coinciding(shown: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    """Groups of (two or more) architectures whose shown points are the same at every length: their
    lines lie on top of each other."""
    groups: dict[tuple, list[str]] = {}
    for arch, points in shown.items():
        if points:
            groups.setdefault(tuple((p["length"], p["right"], p["count"]) for p in points), []).append(arch)
    return [archs for archs in groups.values() if len(archs) > 1]


def chart_data(results: dict[str, Any]) -> dict[str, Any]:
    """Everything either chart draws, from a results.json document::

        {"styles": {arch: {"color", "dash", "marker", "offset"}}, "min_pairs": 5, "fast": bool,
         "status": "completed" | "running" | "interrupted",   (older words read as these)
         "tasks": [{"task", "train_lengths", "test_max_len", "complete", "missing": [arch, ...],
                    "archs": [{"arch", "parameters", "exact_match", "pairs",
                               "points": [[length, exact_match, count], ...],   # every length measured
                               "shown": [series point, ...]}],                  # after the MIN_PAIRS rule
                    "coincide": [[arch, ...], ...],
                    "left_out": {"lengths": [...], "pairs": int},               # under MIN_PAIRS
                    "pairs_per_length": [min, max]}]}

    Bad shapes raise KeyError, TypeError or ValueError (the explorer turns them into a message).
    """
    from seqlab.seq2seq.paths.settings import ARCHS_COMPARED

    tasks = []
    used: list[str] = []
    for task, info in results["tasks"].items():
        archs, shown = [], {}
        counts: dict[int, int] = {}
        for arch, run in info["archs"].items():
            style = arch_style(arch)
            shown[arch] = series(run["by_length"], style.offset)
            for length, value in run["by_length"].items():
                counts[int(length)] = int(value["count"])
            archs.append({"arch": arch, "parameters": run["parameters"], "exact_match": run["exact_match"],
                          "pairs": sum(int(v["count"]) for v in run["by_length"].values()),
                          "points": sorted([int(n), v["exact_match"], v["count"]] for n, v in run["by_length"].items()),
                          "shown": shown[arch]})
            used += [arch] if arch not in used else []
        small = sorted(n for n, c in counts.items() if c < MIN_PAIRS)
        kept = [c for c in counts.values() if c >= MIN_PAIRS]
        tasks.append({"task": task, "train_lengths": info.get("train_lengths"), "test_max_len": info.get("test_max_len"),
                      "complete": all(a in info["archs"] for a in ARCHS_COMPARED),
                      "missing": [a for a in ARCHS_COMPARED if a not in info["archs"]],
                      "archs": archs, "coincide": coinciding(shown),
                      "left_out": {"lengths": small, "pairs": sum(counts[n] for n in small)},
                      "pairs_per_length": [min(kept), max(kept)] if kept else None})
    styles = {arch: {**asdict(arch_style(arch)), "dash": list(arch_style(arch).dash)}
              for arch in [*ARCHS_COMPARED, *(a for a in used if a not in ARCHS_COMPARED)]}
    return {"styles": styles, "min_pairs": MIN_PAIRS, "fast": bool(results.get("fast")),
            "status": _status_word(results.get("status")), "tasks": tasks}


def _status_word(word: object) -> str:
    """The experiment's status in today's words ("complete" of older results reads "completed")."""
    from seqlab.runs.status import Status, read_status

    return read_status(word, Status.COMPLETED).value
