"""The translate panel's cross-attention map can be read: horizontal column and row labels of at least
11 px on screen that never overlap, head thumbnails big enough to see, and no empty band between the
controls and the map. Measured in Chromium on what is drawn, in English and 中文, for characters and
for words."""

from __future__ import annotations

import pytest

from seqlab.explorer.runs import RunRegistry
from tests.explorer.browsing import CHROMIUM, browser, open_page, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import serving

pytestmark = pytest.mark.usefixtures("one_thread")

# every label's on-screen font size and box, the map's and the controls' edges, the thumbnails' sizes
MEASURE = """() => {
  const svg = document.querySelector('#tr-map svg.attn');
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const labels = (cls) => [...svg.querySelectorAll('text.attn-label.' + cls)].map((t) => ({
    text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale, box: box(t) }));
  const controls = [...document.querySelectorAll('#w-translate .controls')].pop();
  return { cols: labels('col'), rows: labels('row'), ncols: new Set([...svg.querySelectorAll('rect.attn-cell')].map((c) => c.dataset.k)).size,
    rotated: [...svg.querySelectorAll('text[transform]')].length,
    svgTop: svg.getBoundingClientRect().top, cellTop: Math.min(...[...svg.querySelectorAll('rect.attn-cell')].map((c) => c.getBoundingClientRect().top)),
    controlsBottom: controls.getBoundingClientRect().bottom,
    thumbs: [...document.querySelectorAll('#tr-grid canvas.thumb')].map((c) => [c.getBoundingClientRect().width, c.getBoundingClientRect().height]) };
}"""


@pytest.fixture(scope="module")
def fr_server(tiny_fr_en_run):
    with serving(RunRegistry([str(tiny_fr_en_run)])) as server:
        yield server


def _overlaps(labels, axis):
    """Pairs of neighbouring labels whose boxes overlap along axis 0 (x) or 1 (y)."""
    lo, hi = (0, 2) if axis == 0 else (1, 3)
    ordered = sorted(labels, key=lambda label: label["box"][lo])
    return [(a["text"], b["text"]) for a, b in zip(ordered, ordered[1:]) if a["box"][hi] > b["box"][lo] + 0.5]


def _check(m, every_column):
    assert m["rotated"] == 0, "column labels are rotated"
    assert m["cols"] and m["rows"]
    for label in m["cols"] + m["rows"]:
        assert label["px"] >= 11, f"label {label['text']!r} is drawn at {label['px']:.1f} px"
    assert _overlaps(m["cols"], 0) == [] and _overlaps(m["rows"], 1) == []
    if every_column:
        assert len(m["cols"]) == m["ncols"]
    # no empty band: the map starts right under the controls, its first row right under the labels
    assert 0 <= m["svgTop"] - m["controlsBottom"] <= 24, m
    assert m["cellTop"] - m["svgTop"] <= 24, m
    assert len(m["thumbs"]) == 2 * (2 + 1)
    for width, height in m["thumbs"]:
        assert width >= 120 and height >= 40, m["thumbs"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_the_cross_attention_map_and_thumbnails_are_readable(browser, fr_server, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    for page in open_page(browser, fr_server.url, tmp_path):
        page.set_viewport_size({"width": 1280, "height": 900})
        settled(page)
        chars = page.evaluate(MEASURE)
        _check(chars, every_column=False)
        assert chars["ncols"] > 20  # a character map: many columns, labels thinned only if they must be
        page.select_option("#tr-units", "words")
        settled(page)
        words = page.evaluate(MEASURE)
        _check(words, every_column=True)  # a few words: every one is labelled
        page.click("#lang-zh")
        settled(page)
        _check(page.evaluate(MEASURE), every_column=True)
        assert [p for p in page.problems if "Failed to load resource" not in p] == []
