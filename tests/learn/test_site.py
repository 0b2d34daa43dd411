"""`seqlab learn site`: the course as static HTML in both languages, rendered by the explorer's lesson
renderer (lesson.js), opened in Chromium: a lesson with its figure, a question's answer behind a click,
a mistake at LANG/STEP.html#mistake-ID, no link to a local server; diagnoses link to it with
--lesson-url. Screenshots (site-LANG-*.png) are left in the test's tmp_path."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.learn.path import STEPS
from seqlab.learn.questions import QUESTION_BY_ID
from seqlab.learn.views import trace_question

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_leaks import leaks  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
NO_TANH = '''
import numpy as np


def scalar_recurrence(a, xs, h0=0.0):
    h, out = h0, []
    for x in xs:
        h = a * h + x
        out.append(h)
    return np.array(out, dtype=float)
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    assert main(["learn", "site", "--out", str(out)]) == 0
    return out


def _data(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="lesson-data">(.*?)</script>', text, re.S)
                      .group(1).replace("<\\/", "</"))


def test_every_step_in_both_languages_with_its_figures_and_no_local_links(site):
    for lang in ("en", "zh"):
        assert (site / lang / "index.html").is_file()
        for step in STEPS:
            assert (site / lang / f"{step.id}.html").is_file(), (lang, step.id)
    for path in site.rglob("*"):
        if path.is_file():
            assert "127.0.0.1" not in path.read_text(encoding="utf-8"), path
    data = _data(site / "zh" / "rnn_step.html")
    assert data["view"]["lang"] == "zh" and data["words"]["task"] == "你的任务"
    figures = [b for s in data["view"]["sections"] for b in s["blocks"] if b["type"] == "figure"]
    assert figures and all((site / "zh" / f["src"]).resolve().is_file() and "svg" not in f for f in figures)
    assert (site / "figures" / f"{figures[0]['name']}.zh.svg").read_text(encoding="utf-8").lstrip().startswith("<svg")
    # a mistake's anchor, for a diagnosis to link to
    anchors = [b["anchor"] for s in _data(site / "en" / "scalar_recurrence.html")["view"]["sections"]
               for b in s["blocks"] if b["type"] == "mistake"]
    assert "mistake-no_tanh" in anchors
    # an existing folder of something else is not replaced
    other = site.parent / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert main(["learn", "site", "--out", str(other)]) == 1 and (other / "notes.txt").read_text() == "mine"
    assert main(["learn", "site"]) == 2


def test_a_trace_step_s_page_holds_its_answer_only_behind_a_click(site):
    for step in STEPS:
        asked = trace_question(step.id)
        if asked is None:
            continue
        view = _data(site / "en" / f"{step.id}.html")["view"]
        reveals = [b for s in view["sections"] for b in s["blocks"] if b["type"] == "reveal"]
        assert all(b["shown"] is False for b in reveals)                  # folded, for a click
        assert all(w["closed"] for w in view["below_task"])


def test_a_diagnosis_links_to_the_site_with_lesson_url(tmp_path, capsys):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "scalar_recurrence.py").write_text(textwrap.dedent(NO_TANH), encoding="utf-8")
    url = "https://course.example.org/seqlab"
    assert main(["learn", "check", "scalar_recurrence", "--workspace", str(ws), "--lesson-url", url + "/"]) == 1
    out = capsys.readouterr().out
    assert f"{url}/en/scalar_recurrence.html#mistake-no_tanh  (on the course's site)" in out and "127.0.0.1" not in out
    assert main(["learn", "check", "scalar_recurrence", "--workspace", str(ws), "--lesson-url", url, "--json",
                 "--lang", "zh"]) == 1
    assert json.loads(capsys.readouterr().out)["read_url"] == f"{url}/zh/scalar_recurrence.html#mistake-no_tanh"


@pytest.fixture(scope="module")
def browser():
    pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM),
                                     args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
        yield chromium
        chromium.close()


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.problems = []
    page.on("console", lambda m: page.problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: page.problems.append(f"pageerror: {e}"))
    page.goto(url)
    page.wait_for_selector("#course-task")
    return page


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_site_in_chromium_shows_a_lesson_its_figure_and_an_answer_after_a_click(browser, site, tmp_path, lang):
    page = _open(browser, (site / lang / "rnn_step.html").as_uri())
    data = _data(site / lang / "rnn_step.html")["view"]
    assert page.locator(".lesson-title").inner_text() == data["title"]
    assert page.locator(".lesson-section > h3").all_inner_texts() == [s["heading"] for s in data["sections"]]
    images = page.locator(".lesson-figure img")
    assert images.count() >= 1
    assert images.evaluate_all("(imgs) => imgs.map((i) => i.complete && i.naturalWidth > 0)") == [True] * images.count()
    question = page.locator(".lesson-q").first
    answer = question.locator(".lesson-answer")
    assert not answer.is_visible()
    first = next(b for s in data["sections"] for b in s["blocks"] if b["type"] == "question")
    page.locator(".lesson-figure").first.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / f"site-{lang}-figure.png"))
    question.locator(".lesson-reveal").click()
    assert answer.is_visible() and first["answer"][0]["text"][:20] in " ".join(answer.inner_text().split())
    question.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / f"site-{lang}-answer.png"))
    # the language switch goes to the same step
    assert page.locator("#site-lang").get_attribute("href") == f"../{'zh' if lang == 'en' else 'en'}/rnn_step.html"
    # a mistake's anchor: the page lands on it
    page.goto((site / lang / "scalar_recurrence.html").as_uri() + "#mistake-no_tanh")
    page.wait_for_selector("#mistake-no_tanh")
    box = page.locator("#mistake-no_tanh").bounding_box()
    assert box is not None and -1 <= box["y"] < 900, box
    page.screenshot(path=str(tmp_path / f"site-{lang}-mistake.png"))
    # every Trace step: no answer on the page until a click asks for it
    for step in STEPS:
        if trace_question(step.id):
            page.goto((site / lang / f"{step.id}.html").as_uri())
            page.wait_for_selector("#course-task")
            assert leaks(page.locator("#course-lesson").inner_text(), QUESTION_BY_ID[trace_question(step.id)]) == [], step.id
    q = QUESTION_BY_ID["trace_recurrence"]
    page.goto((site / lang / "trace_recurrence.html").as_uri())
    page.wait_for_selector("#course-task")
    assert leaks(page.locator("#course-lesson").inner_text(), q) == []
    page.click("#site-solution-show")
    assert leaks(page.locator("#site-solution").inner_text(), q)
    page.locator(".lesson-reveal-box .lesson-reveal").last.click()
    assert leaks(page.locator("#sec-worked").inner_text(), q)
    page.locator("#sec-worked").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / f"site-{lang}-worked.png"))
    # a card: the worked answer only after something is written
    page.goto((site / lang / "explain_order.html").as_uri())
    page.wait_for_selector("#course-task")
    assert page.locator("#site-card-answer-show").is_disabled()
    page.fill("#site-card-written", "the order changes the state, so the memory differs")
    page.click("#site-card-answer-show")
    assert page.locator("#site-card-answer").is_visible()
    assert page.problems == []
    page.close()
