"""The "More mistakes" fold of a lesson in the explorer's course, in headless Chromium, in English and
中文: the mistakes section shows at most five mistakes, the rest sit in one closed <details>, and a
link to a folded mistake (where a diagnosis's "read" link points) opens the fold and scrolls to it.
Screenshots of the section, folded and opened, are left in the test's tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")

from seqlab.learn import views  # noqa: E402
from tests.explorer.browsing import browser, open_page, settled  # noqa: E402,F401 (fixture)
from tests.explorer.conftest import serving  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with serving() as server:
        yield server


def _section_shot(page, section, path):
    """The whole section, not covered by the sticky header (made static for the shot, then restored)."""
    page.evaluate("() => { document.querySelector('header.top').style.position = 'static'; }")
    section.screenshot(path=str(path))
    page.evaluate("() => { document.querySelector('header.top').style.position = ''; }")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("step", ["attention", "scaled_dot_product_attention"])
def test_the_fold_hides_the_rest_and_a_link_opens_it(browser, server, tmp_path, lang, step):
    view = views.step_view(step, lang)
    shown = [m for m in view["mistakes"] if not m["folded"]]
    folded = [m for m in view["mistakes"] if m["folded"]]
    assert folded and len(shown) <= views.FOLD_AFTER
    for page in open_page(browser, f"{server.url}?lang={lang}#step/{step}", tmp_path):
        page.wait_for_selector(f"#course-lesson[data-step={step}]")
        settled(page)
        section = page.locator("#sec-mistakes")
        fold = section.locator("details#more-mistakes")
        assert fold.count() == 1 and fold.get_attribute("open") is None
        assert fold.locator("summary").inner_text() == views.label("more_mistakes", lang, n=len(folded))
        # before the fold: the shown mistakes, visible; behind it: the rest, present and hidden
        outside = section.locator(":scope > .lesson-mistake")
        assert outside.evaluate_all("(ms) => ms.map((m) => m.id)") == [m["anchor"] for m in shown]
        assert all(page.locator(f"#{m['anchor']}").is_visible() for m in shown)
        inside = fold.locator(".lesson-mistake")
        assert inside.evaluate_all("(ms) => ms.map((m) => m.id)") == [m["anchor"] for m in folded]
        assert not any(page.locator(f"#{m['anchor']}").is_visible() for m in folded)
        _section_shot(page, section, tmp_path / f"fold-{step}-{lang}-closed.png")
        # a link to a folded mistake (a diagnosis's) opens the fold and scrolls to it, below the header
        target = folded[-1]["anchor"]
        page.evaluate(f"location.hash = '#step/{step}/{target}'")
        page.wait_for_timeout(200)
        assert fold.get_attribute("open") is not None
        assert page.locator(f"#{target}").is_visible()
        box = page.locator(f"#{target}").bounding_box()
        header = page.locator("header.top").bounding_box()
        assert box is not None and header["height"] <= box["y"] < 900, box
        page.screenshot(path=str(tmp_path / f"fold-{step}-{lang}-link.png"))
        _section_shot(page, section, tmp_path / f"fold-{step}-{lang}-open.png")
        # the reader closes it again with the summary
        fold.locator("summary").click()
        assert fold.get_attribute("open") is None
        assert page.problems == []
