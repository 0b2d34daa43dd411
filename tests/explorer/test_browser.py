"""The explorer page in headless Chromium: loads cleanly, shows the worked values, reacts to edits.

Uses Debian's chromium through Python playwright (see DEVELOPERS.md). Skipped, with the reason,
only where /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
expect = playwright_api.expect

from tests.explorer.browsing import browser, open_page, set_value, settled  # noqa: E402,F401 (fixture)


@pytest.fixture
def page(browser, explorer_server, tmp_path):
    """A fresh page on the worked examples (the widget page: on the home page the first step's widget
    waits, closed, below its Trace question); console errors are collected in page.problems."""
    yield from open_page(browser, explorer_server.url + "?view=widgets", tmp_path)


def test_page_loads_cleanly_with_every_worked_value(page, tmp_path):
    text = lambda sel: page.inner_text(sel)
    # 1 recurrence
    assert re.findall(r"-?\d\.\d{6}", text("#rec-table"))[-6:] == [
        "0.761594", "0.363399", "-0.674144", "-0.761594", "-0.363399", "0.674144"]
    assert "-0.674144" in text("#rec-compare") and "0.674144" in text("#rec-compare")
    # 2 char LM
    assert text("#lm-greedy") == "hell → ello" and text("#lm-params") == "56"
    assert float(text("#lm-final-loss")) < 0.01
    assert page.locator("#lm-dists .dist").count() == 4
    # 3 gradient flow
    assert text("#gf-product-a") == "0.000977" and text("#gf-product-b") == "1024.000000"
    assert text("#clip-norm") == "5.000000"
    assert text("#clip-global") == "[1.200000, 1.600000]" and text("#clip-coord") == "[2.000000, 2.000000]"
    assert "6, 7" in text("#tb-reach")
    # 4/5 gates
    assert text("#lstm-c") == "0.900000" and text("#lstm-h") == "0.358149"
    assert text("#lstm-retained") == "0.800000" and text("#lstm-written") == "0.100000"
    assert text("#gru-h") == "0.400000"
    # 6 attention
    assert page.locator("#att-scores td").all_inner_texts() == ["0.707107", "0.000000"]
    assert page.locator("#att-weights td").all_inner_texts() == ["0.669762", "0.330238"]
    assert text("#att-output") == "query 1: 4.641908"
    # 7/8 mask and shapes
    assert text("#mask-visible").startswith("6 visible entries")
    assert page.locator("#mask-grid td").all_inner_texts().count("✓") == 6
    assert text("#mh-q .dims") == "3 × 2" and text("#mh-scores .dims") == "3 × 3"
    assert text("#mh-head_output .dims") == "3 × 2" and text("#mh-concat .dims") == "3 × 4"
    # 9 BPE
    assert text("#bpe-chosen").startswith("Merge 1: “s” + “t”")
    assert "“s t”, “e s”" in text("#bpe-tie")
    # 10 self-check: 10 cards, answers hidden until asked
    assert page.locator("#sc-cards .card").count() == 10
    assert not page.is_visible("#sc-answer-recurrence")
    # 11 dependency map (RNN): lower triangle
    assert page.locator("#dep-grid tr").count() == 5
    cells = page.locator("#dep-grid td").all_inner_texts()
    assert [bool(c) for c in cells] == [j <= i for i in range(4) for j in range(4)]
    # no error boxes, no console errors or warnings (the model panels say there is no run: see
    # test_model_browser.py)
    assert page.locator("section:not(#w-model) .error:visible").count() == 0  # section 13: a hint, not an error
    assert page.problems == []


def test_attention_edits(page):
    set_value(page, "#att-queries", "0, 1")
    expect(page.locator("#att-weights td").first).to_have_text("0.330238")
    assert page.locator("#att-weights td").all_inner_texts() == ["0.330238", "0.669762"]
    page.click("#att-default")
    page.check("#att-causal")
    expect(page.locator("#att-output")).to_have_text("query 1: 2.000000")
    assert page.locator("#att-weights td").all_inner_texts() == ["1.000000", "masked"]
    assert "Leak check passed" in page.inner_text("#att-leak")
    page.check("#att-reverse")
    expect(page.locator("#att-leak")).to_contain_text("Leak detected")
    page.uncheck("#att-causal")
    page.click("#att-equal")
    expect(page.locator("#att-output")).to_have_text("query 1: 6.000000")
    page.click("#att-mode-cross")
    expect(page.locator("#att-weights tr")).to_have_count(3)  # header + 2 target rows
    assert page.locator("#att-weights tr").first.locator("th").count() == 4  # corner + 3 source columns
    assert page.problems == []


def test_gate_sliders(page):
    set_value(page, "#lstm-f", 1)
    set_value(page, "#lstm-i", 0)
    expect(page.locator("#lstm-written")).to_have_text("0.000000")
    assert page.inner_text("#lstm-c") == "1.000000"  # c_prev is kept
    set_value(page, "#lstm-c_prev", -0.5)
    expect(page.locator("#lstm-c")).to_have_text("-0.500000")
    # GRU: switching the convention converts z and keeps h
    page.check("#gru-conv-new")
    expect(page.locator("#gru-z-out")).to_have_text("0.250000")
    settled(page)
    assert page.inner_text("#gru-h") == "0.400000"
    assert "(1 − z)·h_prev + z·h̃" in page.inner_text("#gru-formula")
    assert page.problems == []


def test_steppers_training_and_self_check(page):
    page.click("#rec-back")
    page.click("#rec-back")
    assert "h₁ = tanh(a·h₀ + x₁)" in page.inner_text("#rec-update")
    assert page.inner_text("#rec-update").endswith("= 0.761594")
    page.check("#rec-reverse")
    page.click("#rec-fwd")
    page.click("#rec-fwd")
    assert page.inner_text("#rec-update").endswith("= 0.674144")
    set_value(page, "#rec-xs", "1, 0, x")
    expect(page.locator("#w-recurrence > .error")).to_contain_text('"x" is not a number')
    page.click("#bpe-fwd")
    assert page.inner_text("#bpe-chosen").startswith("Merge 2: “e” + “st”")
    # char LM: resetting the state makes the two "l" positions identical
    page.check("#lm-reset")
    expect(page.locator("#lm-reset-note")).to_contain_text("same distribution")
    dists = page.locator("#lm-dists .dist")
    assert dists.nth(2).locator(".bar-value").all_inner_texts() == dists.nth(3).locator(".bar-value").all_inner_texts()
    set_value(page, "#lm-steps", 0)
    expect(page.locator("#lm-steps-out")).to_have_text("0")
    settled(page)
    assert float(page.inner_text("#lm-final-loss")) > 1.0
    page.click("#sc-reveal-attention")
    assert page.is_visible("#sc-answer-attention")
    assert "4.641908" in page.inner_text("#sc-answer-attention")
    page.select_option("#dep-kind", "birnn")
    settled(page)
    assert all(page.locator("#dep-grid td").all_inner_texts())
    assert page.problems == []


def test_bad_api_input_shows_the_servers_message(page):
    set_value(page, "#mh-h", 3)
    expect(page.locator("#w-multihead > .error")).to_contain_text("must split evenly into num_heads 3")
    set_value(page, "#mh-h", 4)
    expect(page.locator("#mh-q .dims")).to_have_text("3 × 1")
    assert not page.is_visible("#w-multihead > .error")
    set_value(page, "#bpe-words", "low five")
    expect(page.locator("#w-bpe > .error")).to_contain_text('"word count, word count"')
    set_value(page, "#bpe-words", "a 5, b 2")
    expect(page.locator("#bpe-step-label")).to_have_text("no adjacent pair left to merge")
    assert not page.is_visible("#w-bpe > .error")


def test_language_switch(page):
    page.click("#lang-zh")
    assert page.inner_text("#w-recurrence h2 [data-i18n]") == "循环递推逐步演示"
    assert page.inner_text("a[href='#w-attention']") == "注意力"
    assert page.inner_text("#lstm-sliders label:nth-child(2) span") == "遗忘门 f"
    assert page.inner_text("#mask-visible").startswith("n = 3 个词元时共有 6 个可见位置")
    assert page.inner_text("#att-output") == "查询 1: 4.641908"  # numbers unchanged, labels translated
    assert "隐藏状态" in page.inner_text("#glossary") and "随时间反向传播" in page.inner_text("#glossary")
    # every static label changed language
    english = page.evaluate("() => [...document.querySelectorAll('[data-i18n]')].map(e => STRINGS[e.dataset.i18n][0])")
    shown = page.locator("[data-i18n]").all_text_contents()
    changed = [s for s, e in zip(shown, english) if s != e]
    same_in_both = page.evaluate("() => Object.values(STRINGS).filter(p => p[0] === p[1]).map(p => p[0])")
    assert all(s != e or s in same_in_both for s, e in zip(shown, english))
    assert len(changed) > 100
    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    assert page.inner_text("#w-recurrence h2 [data-i18n]") == "循环递推逐步演示"  # remembered
    page.click("#lang-en")
    assert page.inner_text("#w-recurrence h2 [data-i18n]") == "Recurrence stepper"
    assert page.problems == []


def test_char_lm_plays_and_pauses(page):
    page.click("#lm-zero")
    expect(page.locator("#lm-steps-out")).to_have_text("0")
    settled(page)
    untrained = float(page.inner_text("#lm-final-loss"))
    page.click("#lm-play")
    assert page.inner_text("#lm-play") == "❚❚ pause"
    page.wait_for_function("() => Number(document.getElementById('lm-steps-out').textContent) >= 100", timeout=20_000)
    page.click("#lm-play")
    assert page.inner_text("#lm-play") == "▶ train"
    settled(page)
    paused_at = page.inner_text("#lm-steps-out")
    page.wait_for_timeout(400)
    assert page.inner_text("#lm-steps-out") == paused_at
    assert float(page.inner_text("#lm-final-loss")) < untrained
    # the curve has one point per step plus the final loss
    points = page.get_attribute("#lm-loss-chart polyline", "points").split()
    assert len(points) == int(paused_at) + 1
    assert page.problems == []


def test_readme_screenshot_tool(browser, tmp_path):
    from PIL import Image

    from seqlab.explorer.screenshot import take_screenshot

    out = tmp_path / "explorer.png"
    size = take_screenshot(out, width=1000, browser=browser)
    assert size == out.stat().st_size < 500 * 1024
    with Image.open(out) as image:
        assert image.width == 1000 and image.height > 3000  # the whole page, all twelve widgets
    assert not list(tmp_path.glob("*.tmp"))
