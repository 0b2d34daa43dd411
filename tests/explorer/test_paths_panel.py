"""The information-paths panel: `seqlab explore --paths DIR` draws DIR/results.json.

fixtures/paths/results.json is the output of `seqlab paths --fast --tasks copy,dates` (s2s branch,
Nov 2026), kept as a sample of the format; the API's numbers are checked against the file read here."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from seqlab.explorer.runs import RunRegistry
from tests.explorer.browsing import CHROMIUM, browser, open_page  # noqa: F401 (fixture)
from tests.explorer.conftest import client_for, serving

RESULTS = Path(__file__).parent / "fixtures" / "paths"


@pytest.fixture
def serve():
    """serve(paths_dir) -> (server, client); every server is stopped after the test."""
    with ExitStack() as stack:
        def start(paths_dir):
            server = stack.enter_context(serving(RunRegistry([], paths_dir=paths_dir)))
            return server, client_for(server)

        yield start


def test_paths_results_are_the_files_numbers(serve):
    _, client = serve(str(RESULTS))
    data = client.ok("paths")
    raw = json.loads((RESULTS / "results.json").read_text())
    assert [t["task"] for t in data["tasks"]] == list(raw["tasks"]) == ["copy", "dates"] and data["fast"]
    for task in data["tasks"]:
        info = raw["tasks"][task["task"]]
        assert task["train_lengths"] == info["train_lengths"] and task["test_max_len"] == info["test_max_len"]
        assert [a["arch"] for a in task["archs"]] == ["rnn", "rnn-attention", "transformer"]
        for arch in task["archs"]:
            run = info["archs"][arch["arch"]]
            assert arch["exact_match"] == run["exact_match"] and arch["parameters"] == run["parameters"]
            expected = sorted((int(n), v["exact_match"], v["count"]) for n, v in run["by_length"].items())
            assert [tuple(p) for p in arch["points"]] == expected


def test_missing_or_bad_results_say_how_to_make_them(serve, tmp_path):
    status, data = serve(str(tmp_path))[1].post("paths")
    assert status == 400 and data["code"] == "paths_missing" and f"seqlab paths --out {tmp_path}" in data["error"]
    (tmp_path / "results.json").write_text('{"tasks": {"copy": {"archs": {"rnn": {}}}}}')
    status, data = serve(str(tmp_path))[1].post("paths")
    assert status == 400 and data["code"] == "paths_bad" and "results.json" in data["error"]
    status, data = serve(None)[1].post("paths")
    assert status == 400 and data["code"] == "no_paths"


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_paths_are_drawn_in_the_page(browser, serve, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    server, client = serve(str(RESULTS))
    data = client.ok("paths")
    for page in open_page(browser, server.url, tmp_path):
        for task in data["tasks"]:
            lines = page.locator(f"#paths-{task['task']} polyline")
            assert lines.count() == 3
            # one point per length the file has a score for
            assert [len(lines.nth(i).get_attribute("points").split()) for i in range(3)] == [len(a["points"]) for a in task["archs"]]
        assert "rnn-attention" in page.inner_text("#w-paths .legend")
        assert "--fast" in page.inner_text("#paths-note")
        page.click("#lang-zh")
        assert page.inner_text("#w-paths h2 [data-i18n]") == "信息路径：准确率与长度"
        assert "训练长度为 1 到 6" in page.inner_text("#w-paths")
        assert [p for p in page.problems if "Failed to load resource" not in p] == []
