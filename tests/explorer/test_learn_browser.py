"""`seqlab explore --workspace DIR` in headless Chromium: "yours" beside the reference on the
widget's own inputs, the differing elements outlined, in English and 中文."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")

from tests.explorer.browsing import browser, open_page, set_value, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import serving
from tests.explorer.test_learn_api import NO_SCALE, _reference_file, _write

PANEL = "#learn-w-attention-attention"


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("learn-browser") / "ws"
    path.mkdir()
    return path


@pytest.fixture(scope="module")
def server(ws):
    with serving() as server:
        server.workspace = str(ws)
        yield server


def _cells(page, side: int) -> list[str]:
    """The texts of the weights' cells in the reference (side 2) or yours (side 3) column."""
    row = page.locator(f"{PANEL} table.learn-side > tr").filter(has_text="weights")
    return row.locator(f"> td:nth-child({side}) td.learn-cell").all_inner_texts()


def test_yours_beside_the_reference_with_equal_numbers(browser, server, ws, tmp_path):
    from seqlab.learn.catalog import exercise
    from seqlab.learn.workspace import start

    _reference_file(ws, "attention")
    start(ws, exercise("scalar_recurrence"))
    for page in open_page(browser, server.url, tmp_path):
        settled(page)
        panel = page.locator(PANEL)
        assert panel.get_attribute("data-state") == "same"
        assert "Yours: attention() from" in panel.locator("h3").inner_text()
        assert _cells(page, 2) == _cells(page, 3) == ["0.669762", "0.330238"]   # the worked example
        assert page.locator(f"{PANEL} .learn-diff").count() == 0
        stub = page.locator("#learn-w-recurrence-scalar_recurrence .learn-status").inner_text()
        assert stub == f"not implemented yet — seqlab learn start scalar_recurrence / edit {ws / 'scalar_recurrence.py'}"
        assert page.locator(".learn-yours").count() == 2     # only the exercises the workspace holds
        assert not page.problems, page.problems


def test_a_mutant_is_highlighted_and_follows_the_inputs(browser, server, ws, tmp_path):
    _write(ws, "attention", NO_SCALE)
    for page in open_page(browser, server.url, tmp_path):
        settled(page)
        panel = page.locator(PANEL)
        assert panel.get_attribute("data-state") == "differs"
        status = panel.locator(".learn-status").inner_text()
        assert status == "✗ output['scores'][0, 0]: expected 0.707107, got 1"
        first = page.locator(f"{PANEL} td.learn-diff").first
        assert first.get_attribute("data-path") == "scores/0/0" and first.get_attribute("title") == "expected 0.707107"
        yours = [float(x) for x in _cells(page, 3)]
        assert np.allclose(yours, np.exp([1, 0]) / np.exp([1, 0]).sum(), atol=1e-6)   # softmax without 1/sqrt(2)
        # q=[1, 0], keys I: score 1 (not 0.707), both weights and the one output differ; score 0 stays 0
        assert page.locator(f"{PANEL} td.learn-diff").count() == 4
        assert page.locator(f"{PANEL} td.learn-diff-ref").count() == 4
        # a zero query scores every key 0, scaled or not: yours agrees again, recomputed on the edit
        set_value(page, "#att-queries", "0, 0")
        settled(page)
        assert panel.get_attribute("data-state") == "same"
        assert page.locator(f"{PANEL} .learn-diff").count() == 0
        assert not page.problems, page.problems


def test_the_panel_in_chinese(browser, server, ws, tmp_path):
    _write(ws, "attention", NO_SCALE)
    for page in open_page(browser, server.url + "?lang=zh", tmp_path):
        settled(page)
        panel = page.locator(PANEL)
        assert panel.locator("h3").inner_text().startswith("你的实现：")
        assert panel.locator(".learn-status").inner_text() == "✗ 与参考实现不同：output['scores'][0, 0]: expected 0.707107, got 1"
        assert page.locator(f"{PANEL} td.learn-diff").first.get_attribute("title") == "期望值 0.707107"
        page.click("#lang-en")
        assert panel.locator(".learn-status").inner_text().startswith("✗ output")


HIDDEN_CELLS = """(selector) => {
  // every value cell of the panel, and whether an ancestor that clips its overflow hides part of it
  const out = [];
  for (const td of document.querySelectorAll(selector + ' td.learn-cell')) {
    const r = td.getBoundingClientRect();
    let hidden = false;
    for (let e = td.parentElement; e && !hidden; e = e.parentElement) {
      const style = getComputedStyle(e);
      if (style.overflowX !== 'visible' || style.overflowY !== 'visible') {
        const box = e.getBoundingClientRect();
        hidden = r.right > box.right + 0.5 || r.left < box.left - 0.5 || r.bottom > box.bottom + 0.5;
      }
    }
    out.push([td.textContent, hidden]);
  }
  return out;
}"""


@pytest.mark.parametrize("width", [1280, 700])
def test_the_clipping_panels_yours_column_shows_every_value(browser, server, ws, tmp_path, width):
    """The gradient section's clipping widget is narrow: the "yours" column ran past the panel's
    edge and its last value (1.600000) was hidden. Every value of both columns shows."""
    _reference_file(ws, "clip_global_norm")
    for page in open_page(browser, server.url, tmp_path):
        page.set_viewport_size({"width": width, "height": 900})
        settled(page)
        cells = page.evaluate(HIDDEN_CELLS, "#learn-clip-panel-clip_global_norm")
        assert [text for text, _ in cells] == ["1.200000", "1.600000", "1.200000", "1.600000", "5.000000",
                                               "5.000000"]   # reference, yours: [3, 4] clipped to norm 2, norm 5
        assert [text for text, hidden in cells if hidden] == []
