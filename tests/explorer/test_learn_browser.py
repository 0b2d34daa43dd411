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
    for page in open_page(browser, server.url + "?view=widgets", tmp_path):
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
    for page in open_page(browser, server.url + "?view=widgets", tmp_path):
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
    for page in open_page(browser, server.url + "?view=widgets&lang=zh", tmp_path):
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
    for page in open_page(browser, server.url + "?view=widgets", tmp_path):
        page.set_viewport_size({"width": width, "height": 900})
        settled(page)
        cells = page.evaluate(HIDDEN_CELLS, "#learn-clip-panel-clip_global_norm")
        assert [text for text, _ in cells] == ["1.200000", "1.600000", "1.200000", "1.600000", "5.000000",
                                               "5.000000"]   # reference, yours: [3, 4] clipped to norm 2, norm 5
        assert [text for text, hidden in cells if hidden] == []


TRANSPOSED_MASK = "import numpy as np\n\ndef causal_mask(n):\n    return np.triu(np.ones((n, n), dtype=bool))\n"
MASK_PANEL = "#learn-w-mask-causal_mask"


def _disjoint(page, selectors: list[str]) -> None:
    """Each selector's element is shown, inside its panel, and no two of them overlap."""
    boxes = []
    for selector in selectors:
        box = page.locator(selector).bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0, selector
        boxes.append((selector, box))
    for k, (a, p) in enumerate(boxes):
        for b, q in boxes[k + 1:]:
            apart = (p["y"] + p["height"] <= q["y"] + 0.5 or q["y"] + q["height"] <= p["y"] + 0.5 or
                     p["x"] + p["width"] <= q["x"] + 0.5 or q["x"] + q["width"] <= p["x"] + 0.5)
            assert apart, (a, p, b, q)


def _within(page, inner: str, outer: str) -> None:
    p, q = page.locator(inner).bounding_box(), page.locator(outer).bounding_box()
    assert q["x"] - 0.5 <= p["x"] and p["x"] + p["width"] <= q["x"] + q["width"] + 0.5, (inner, p, outer, q)
    assert q["y"] - 0.5 <= p["y"] and p["y"] + p["height"] <= q["y"] + q["height"] + 0.5, (inner, p, outer, q)


def test_a_mutant_s_panel_shows_the_full_check_s_diagnosis_and_its_link_opens_the_lesson_there(
        browser, server, ws, tmp_path):
    """On the widget page, in English then 中文: the attention without its scale and the transposed causal
    mask each show the diagnosis of their full check, where, and the link to the lesson's mistake, the
    panel's parts apart; the link opens the course there, and in the lesson the panel links to the same place."""
    from seqlab.learn.catalog import exercise

    _write(ws, "attention", NO_SCALE)
    _write(ws, "causal_mask", TRANSPOSED_MASK)
    scale = next(m for m in exercise("attention").mistakes if m.id == "missing_scale")
    transposed = next(m for m in exercise("causal_mask").mistakes if m.id == "transposed")
    for page in open_page(browser, server.url + "?view=widgets&lang=en", tmp_path):
        settled(page)
        for lang in ("en", "zh"):
            zh = lang == "zh"
            if zh:
                page.click("#lang-zh")              # the panels are drawn again in 中文
            for panel, name, m in ((PANEL, "attention", scale), (MASK_PANEL, "causal_mask", transposed)):
                box = page.locator(f"{panel} .learn-diagnosis")
                assert box.get_attribute("data-mistake") == m.id
                title = box.locator(".learn-diagnosis-title").inner_text()
                assert title == (f"完整检查的诊断：{m.title_zh}" if zh else f"Diagnosis of the full check: {m.title}")
                assert box.locator(".learn-where").inner_text().startswith("位置：" if zh else "Where: ")
                link = box.locator("a.learn-read-link")
                assert link.inner_text() == ("阅读：为什么这是错的" if zh else "read why this is wrong")
                assert link.get_attribute("href") == f"/?lang=en#step/{name}/mistake-{m.id}"
                # the panel's parts, one below the other, inside the panel
                _disjoint(page, [f"{panel} > h3", f"{panel} > .learn-status", f"{panel} .learn-diagnosis",
                                 f"{panel} > .table-wrap"])
                _within(page, f"{panel} .learn-diagnosis", panel)
                page.locator(panel).screenshot(path=str(tmp_path / f"{name}-{lang}.png"))
        assert "sqrt(d_k)" in page.locator(f"{PANEL} .learn-where").inner_text()
        assert not page.problems, page.problems
        # the link opens the course at that mistake of the lesson (in the language chosen on the page)
        page.locator(f"{PANEL} a.learn-read-link").click()
        page.wait_for_selector("body[data-ready='1']")
        page.wait_for_selector("#mistake-missing_scale")
        settled(page)
        assert page.evaluate("location.pathname + location.search + location.hash") == \
            "/?lang=en#step/attention/mistake-missing_scale"
        assert scale.title in page.locator("#mistake-missing_scale h4").inner_text()
        top = page.locator("#mistake-missing_scale").bounding_box()["y"]
        assert 0 <= top < page.viewport_size["height"] / 2          # scrolled to it
        page.screenshot(path=str(tmp_path / "lesson-at-the-mistake.png"))
        # in the lesson, the step's widget carries the panel, its diagnosis and a link into the same lesson
        page.locator(f"#course-lesson {PANEL} .learn-diagnosis").wait_for()
        _disjoint(page, [f"{PANEL} > h3", f"{PANEL} > .learn-status", f"{PANEL} .learn-diagnosis", f"{PANEL} > .table-wrap"])
        _within(page, f"{PANEL} .learn-diagnosis", "#course-lesson")
        page.locator(PANEL).screenshot(path=str(tmp_path / "attention-in-the-lesson.png"))
        page.locator(f"#course-lesson {PANEL} a.learn-read-link").click()
        page.wait_for_timeout(200)
        top = page.locator("#mistake-missing_scale").bounding_box()["y"]
        assert 0 <= top < page.viewport_size["height"] / 2
        assert not page.problems, page.problems
