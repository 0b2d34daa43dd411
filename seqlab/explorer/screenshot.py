"""Screenshots of the explorer, as in the README::

    seqlab explore --screenshot out/explorer.png --run demo_out/run
    seqlab explore --screenshot out/explorer-model.png --run demo_out/run --section w-model
    seqlab explore --screenshot out/paths.png --paths paths_out --section w-paths --lang zh

They go to ``out/`` (ignored by git); the README's images are ``docs/explorer.png`` and
``docs/explorer-model.png``, which a maintainer replaces with new screenshots on purpose.

Serves the explorer on a free port (with the given runs), opens it in headless Chromium (Python
playwright and Debian's ``/usr/bin/chromium``), waits for every widget to render, and saves a
full-page PNG, or just one section, reduced to a 256-colour palette so it stays small. Chinese
labels (``--lang zh``) need a CJK font: Debian's fonts-noto-cjk (``.ci/run`` installs it).
"""

from __future__ import annotations

import io
from pathlib import Path

from seqlab.atomic import atomic_path
from seqlab.explorer.server import start_in_thread

CHROMIUM = "/usr/bin/chromium"


def take_screenshot(out: Path, width: int = 1200, lang: str = "en", browser=None, *,
                    runs: list[str] | None = None, section: str | None = None, paths: str | None = None) -> int:
    """Write the full-page screenshot to ``out``; returns its size in bytes.

    ``browser``: an already launched playwright Browser to use (else Chromium is launched here).
    ``runs``: run directories for the model panels; ``section``: the id of the one section to
    capture (e.g. ``w-model``) instead of the whole page; ``paths``: the ``--out`` of ``seqlab
    paths`` for section 14 (``w-paths``).
    """
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
            try:
                return take_screenshot(out, width, lang, browser, runs=runs, section=section, paths=paths)
            finally:
                browser.close()

    from PIL import Image

    from seqlab.explorer.runs import RunRegistry

    server, _ = start_in_thread(runs=RunRegistry(runs or [], paths_dir=paths))
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        # a widget's section is captured on the widget page (the course opens on its current lesson,
        # into which it moves the lesson's widget)
        view = "&view=widgets" if section and section != "course" else ""
        page.goto(f"{server.url}?lang={lang}{view}")
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        if section:
            # the sticky header would cover the top of a section scrolled into view
            page.evaluate("() => { document.querySelector('header.top').style.position = 'static'; }")
            # a clip of the full page: an element screenshot of a section taller than what is left of the
            # viewport below the (now static) header was cut off at the viewport's bottom
            box = page.evaluate("(id) => { const s = document.getElementById(id); if (!s) return null; "
                                "const r = s.getBoundingClientRect(); "
                                "return {x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height}; }",
                                section)
            if box is None:
                ids = page.evaluate("() => [...document.querySelectorAll('section[id]')].map(s => s.id)"
                                    ".filter(id => !id.startsWith('sec-'))")  # a lesson's own parts are not sections
                raise ValueError(f"the page has no section {section!r}; its sections are {', '.join(ids)}")
            png = page.screenshot(full_page=True, clip=box)
        else:
            png = page.screenshot(full_page=True)
    finally:
        page.close()
        server.shutdown()
        server.server_close()
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        image.save(tmp, format="PNG", optimize=True)
    return out.stat().st_size

