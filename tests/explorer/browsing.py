"""Helpers for the browser tests: one headless Chromium per module, a page that records console
problems, and user-like edits."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
        yield browser
        browser.close()


def open_page(browser, url: str, tmp_path: Path):
    """Yield a fresh page at ``url`` once it is ready; console errors/warnings go to page.problems.
    A full-page screenshot is left in tmp_path for debugging."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: page.problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: page.problems.append(f"pageerror: {e}"))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    yield page
    page.screenshot(path=str(tmp_path / "explorer.png"), full_page=True)
    context.close()


def settled(page):
    """Wait until no API request is in flight and the debounce has fired."""
    page.wait_for_timeout(250)
    page.wait_for_selector("body[data-busy='0']", timeout=15_000)


def set_value(page, selector, value):
    """Set an input (range, number, text, textarea) the way a user edit does: value + input event."""
    page.eval_on_selector(selector, "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }",
                          str(value))


def overlapping(boxes):
    """Pairs of labels in the same group (a panel, a card) whose boxes [group, text, left, top, right,
    bottom] intersect (touching edges allowed, 0.5 px slack)."""
    pairs = []
    for i, (group, text, l1, t1, r1, b1) in enumerate(boxes):
        for group2, text2, l2, t2, r2, b2 in boxes[i + 1:]:
            if group == group2 and min(r1, r2) - max(l1, l2) > 0.5 and min(b1, b2) - max(t1, t2) > 0.5:
                pairs.append((group, text, text2))
    return pairs
