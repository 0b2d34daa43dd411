"""`widget("attention")` in a notebook: without anywidget a link to the explorer; with it, the
explorer's own widget whose requests the kernel answers. The widget's module runs here in headless
Chromium with a stand-in for anywidget's model, the kernel's side in this process."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from seqlab.explorer import notebook
from seqlab.explorer.api import run_endpoint, widget_defaults
from seqlab.explorer.server import STATIC_DIR

CHROMIUM = Path("/usr/bin/chromium")


def test_without_anywidget_a_widget_is_a_link_to_the_explorer(monkeypatch):
    monkeypatch.setitem(sys.modules, "anywidget", None)          # as if not installed
    link = notebook.widget("attention")
    assert isinstance(link, notebook.ExplorerLink)
    assert "seqlab explore" in repr(link) and 'href="http://127.0.0.1:8000/?view=widgets#w-attention"' in link._repr_html_()
    assert notebook.section_of("w-attention") == notebook.section_of("attention") == "w-attention"
    assert notebook.section_of("clip-panel") == "w-gradient"       # a panel's anchor: its section
    # each panel links to its own anchor, not its section's: two panels, two links
    urls = {name: notebook.widget(name).url for name in ("tb-panel", "clip-panel", "gradient", "attention")}
    assert urls["tb-panel"].endswith("#tb-panel") and urls["clip-panel"].endswith("#clip-panel")
    assert urls["gradient"].endswith("#w-gradient") and urls["attention"].endswith("#w-attention")
    assert len(set(urls.values())) == 4
    assert isinstance(notebook.widget("model"), notebook.ExplorerLink)   # panels over runs need the server
    with pytest.raises(ValueError, match="no widget 'nope'; the widgets are: recurrence, charlm"):
        notebook.widget("nope")


def test_with_anywidget_the_kernel_answers_the_widgets_requests(monkeypatch):
    import traitlets

    class AnyWidget(traitlets.HasTraits):                          # the part of anywidget's API used
        def __init__(self, **traits):
            super().__init__(**traits)
            self.sent, self.handlers = [], []

        def on_msg(self, handler):
            self.handlers.append(handler)

        def send(self, content):
            self.sent.append(content)

    monkeypatch.setitem(sys.modules, "anywidget", types.SimpleNamespace(AnyWidget=AnyWidget))
    shown = notebook.widget("attention", lang="zh")
    assert shown.lang == "zh" and shown.defaults == widget_defaults()
    assert shown.section_html.startswith('<section class="widget" id="w-attention">')
    assert "setupAttention(d.attention, d.cross_attention)" in shown._esm
    request = {"queries": [[1, 0]], "keys": [[1, 0], [0, 1]], "values": [[2], [10]]}
    shown.handlers[0](shown, {"id": 7, "name": "attention", "body": request}, [])
    assert shown.sent == [{"id": 7, "data": run_endpoint("attention", request)}]
    shown.handlers[0](shown, {"id": 8, "name": "attention", "body": {"queries": "x"}}, [])
    assert shown.sent[1]["id"] == 8 and "queries" in shown.sent[1]["error"]
    # its style sheet restyles nothing outside the widget
    rules = re.findall(r"(?:^|[{}])\s*([^{}@\s][^{}]*)\{", shown._css)
    assert len(rules) > 100
    for rule in rules:
        assert all(s.strip().startswith(".seqlab-explorer") for s in rule.split(",")), rule


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_the_widgets_module_draws_the_worked_example_in_a_notebook_output(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    model = """
const model = { handlers: [], on(event, f) { this.handlers.push(f); }, get(k) { return window.TRAITS[k]; },
  send(m) { window.kernel(m).then((r) => this.handlers.forEach((h) => h(r))); } };
seqlabWidget.render({ model, el: document.getElementById("output") });
"""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
        for lang, output in (("en", "query 1: 4.641908"), ("zh", "查询 1: 4.641908")):
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            problems = []
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.set_content("<html><body><h1 id='notebook'>a notebook</h1><div id='output'></div></body></html>")
            page.add_style_tag(content=notebook.scoped_css((STATIC_DIR / "style.css").read_text(encoding="utf-8")))
            page.expose_function("kernel", notebook.answer)
            page.evaluate("(t) => { window.TRAITS = t; }", {"section_html": notebook.sections()["w-attention"],
                                                            "defaults": widget_defaults(), "lang": lang})
            page.add_script_tag(content=notebook.esm("w-attention").replace("export default seqlabWidget;", "") + model,
                                type="module")
            page.wait_for_function("document.querySelectorAll('#att-weights td').length === 2", timeout=15_000)
            assert page.locator("#att-weights td").all_inner_texts() == ["0.669762", "0.330238"]
            assert page.locator("#att-output").inner_text() == output
            page.fill("#att-queries", "0, 0")                     # an edit goes to the kernel and back
            page.dispatch_event("#att-queries", "input")
            page.wait_for_function("document.querySelector('#att-output').textContent.includes('6.000000')")
            # the notebook around it keeps its own style
            assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgba(0, 0, 0, 0)"
            page.screenshot(path=str(tmp_path / f"notebook-widget-{lang}.png"))
            assert problems == []
            page.close()
        browser.close()
