"""The LM attention heatmap scales each row to its own largest weight on a sequential ramp, with a
colour bar: a row spread thin over many tokens is as readable as a peaked one."""

from __future__ import annotations

import pytest

from tests.explorer.browsing import CHROMIUM, browser, open_page  # noqa: F401 (fixture)
from tests.explorer.test_model_browser import api_weights

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")

RAMP = [[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]]


def ramp(f: float) -> str:
    """The oracle for attnColor: linear interpolation between the ramp's stops."""
    x = max(0.0, min(1.0, f)) * (len(RAMP) - 1)
    i = min(len(RAMP) - 2, int(x))
    mix = [round(v + (x - i) * (RAMP[i + 1][c] - v)) for c, v in enumerate(RAMP[i])]
    return f"rgb({mix[0]}, {mix[1]}, {mix[2]})"


def test_each_row_is_scaled_to_its_largest_weight(browser, model_server, model_client, tmp_path):
    for page in open_page(browser, model_server.url, tmp_path):
        page.wait_for_selector("#attn-map rect.attn-cell")
        text = page.input_value("#model-text")
        weights = api_weights(model_client, text, 0, 0)
        cells = page.eval_on_selector_all("#attn-map rect.attn-cell",
                                          "cs => cs.map(c => [+c.dataset.q, +c.dataset.k, c.getAttribute('fill')])")
        assert len(cells) == len(weights)
        for q, k, fill in cells:
            row_max = max(w for (r, _), w in weights.items() if r == q)
            assert fill == ramp(weights[(q, k)] / row_max), (q, k)
        rows = {q for q, _, _ in cells}
        darkest = {q for q, _, fill in cells if fill == ramp(1.0)}
        assert darkest == rows  # every row has its full-colour cell
        assert page.locator("#model-attn-panel svg.attn-bar").count() == 1
        assert "each row's largest weight" in page.text_content("#model-attn-panel svg.attn-bar")
