"""The information-paths panel: `seqlab explore --paths DIR` draws DIR/results.json.

fixtures/paths/results.json is the output of `seqlab paths --fast --tasks copy,dates` (s2s branch,
Nov 2026), kept as a sample of the format; the API's numbers are checked against the file read here.
The charts read at a glance (issue 22): line-end labels never overlap (their bounding boxes, in
English and 中文), each architecture has the colour paths.png gives it (read from the saved Figure and
from the page's SVG), coinciding lines stay visible and are named, small samples follow one rule."""

from __future__ import annotations

import json
import re
from contextlib import ExitStack
from pathlib import Path

import pytest

from seqlab.explorer.runs import RunRegistry
from seqlab.explorer.server import STATIC_DIR
from seqlab.seq2seq.paths.chart import ARCH_STYLES, MIN_PAIRS
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
    raw = json.loads((RESULTS / "results.json").read_text())
    for page in open_page(browser, server.url, tmp_path):
        for task in data["tasks"]:
            lines = page.locator(f"#paths-{task['task']} polyline")
            assert lines.count() == 3
            # one point per length the file has a score for on at least MIN_PAIRS test pairs (the rule
            # paths.png follows too: fewer pairs say too little to draw)
            raw_archs = raw["tasks"][task["task"]]["archs"]
            assert [len(lines.nth(i).get_attribute("points").split()) for i in range(3)] == \
                [sum(v["count"] >= MIN_PAIRS for v in raw_archs[a["arch"]]["by_length"].values()) for a in task["archs"]]
        assert "rnn-attention" in page.inner_text("#w-paths .legend")
        assert "--fast" in page.inner_text("#paths-note")
        page.click("#lang-zh")
        assert page.inner_text("#w-paths h2 [data-i18n]") == "信息路径：准确率与长度"
        assert "训练长度为 1 到 6" in page.inner_text("#w-paths")
        assert [p for p in page.problems if "Failed to load resource" not in p] == []


ARCHS = ("rnn", "rnn-attention", "transformer")


def _coinciding_results(tmp_path: Path) -> Path:
    """The fixture with rnn-attention's scores set to the transformer's on every task (as on a real
    `dates` run, where both reach 100%): two lines that lie exactly on top of each other."""
    raw = json.loads((RESULTS / "results.json").read_text())
    for info in raw["tasks"].values():
        info["archs"]["rnn-attention"]["by_length"] = json.loads(json.dumps(info["archs"]["transformer"]["by_length"]))
    out = tmp_path / "coinciding"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(raw))
    return out


def _boxes(page, selector):
    return page.eval_on_selector_all(selector, """els => els.map(e => {
        const r = e.getBoundingClientRect(); return [e.dataset.arch, r.left, r.top, r.right, r.bottom]; })""")


def _overlap(a, b) -> bool:
    return a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
@pytest.mark.parametrize("results", ["fixture", "coinciding"])
def test_line_labels_never_overlap(browser, serve, tmp_path, results):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    directory = RESULTS if results == "fixture" else _coinciding_results(tmp_path)
    server, client = serve(str(directory))
    data = client.ok("paths")
    for page in open_page(browser, server.url, tmp_path):
        # the layout rule itself: pushed apart downwards, then pulled back inside the plot
        assert page.evaluate("spreadLabels([50, 50, 120], 16, 10, 200)") == [50, 66, 120]
        assert page.evaluate("spreadLabels([200, 120, 200], 16, 10, 200)") == [184, 120, 200]
        assert page.evaluate("spreadLabels([200, 200, 200], 16, 10, 200)") == [168, 184, 200]
        for lang in ("en", "zh"):
            if lang == "zh":
                page.click("#lang-zh")
            for task in data["tasks"]:
                labels = _boxes(page, f"#paths-{task['task']} text.paths-label")
                assert sorted(label[0] for label in labels) == sorted(ARCHS)
                assert all(label[3] > label[1] and label[4] > label[2] for label in labels)  # drawn, not empty
                for i, a in enumerate(labels):
                    for b in labels[i + 1:]:
                        assert not _overlap(a, b), (lang, task["task"], a, b)
                # the labels stay inside the chart
                chart = page.locator(f"#paths-{task['task']} svg").bounding_box()
                assert all(chart["x"] <= label[1] and label[3] <= chart["x"] + chart["width"] + 0.5 for label in labels)
        assert [p for p in page.problems if "Failed to load resource" not in p] == []


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_each_architecture_has_one_colour_in_the_png_and_the_page(browser, serve, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    from matplotlib.colors import to_rgb

    from seqlab.seq2seq.paths.figures import draw_paths
    from tests.seq2seq.test_paths_chart import png_line_colours

    png = png_line_colours(draw_paths(tmp_path / "paths.png", json.loads((RESULTS / "results.json").read_text())))
    assert sorted(png) == sorted(ARCHS)
    server, client = serve(str(RESULTS))
    data = client.ok("paths")
    assert {arch: data["styles"][arch]["color"] for arch in ARCHS} == png  # the API serves the PNG's palette
    for page in open_page(browser, server.url, tmp_path):
        for task in data["tasks"]:
            for arch in ARCHS:
                chart = f"#paths-{task['task']}"
                line = page.locator(f"{chart} polyline[data-arch='{arch}']")
                assert line.get_attribute("stroke") == png[arch]
                drawn = page.eval_on_selector(f"{chart} polyline[data-arch='{arch}']", "e => getComputedStyle(e).stroke")
                label = page.eval_on_selector(f"{chart} text.paths-label[data-arch='{arch}']", "e => getComputedStyle(e).fill")
                key = page.eval_on_selector(f"#w-paths .key[data-arch='{arch}']",
                                            "e => getComputedStyle(e, '::before').backgroundColor")
                rgb = "rgb({}, {}, {})".format(*(round(255 * c) for c in to_rgb(png[arch])))
                assert drawn == label == key == rgb, (task["task"], arch)
    # the page holds no colour of its own for an architecture: every one comes through the API
    for name in ("paths.js", "style.css", "model.js", "charts.js", "index.html"):
        text = (STATIC_DIR / name).read_text(encoding="utf-8").lower()
        assert not [style.color for style in ARCH_STYLES.values() if style.color.lower() in text], name


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_coinciding_lines_stay_visible_and_are_named(browser, serve, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    server, client = serve(str(_coinciding_results(tmp_path)))
    data = client.ok("paths")
    for page in open_page(browser, server.url, tmp_path):
        chart = "#paths-copy"
        dashes = [page.locator(f"{chart} polyline[data-arch='{a}']").get_attribute("stroke-dasharray") for a in ARCHS]
        assert len(set(dashes)) == 3  # solid, dashed, dotted
        markers = [page.eval_on_selector_all(f"{chart} g[data-arch='{a}'] .paths-marker", "els => els.map(e => e.tagName)")
                   for a in ARCHS]
        assert [set(m) for m in markers] == [{"circle"}, {"rect"}, {"polygon"}]
        # the two equal lines: the same values, drawn side by side (one x offset per architecture)
        xs = {a: [float(p.split(",")[0]) for p in page.locator(f"{chart} polyline[data-arch='{a}']").get_attribute("points").split()]
              for a in ("rnn-attention", "transformer")}
        assert all(right > left for left, right in zip(xs["rnn-attention"], xs["transformer"]))
        copy = next(t for t in data["tasks"] if t["task"] == "copy")
        assert copy["coincide"] == [["rnn-attention", "transformer"]]
        text = page.inner_text("#paths-charts")
        assert "rnn-attention = transformer: the same exact match at every length" in text
        page.click("#lang-zh")
        assert "rnn-attention = transformer：每个长度上的完全匹配率都相同" in page.inner_text("#paths-charts")


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
def test_small_samples_follow_one_rule_and_sample_sizes_show(browser, serve, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    raw = json.loads((RESULTS / "results.json").read_text())
    counts = {int(n): v["count"] for n, v in raw["tasks"]["dates"]["archs"]["rnn"]["by_length"].items()}
    small = [n for n in counts if counts[n] < MIN_PAIRS]
    server, _ = serve(str(RESULTS))
    for page in open_page(browser, server.url, tmp_path):
        assert page.locator("#paths-dates rect.paths-count").count() == len(counts)  # every length's pairs
        assert page.locator("#paths-dates rect.paths-count.small").count() == len(small)
        titles = page.eval_on_selector_all("#paths-dates g[data-arch='rnn'] .paths-marker title", "els => els.map(e => e.textContent)")
        assert len(titles) == len(counts) - len(small)
        assert all(re.search(r"length \d+: 0/\d+ right = 0.0% \(95% interval 0–\d+%\)", title) for title in titles)
        text = page.inner_text("#w-paths")
        assert f"{len(small)} length(s) with fewer than {MIN_PAIRS} test pairs left out ({sum(counts[n] for n in small)} pairs)" in text
        assert "10 test pairs per length" in text and "95% Wilson interval" in text
        legend = page.inner_text("#paths-dates + .paths-side .legend")
        assert all(f"{arch}: " in legend for arch in ARCHS) and legend.count("exact match on 60 test pairs") == 3
        page.click("#lang-zh")
        text = page.inner_text("#w-paths")
        assert f"{len(small)} 个测试样本少于 {MIN_PAIRS} 个的长度未画出" in text and "95% Wilson 区间" in text
        assert "每个长度 10 个测试样本" in text and "60 个测试样本上的完全匹配率" in text
        for english in ("test pairs", "left out", "longer than training", "source length", "exact match"):
            assert english not in text, english


def test_drawing_paths_results_imports_neither_torch_nor_training(tmp_path):
    """The explorer reads results.json through seqlab.seq2seq.paths' standard-library modules
    (results, chart, settings): serving section 14 loads no model code."""
    import subprocess
    import sys

    code = ("import sys\nfrom seqlab.explorer.runs import read_paths_results\n"
            "data = read_paths_results(sys.argv[1])\nprint(len(data['tasks']))\n"
            "print(sorted(m for m in sys.modules if m in ('torch', 'numpy', 'matplotlib') or m.startswith("
            "('seqlab.training', 'seqlab.seq2seq.paths.experiment', 'seqlab.seq2seq.task'))))")
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code, str(RESULTS)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:2] == ["2", "[]"]
