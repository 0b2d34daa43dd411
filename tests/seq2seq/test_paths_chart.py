"""What the paths chart shows (issue 22 item 1), decided once for paths.png and the explorer: the
Wilson interval against a bisection oracle, the small-sample rule, coinciding lines, and paths.png
drawn with one style per architecture, read back from the saved Figure and its pixels."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from seqlab.seq2seq.paths.chart import (
    ARCH_STYLES,
    MIN_PAIRS,
    chart_data,
    coinciding,
    series,
    wilson_interval,
)

FIXTURE = Path(__file__).resolve().parents[1] / "explorer" / "fixtures" / "paths" / "results.json"


def _wilson_by_bisection(right: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The interval's definition, solved numerically: the p with |right/n - p| <= z * sqrt(p(1-p)/n)."""
    share = right / n

    def inside(p):
        return abs(share - p) <= z * math.sqrt(p * (1 - p) / n)

    def edge(lo, hi):  # inside(lo) != inside(hi)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if inside(mid) == inside(lo) else (lo, mid)
        return (lo + hi) / 2

    low = 0.0 if inside(0.0) else edge(0.0, share)
    high = 1.0 if inside(1.0) else edge(share, 1.0)
    return low, high


@pytest.mark.parametrize("right, n", [(0, 3), (1, 3), (2, 4), (0, 10), (7, 10), (10, 10), (37, 50), (499, 500)])
def test_wilson_interval_matches_its_definition(right, n):
    low, high = wilson_interval(right, n)
    expected = _wilson_by_bisection(right, n)
    assert low == pytest.approx(expected[0], abs=1e-9) and high == pytest.approx(expected[1], abs=1e-9)
    assert low <= right / n <= high


def test_wilson_interval_needs_pairs():
    with pytest.raises(ValueError, match="n >= 1"):
        wilson_interval(0, 0)


def test_small_samples_are_left_out_and_every_point_has_its_interval():
    by_length = {"3": {"exact_match": 1.0, "count": 10}, "1": {"exact_match": 0.5, "count": MIN_PAIRS},
                 "2": {"exact_match": 0.0, "count": MIN_PAIRS - 1}}
    points = series(by_length, offset=0.18)
    assert [p["length"] for p in points] == [1, 3]  # sorted by length; length 2 has too few pairs
    assert [p["x"] for p in points] == [1.18, 3.18]
    assert [(p["right"], p["count"]) for p in points] == [(round(0.5 * MIN_PAIRS), MIN_PAIRS), (10, 10)]
    assert (points[1]["low"], points[1]["high"]) == pytest.approx(_wilson_by_bisection(10, 10))


def test_coinciding_lines_are_found():
    line = [{"length": 1, "right": 0, "count": 5}, {"length": 2, "right": 3, "count": 5}]
    other = [{"length": 1, "right": 1, "count": 5}, {"length": 2, "right": 3, "count": 5}]
    assert coinciding({"rnn": other, "rnn-attention": line, "transformer": list(line)}) == [["rnn-attention", "transformer"]]
    assert coinciding({"rnn": other, "transformer": line}) == []


def test_chart_data_of_a_results_file():
    raw = json.loads(FIXTURE.read_text())
    data = chart_data(raw)
    assert data["min_pairs"] == MIN_PAIRS and data["fast"] and data["status"] == "completed"
    assert {arch: style["color"] for arch, style in data["styles"].items()} == \
        {arch: style.color for arch, style in ARCH_STYLES.items()}
    dates = next(t for t in data["tasks"] if t["task"] == "dates")
    counts = {int(n): v["count"] for n, v in raw["tasks"]["dates"]["archs"]["rnn"]["by_length"].items()}
    small = sorted(n for n, c in counts.items() if c < MIN_PAIRS)
    assert dates["left_out"] == {"lengths": small, "pairs": sum(counts[n] for n in small)}
    assert dates["pairs_per_length"] == [min(c for c in counts.values() if c >= MIN_PAIRS), max(counts.values())]
    assert dates["coincide"] == [["rnn", "rnn-attention", "transformer"]]  # every model at 0% on --fast dates
    assert all(len(a["shown"]) == len(counts) - len(small) for a in dates["archs"])
    assert dates["complete"] and dates["missing"] == []
    # an unfinished task says which architectures are missing
    raw["tasks"]["dates"]["archs"].pop("transformer")
    dates = next(t for t in chart_data(raw)["tasks"] if t["task"] == "dates")
    assert not dates["complete"] and dates["missing"] == ["transformer"]


def test_every_architecture_looks_different():
    styles = list(ARCH_STYLES.values())
    for attribute in ("color", "dash", "marker", "offset"):
        assert len({getattr(style, attribute) for style in styles}) == len(styles), attribute


def png_line_colours(fig) -> dict[str, str]:
    """{arch: "#rrggbb"} of each architecture's main line in the paths.png Figure."""
    from matplotlib.colors import to_hex

    colours: dict[str, set[str]] = {}
    for axis in fig.axes:
        for line in axis.get_lines():
            if line.get_gid():
                colours.setdefault(line.get_gid(), set()).add(to_hex(line.get_color()))
    assert all(len(found) == 1 for found in colours.values()), colours  # one colour per architecture
    return {arch: found.pop() for arch, found in colours.items()}


def test_paths_png_draws_the_chart_data(tmp_path):
    import numpy as np
    from matplotlib.colors import to_rgb
    from PIL import Image

    from seqlab.seq2seq.paths.figures import draw_paths, line_style

    raw = json.loads(FIXTURE.read_text())
    fig = draw_paths(tmp_path / "paths.png", raw)
    data = chart_data(raw)
    assert png_line_colours(fig) == {arch: ARCH_STYLES[arch].color for arch in ("rnn", "rnn-attention", "transformer")}
    panels = [axis for axis in fig.axes if axis.get_title()]
    assert [axis.get_title() for axis in panels] == [t["task"] for t in data["tasks"]]
    for axis, task in zip(panels, data["tasks"]):
        for arch in task["archs"]:
            (line,) = [line for line in axis.get_lines() if line.get_gid() == arch["arch"]]
            assert list(line.get_xdata()) == [p["x"] for p in arch["shown"]]
            assert list(line.get_ydata()) == [p["exact_match"] for p in arch["shown"]]
            style = ARCH_STYLES[arch["arch"]]
            assert line.get_marker() == {"circle": "o", "square": "s", "triangle": "^"}[style.marker]
            assert line.get_linestyle() == ("-" if not style.dash else "--")  # matplotlib reports custom dashes as "--"
            assert line_style(style.dash) == ("-" if not style.dash else (0, style.dash))
    legend = fig.legends[0]
    assert [text.get_text() for text in legend.get_texts()] == ["rnn", "rnn-attention", "transformer", "longer than training"]
    notes = " ".join(axis.get_xlabel() for axis in fig.axes)
    assert "rnn = rnn-attention = transformer at every length" in notes and f"< {MIN_PAIRS} pairs left out" in notes
    # the saved pixels hold each architecture's colour
    pixels = np.asarray(Image.open(tmp_path / "paths.png").convert("RGB")).reshape(-1, 3).astype(int)
    for arch in ("rnn", "rnn-attention", "transformer"):
        rgb = np.array([round(255 * c) for c in to_rgb(ARCH_STYLES[arch].color)])
        assert (np.abs(pixels - rgb).max(axis=1) <= 2).sum() > 20, arch
