"""The explorer's interpretation views in headless Chromium, in English and 中文: one question asked
of three architectures side by side (the paths experiment's runs), the note on a saturated
prediction, and a request over the cost limit refused with its estimate and the terminal command;
no label overlaps, and nothing overflows sideways (the logit-lens grid of a long prompt fits its panel)."""

from __future__ import annotations

import pytest

from seqlab.explorer.runs import RunRegistry
from tests.explorer.browsing import CHROMIUM, browser, open_page, overlapping, settled  # noqa: F401 (fixture)
from tests.explorer.conftest import client_for, saturated_lm_run, serving

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")

LABELS = """(selector) => [...document.querySelectorAll(selector)].filter((e) => e.textContent.trim() !== '')
  .map((e) => { const r = e.getBoundingClientRect(); const card = e.closest('.ask-card, .panel');
    return [card ? card.dataset.arch || card.id : '', e.textContent, r.left, r.top, r.right, r.bottom]; })"""
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(params=["en", "zh"])
def lang(request):
    return request.param


def test_one_question_is_asked_of_three_architectures_side_by_side(browser, side_by_side_dir, lang, tmp_path):
    with serving(RunRegistry([], paths_dir=str(side_by_side_dir))) as server:
        for page in open_page(browser, f"{server.url}?lang={lang}", tmp_path):
            page.wait_for_selector("#paths-ask .ask-card svg", timeout=60_000)
            settled(page)
            cards = page.eval_on_selector_all("#paths-ask .ask-card", "cs => cs.map(c => c.dataset.arch)")
            assert cards == ["rnn", "rnn-attention", "transformer"]
            source = page.input_value("#paths-source")
            answers = client_for(server).ok("interpret/seq2seq", {"question": "depends", "text": source})["results"]
            for arch, answer in zip(cards, answers):  # every model answered with its full map, as the API
                cells = page.eval_on_selector_all(f'#paths-ask .ask-card[data-arch="{arch}"] rect.ask-cell',
                                                  "cs => cs.map(c => Number(c.dataset.v))")
                expected = [v for row in answer["values"] for v in row]
                assert len(cells) == len(expected) >= len(source) and max(abs(a - b) for a, b in zip(cells, expected)) < 1e-9
            page.select_option("#paths-question", "knockout")
            settled(page)
            page.wait_for_selector('#paths-ask .ask-card[data-arch="rnn"] .flow-warn')
            cannot = page.text_content('#paths-ask .ask-card[data-arch="rnn"] .flow-warn')
            assert ("该模型无法回答" if lang == "zh" else "this model cannot answer") in cannot
            assert page.locator('#paths-ask .ask-card[data-arch="transformer"] rect.ask-cell').count() > 0
            assert overlapping(page.evaluate(LABELS, "#paths-ask svg text")) == []
            assert page.evaluate(OVERFLOW) <= 0
            heading = page.text_content("#paths-ask-panel h3")
            assert heading == ("同一个问题，问每一种架构" if lang == "zh" else "One question, every architecture")
            page.locator("#paths-ask-panel").screenshot(path=str(tmp_path / f"side_by_side_{lang}.png"))
            assert [p for p in page.problems if "Failed to load resource" not in p] == []


def test_a_saturated_prediction_is_said_so_and_the_lens_stays_in_its_box(browser, lang, tmp_path):
    run = saturated_lm_run(tmp_path / "saturated")
    with serving(RunRegistry([str(run)])) as server:
        for page in open_page(browser, f"{server.url}?lang={lang}", tmp_path):
            page.wait_for_selector("#flow-ko-notes .flow-warn", timeout=60_000)
            settled(page)
            note = page.locator('#flow-ko-notes .flow-warn[data-code="saturated"]')
            assert note.is_visible()
            text = note.text_content()
            assert ("已饱和" if lang == "zh" else "Saturated") in text and ("p = 0.99" in text or "p = 1.0" in text)
            assert page.locator("#flow-lens rect.lens-cell").count() > 0
            assert page.evaluate(OVERFLOW) <= 0
            # the 64-column lens grid fits its panel: no sideways scrolling, in the page or in its box
            assert page.eval_on_selector("#flow-lens", "e => e.scrollWidth - e.clientWidth") <= 0
            box = page.locator("#flow-lens svg").bounding_box()
            assert box["x"] + box["width"] <= page.viewport_size["width"]
            assert overlapping(page.evaluate(LABELS, "#w-flow svg text")) == []
            page.locator("#flow-knockout-panel").screenshot(path=str(tmp_path / f"saturated_{lang}.png"))


def test_a_request_over_the_limit_is_refused_with_the_estimate_and_the_command(browser, lm_run, lang, tmp_path):
    registry = RunRegistry([str(lm_run)])
    registry.interpret_limit = 1e-6
    with serving(registry) as server:
        for page in open_page(browser, f"{server.url}?lang={lang}", tmp_path):
            page.wait_for_selector("#flow-patch-panel > .error:not([hidden])", timeout=60_000)
            message = page.text_content("#flow-patch-panel > .error")
            assert ("超过本浏览器应用每个请求" if lang == "zh" else "more than this explorer's limit") in message
            assert f"seqlab interpret patch --run {lm_run}" in message and "--corrupt" in message
            box = page.locator("#flow-patch-panel > .error").bounding_box()
            assert box["x"] + box["width"] <= page.viewport_size["width"]
            assert page.evaluate(OVERFLOW) <= 0
            page.locator("#flow-patch-panel").screenshot(path=str(tmp_path / f"refused_{lang}.png"))
