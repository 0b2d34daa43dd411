"""A generated notebook in a real JupyterLab, in Chromium, with anywidget (seqlab[notebook]): its cells
run in a kernel and widget("w-recurrence") draws the explorer's widget inline, its numbers computed
by the kernel over the widget's channel. A screenshot, jupyterlab-widget.png, is left in tmp_path."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install -e '.[test]')")
pytest.importorskip("anywidget", reason="anywidget is not installed (pip install -e '.[notebook]')")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _notebook(folder: Path) -> Path:
    """The recurrence part's notebook as seqlab writes it, cut to its install, imports and first widget
    cells (the rest, checks of stubs, is tests/learn/test_notebooks.py's)."""
    from seqlab.learn.notebooks import part_notebook
    nb = part_notebook("recurrence", "en")
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    keep = code[:2] + [next(c for c in code if c["source"] == 'widget("w-recurrence")')]
    nb["cells"] = [nb["cells"][0], *keep]
    path = folder / "recurrence.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving tmp_path, its kernels seeing this checkout of seqlab."""
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "JUPYTER_CONFIG_DIR": str(tmp_path / ".jupyter"), "JUPYTER_RUNTIME_DIR": str(tmp_path / ".runtime")}
    log = open(tmp_path / "jupyterlab.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                               "--allow-root", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}",
                               "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
                               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).read()
            break
        except OSError:
            if server.poll() is not None or time.time() > deadline:
                server.kill()
                raise AssertionError("JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text())
            time.sleep(0.25)
    try:
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_a_generated_notebook_draws_the_widget_inline_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import sync_playwright
    url, token = lab
    _notebook(tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors, console = [], []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.goto(f"{url}/lab/tree/recurrence.ipynb?token={token}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=90_000)      # the kernel is up
        page.locator(".jp-Notebook .jp-Cell").first.click()
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        widget = page.locator(".jp-OutputArea-output .seqlab-explorer")
        try:
            widget.wait_for(timeout=120_000)
            # drawn by the explorer's own scripts, its numbers computed by the kernel (the lab's recurrence)
            page.wait_for_function("() => [...document.querySelectorAll('.seqlab-explorer #rec-table td')]"
                                   ".some((td) => td.textContent.trim() === '-0.674144')", timeout=90_000)
        except Exception:
            page.screenshot(path=str(tmp_path / "jupyterlab-timeout.png"), full_page=True)
            (tmp_path / "console.txt").write_text("\n".join(errors + console))
            raise
        cells = widget.locator("#rec-table td").all_inner_texts()
        assert {"0.761594", "0.363399", "-0.674144"} <= set(cells)
        widget.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "jupyterlab-widget.png"))
        # it answers the student: new inputs go to the kernel and come back computed
        before = widget.locator("#rec-table").inner_text()
        widget.locator("#rec-a").fill("0.9")
        widget.locator("#rec-a").dispatch_event("input")
        page.wait_for_function("(before) => document.querySelector('.seqlab-explorer #rec-table').innerText !== before",
                               arg=before, timeout=30_000)
        # the link stays the fallback: no "run seqlab explore" text where anywidget drew it
        assert "run `seqlab explore`" not in page.locator(".jp-OutputArea-output").all_inner_texts()[-1]
        assert errors == [], errors
        browser.close()
