"""The information-flow section (12b) in headless Chromium over a run trained in the test: it opens
on its worked example with a lens grid, a patching heatmap and a head grid holding the API's
numbers, in English and 中文, no two labels overlap, and unequal prompts give the page's message."""

from __future__ import annotations

import pytest

from tests.explorer.browsing import CHROMIUM, browser, open_page, overlapping, set_value, settled  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")

# every label in the section's drawings, with its box on screen
LABEL_BOXES = """() => [...document.querySelectorAll('#w-flow svg text')].filter((e) => e.textContent.trim() !== '')
  .map((e) => { const r = e.getBoundingClientRect();
    return [e.closest('.panel').id, e.textContent, r.left, r.top, r.right, r.bottom]; })"""


@pytest.fixture(params=["en", "zh"])
def page(request, browser, model_server, tmp_path):
    yield from open_page(browser, f"{model_server.url}?lang={request.param}", tmp_path)


def test_the_section_opens_on_its_worked_example_and_no_labels_overlap(page, model_client):
    clean = page.input_value("#flow-clean")
    corrupt = page.input_value("#flow-corrupt")
    assert "Emma" in clean and "Lily" in corrupt
    lens = model_client.ok("interpret/lens", {"text": clean})
    cells = page.eval_on_selector_all("#flow-lens rect.lens-cell", "cs => cs.map(c => [c.dataset.row, c.dataset.pos, c.dataset.top])")
    assert len(cells) == len(lens["top_ids"]) * len(lens["tokens"]) > 0
    assert all(int(top) == lens["top_ids"][int(r)][int(p)][0] for r, p, top in cells)
    patched = model_client.ok("interpret/patch", {"clean": clean, "corrupt": corrupt})
    values = page.eval_on_selector_all("#flow-patch rect.patch-cell", "cs => cs.map(c => Number(c.dataset.v))")
    expected = [v for row in patched["recovery"] for v in row]
    assert len(values) == len(expected) > 0
    assert max(abs(a - b) for a, b in zip(values, expected)) < 1e-6
    heads = model_client.ok("interpret/heads", {})
    roles = page.eval_on_selector_all("#flow-heads rect.head-role", "cs => cs.map(c => c.dataset.role)")
    assert roles == [role for row in heads["roles"] for role in row] and roles
    assert page.locator("#flow-attr rect.attr-bar").count() > 0 and page.locator("#flow-knockout circle.ko-node").count() > 0
    boxes = page.evaluate(LABEL_BOXES)
    assert len(boxes) > 50
    assert overlapping(boxes) == []
    page.hover("#flow-heads rect.head-role >> nth=0")
    hover = page.text_content("#flow-heads-hover")
    lang = page.evaluate("() => I18N.lang")
    assert ("第 0 层 头 0" if lang == "zh" else "layer 0 head 0") in hover
    assert page.text_content("#w-flow h2").endswith("你的语言模型中的信息流" if lang == "zh" else "Information flow in your language model")
    assert [p for p in page.problems if "Failed to load resource" not in p] == []


def test_prompts_of_different_lengths_get_the_message(page):
    set_value(page, "#flow-corrupt", "There was")
    settled(page)
    page.wait_for_selector("#flow-patch-panel > .error:not([hidden])")
    message = page.text_content("#flow-patch-panel > .error")
    lang = page.evaluate("() => I18N.lang")
    assert ("词元数相同" if lang == "zh" else "same number of tokens") in message
    assert page.is_hidden("#flow-lens-panel > .error")  # the lens reads the clean prompt only


def test_without_a_run_the_section_says_how_to_start(browser, explorer_server, tmp_path):
    for page in open_page(browser, explorer_server.url, tmp_path):
        assert page.is_visible("#flow-none") and "seqlab explore --run DIR" in page.text_content("#flow-none")
        assert page.locator("#w-flow .error:visible").count() == 0 and not page.is_visible("#flow-lens-panel")
