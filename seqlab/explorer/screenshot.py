"""Screenshots of the explorer, as in the README::

    seqlab explore --screenshot out/explorer.png --run demo_out/run
    seqlab explore --screenshot out/explorer-model.png --run demo_out/run --section w-model
    seqlab explore --screenshot out/paths.png --paths paths_out --section w-paths --lang zh
    seqlab explore --screenshot out/induction.png --induction induction_out --section w-induction

They go to ``out/`` (ignored by git); the README's images are ``docs/explorer.png`` and
``docs/explorer-model.png``, which a maintainer replaces with new screenshots on purpose.

Serves the explorer on a free port (with the given runs and results), opens it in headless Chromium
(Python playwright and Debian's ``/usr/bin/chromium``), waits for every widget to render and every
request to be answered, and saves a full-page PNG, or just one section, reduced to a 256-colour
palette so it stays small. A section drawn from results (``w-paths``, ``w-induction``) needs them
given. Chinese labels (``--lang zh``) need a CJK font: Debian's fonts-noto-cjk.
"""

from __future__ import annotations

import io
from pathlib import Path

from seqlab.atomic import atomic_path
from seqlab.explorer.server import start_in_thread

CHROMIUM = "/usr/bin/chromium"
# sections that draw results given on the command line (else they show how to make them)
SECTION_NEEDS = {"w-paths": ("paths", "--paths DIR (the --out of `seqlab paths`)"),
                 "w-induction": ("induction", "--induction DIR (the --out of `seqlab induction`)")}


def take_screenshot(out: Path, width: int = 1200, lang: str = "en", browser=None, *,
                    runs: list[str] | None = None, section: str | None = None, paths: str | None = None,
                    induction: str | None = None, workspace: str | None = None) -> int:
    """Write the full-page screenshot to ``out``; returns its size in bytes.

    ``browser``: an already launched playwright Browser to use (else Chromium is launched here).
    ``runs``: run directories for the model panels; ``section``: the id of the one section to
    capture (e.g. ``w-model``) instead of the whole page; ``paths``, ``induction``: the ``--out`` of
    ``seqlab paths`` / ``seqlab induction`` for their sections; ``workspace``: a ``seqlab learn``
    workspace for the "yours" panels. A section whose results are not given is a ValueError.
    """
    given = {"paths": paths, "induction": induction}
    if section in SECTION_NEEDS and not given[SECTION_NEEDS[section][0]]:
        raise ValueError(f"--section {section} draws results: give {SECTION_NEEDS[section][1]}")
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
            try:
                return take_screenshot(out, width, lang, browser, runs=runs, section=section, paths=paths,
                                       induction=induction, workspace=workspace)
            finally:
                browser.close()

    from PIL import Image

    from seqlab.explorer.runs import RunRegistry

    registry = RunRegistry(runs or [], paths_dir=paths)
    registry.induction_dir = induction
    server, _ = start_in_thread(runs=registry)
    server.workspace = workspace
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        # a widget's section is captured on the widget page (the course opens on its current lesson,
        # into which it moves the lesson's widget)
        view = "&view=widgets" if section and section != "course" else ""
        page.goto(f"{server.url}?lang={lang}{view}")
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        # requests started after the first render (the "yours" panels) are answered and drawn too
        page.wait_for_timeout(300)
        page.wait_for_function("() => document.body.dataset.busy !== '1'", timeout=60_000)
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

