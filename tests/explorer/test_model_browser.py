"""The model panels (section 12) in headless Chromium over a run trained in the test: the page
shows the API's numbers (token pieces, heatmap cells, kept sets), sample/generate extend the text,
bad input gives a message in every panel, and English/中文 covers the panels and their errors."""

from __future__ import annotations

import re

import pytest

from tests.explorer.browsing import CHROMIUM, browser, open_page, set_value, settled  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
expect = playwright_api.expect

PANELS = ["#model-info-panel", "#model-tokens-panel", "#model-attn-panel", "#model-next-panel", "#model-shapes-panel"]


@pytest.fixture
def page(browser, model_server, tmp_path):
    yield from open_page(browser, model_server.url, tmp_path)


def js_problems(page) -> list[str]:
    """Console problems other than the browser's own note on each HTTP 400 (expected on bad input)."""
    return [p for p in page.problems if "Failed to load resource" not in p]


def cell_weights(page) -> dict[tuple[int, int], float]:
    cells = page.eval_on_selector_all("#attn-map rect.attn-cell", "cs => cs.map(c => [c.dataset.q, c.dataset.k, c.dataset.w])")
    return {(int(q), int(k)): float(w) for q, k, w in cells}


def api_weights(client, text, layer, head) -> dict[tuple[int, int], float]:
    weights = client.ok("lm/attention", {"text": text, "layer": layer, "head": head})["weights"]
    return {(q, k): w for q, row in enumerate(weights) for k, w in enumerate(row) if k <= q}


def test_model_panels_show_the_apis_numbers(page, model_client):
    text = page.input_value("#model-text")
    tokens = model_client.ok("lm/tokens", {"text": text})["tokens"]
    T = len(tokens)
    assert page.locator("#model-tokens .piece-id").all_inner_texts() == [str(t["id"]) for t in tokens]
    assert page.locator("#model-tokens .piece-bytes").first.inner_text() == " ".join(f"{b:02x}" for b in tokens[0]["bytes"])
    assert page.inner_text("#model-context").startswith(f"{T} tokens of the 32-token context window")
    # the heatmap: one cell per visible pair (upper triangle empty), each equal to the API's weight
    assert cell_weights(page) == api_weights(model_client, text, 0, 0) and len(cell_weights(page)) == T * (T + 1) // 2
    page.select_option("#attn-layer", "1")
    page.select_option("#attn-head", "1")
    settled(page)
    assert cell_weights(page) == api_weights(model_client, text, 1, 1)
    page.click("#attn-thumb-0-1")
    settled(page)
    assert (page.input_value("#attn-layer"), page.input_value("#attn-head")) == ("0", "1")
    assert cell_weights(page) == api_weights(model_client, text, 0, 1)
    assert page.locator("#attn-grid canvas").count() == 4
    page.hover("#attn-map rect[data-q='3'][data-k='1']")
    w = api_weights(model_client, text, 0, 1)[(3, 1)]
    assert page.inner_text("#attn-hover") == (f"query 3 “{tokens[3]['text'].replace(' ', '␣')}” → key 1 "
                                              f"“{tokens[1]['text'].replace(' ', '␣')}”: weight {w:.6f}")
    # run facts, loss curve (train and validation), measured shapes
    assert page.locator("#model-loss polyline").count() == 2
    assert "39,840" in page.inner_text("#model-facts")
    assert page.inner_text("#model-shape-scores .dims") == f"1 × 2 × {T} × {T}"
    assert page.inner_text("#model-shape-logits .dims") == f"1 × {T} × 300"
    assert page.locator("#w-model .error:visible").count() == 0
    assert page.problems == []


def kept_ids(page) -> list[int]:
    return [int(x) for x in page.locator("#next-table tr.kept td:nth-child(3)").all_inner_texts()]


def test_sliders_change_the_kept_set(page, model_client):
    text = page.input_value("#model-text")
    assert page.locator("#next-table tr").count() == 21
    assert len(kept_ids(page)) == 20 and page.inner_text("#next-kept").startswith("300 of 300 tokens")
    set_value(page, "#next-top_k", 3)
    expect(page.locator("#next-table tr.kept")).to_have_count(3)
    expect(page.locator("#next-top_k-out")).to_have_text("3")
    api = model_client.ok("lm/next", {"text": text, "top_k": 3})["candidates"]
    assert kept_ids(page) == [c["id"] for c in api if c["kept"]]
    shown = [float(x) for x in page.locator("#next-table tr.kept td:nth-child(6)").all_inner_texts()]
    assert shown == pytest.approx([c["filtered_prob"] for c in api if c["kept"]], abs=1e-6)
    set_value(page, "#next-top_k", 0)
    set_value(page, "#next-top_p", 0.3)
    set_value(page, "#next-temperature", 0.5)
    settled(page)
    api = model_client.ok("lm/next", {"text": text, "temperature": 0.5, "top_p": 0.3})
    assert kept_ids(page) == [c["id"] for c in api["candidates"] if c["kept"]]
    assert page.inner_text("#next-kept").startswith(f"{api['kept_total']} of 300 tokens")
    assert page.problems == []


def test_sample_and_generate_extend_the_text(page, model_client):
    text = page.input_value("#model-text")
    set_value(page, "#next-top_k", 1)
    settled(page)
    page.click("#next-sample")
    expected = model_client.ok("lm/sample", {"text": text, "top_k": 1})
    expect(page.locator("#next-generated")).to_contain_text(f"(id {expected['token']['id']})")
    assert page.input_value("#model-text") == expected["text"]
    settled(page)
    before = page.input_value("#model-text")
    page.click("#next-generate")
    expect(page.locator("#next-generated")).to_contain_text(re.compile(r"generated \d+ tokens"), timeout=20_000)
    settled(page)
    after = page.input_value("#model-text")
    assert after.startswith(before) and len(after) > len(before)
    # every panel followed the new text (here it no longer fits in the context)
    assert page.locator("#model-tokens .piece").count() == min(32, model_client.ok("lm/tokens", {"text": after})["total"])
    assert page.problems == []


def test_bad_input_gives_a_message_in_every_panel(page, model_server):
    set_value(page, "#model-text", "")
    for panel in PANELS[1:]:
        expect(page.locator(f"{panel} > .error")).to_contain_text("the text is empty")
    set_value(page, "#model-text", "Once upon a time")
    settled(page)
    assert page.locator("#w-model .error:visible").count() == 0
    set_value(page, "#next-temperature", 0)
    expect(page.locator("#model-next-panel > .error")).to_contain_text("temperature must be > 0")
    set_value(page, "#next-temperature", 1)
    settled(page)
    page.select_option("#model-run", model_server.run_ids["damaged"])
    for panel in PANELS:
        expect(page.locator(f"{panel} > .error")).to_contain_text("cannot be loaded")
    assert "latest.pt" in page.inner_text("#model-info-panel > .error")
    page.select_option("#model-run", model_server.run_ids["missing"])
    for panel in PANELS:
        expect(page.locator(f"{panel} > .error")).to_contain_text("does not exist")
    assert "⚠" in page.inner_text("#model-run")
    assert js_problems(page) == []


def test_language_switch_covers_the_model_panels_and_their_errors(page, model_server):
    page.click("#lang-zh")
    assert page.inner_text("#w-model h2 [data-i18n]") == "你训练的语言模型"
    assert page.inner_text("a[href='#w-model']") == "你的模型"
    assert "上下文窗口" in page.inner_text("#model-context")
    assert page.inner_text("#next-kept").startswith("300 个词元中有 300 个")
    assert page.locator("#next-table th").all_inner_texts()[1:4] == ["词元", "编号", "概率"]
    assert page.inner_text("#model-shape-embedding .name") == "嵌入"
    english = page.evaluate("() => [...document.querySelectorAll('#w-model [data-i18n]')].map(e => STRINGS[e.dataset.i18n][0])")
    shown = page.locator("#w-model [data-i18n]").all_text_contents()
    same = page.evaluate("() => Object.values(STRINGS).filter(p => p[0] === p[1]).map(p => p[0])")
    assert all(s != e or s in same for s, e in zip(shown, english)) and len(shown) > 15
    # errors too, and switching back re-translates them
    set_value(page, "#model-text", "")
    expect(page.locator("#model-tokens-panel > .error")).to_have_text("错误：文本为空：请输入一些文本供模型读取。")
    page.select_option("#model-run", model_server.run_ids["damaged"])
    expect(page.locator("#model-info-panel > .error")).to_contain_text("无法加载运行")
    page.click("#lang-en")
    assert page.inner_text("#model-info-panel > .error").startswith("error: run ")
    assert js_problems(page) == []


def test_without_a_run_the_panels_say_how_to_make_one(browser, tmp_path):
    from seqlab.explorer.runs import RunRegistry
    from tests.explorer.conftest import serving

    with serving(RunRegistry([])) as server:
        for page in open_page(browser, server.url, tmp_path):
            for panel in PANELS:
                expect(page.locator(f"{panel} > .error")).to_contain_text("seqlab demo --fast")
            assert page.inner_text("#model-run") == "no run given"
            # section 13 without a seq2seq run: a calm hint as section 14 gives, no error box, no empty menus
            expect(page.locator("#tr-hint")).to_contain_text("seqlab seq2seq train --task dates --out runs/dates")
            assert page.locator("#w-translate .error:visible").count() == 0
            assert page.locator("#w-translate select:visible").count() == 0
            page.click("#lang-zh")
            expect(page.locator("#tr-hint")).to_contain_text("先训练一个 seq2seq 运行")
            page.click("#lang-en")
            assert page.inner_text("#paths-note").startswith("Run `seqlab paths --out DIR`")
            # the lesson widgets are unaffected
            assert page.locator("#att-weights td").all_inner_texts() == ["0.669762", "0.330238"]
            assert page.problems == []  # the page knew from /api/runs: no failing requests at all
