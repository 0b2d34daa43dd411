"""The explorer's course in headless Chromium, in English and 中文: it opens on the path with the
current step's lesson and its widget inside, a Trace question answered wrong shows the hint and
answered right marks the step (in the workspace's progress.json), an Implement step's failed check
shows its diagnosis with a link to the lesson's mistake, and nothing overlaps. Each stage leaves a
screenshot in the test's tmp_path (course-<lang>-<stage>.png)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (install Debian's chromium, see DEVELOPERS.md)"),
]
pytest.importorskip("playwright.sync_api", reason="Python playwright is not installed")

from seqlab.learn import lessons  # noqa: E402
from seqlab.learn.catalog import exercise  # noqa: E402
from seqlab.learn.path import STEPS  # noqa: E402
from seqlab.learn.questions import QUESTION_BY_ID  # noqa: E402
from seqlab.learn.workspace import read_progress  # noqa: E402
from tests.explorer.browsing import browser, open_page, settled  # noqa: E402,F401 (fixture)
from tests.explorer.conftest import serving  # noqa: E402
from tests.explorer.test_course_api import NO_TANH  # noqa: E402

# Every block container of the course, and which of its children must not overlap or stick out.
OVERLAPS = """(selectors) => {
  const found = [];
  const shown = (e) => e.getClientRects().length > 0 && !['absolute', 'fixed'].includes(getComputedStyle(e).position);
  for (const selector of selectors) for (const parent of document.querySelectorAll(selector)) {
    const p = parent.getBoundingClientRect();
    const kids = [...parent.children].filter(shown).map((e) => [e, e.getBoundingClientRect()]);
    const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + String(e.className).split(' ')[0] : '');
    kids.forEach(([a, r], i) => {
      if (r.left < p.left - 1 || r.right > p.right + 1) found.push(`${name(a)} sticks out of ${selector}: ${r.left}-${r.right} in ${p.left}-${p.right}`);
      kids.slice(i + 1).forEach(([b, s]) => {
        const x = Math.min(r.right, s.right) - Math.max(r.left, s.left), y = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
        if (x > 1 && y > 1) found.push(`${name(a)} overlaps ${name(b)} in ${selector}`);
      });
    });
  }
  return found;
}"""
CONTAINERS = [".course-cols", ".course-head", "#course-path", ".course-part", ".course-steps li", ".course-step",
              "#course-lesson", ".lesson-section", ".lesson-q", ".lesson-mistake", ".lesson-figure", "#course-task",
              ".lesson-revealed", "#course-below", ".course-card-form",
              ".course-answer-form", "#course-feedback", "#course-check", ".course-diagnosis",
              # a widget moved into the lesson's (narrower) column: nothing of it may stick out
              ".lesson-widget", ".lesson-widget > .widget", ".lesson-widget .cols", ".lesson-widget .cols > *",
              ".lesson-widget .panel", ".lesson-widget .controls", ".lesson-widget .heatmap"]


@pytest.fixture(scope="module")
def server():
    with serving() as server:
        yield server


@pytest.fixture
def ws(server, tmp_path):
    """A fresh workspace for each test (the server reads it at every request)."""
    path = tmp_path / "ws"
    path.mkdir()
    server.workspace = str(path)
    yield path
    server.workspace = None


def _no_overlaps(page):
    found = page.evaluate(OVERLAPS, CONTAINERS)
    assert found == [], found


def _shot(page, tmp_path, lang, stage, selector="#course"):
    page.locator(selector).screenshot(path=str(tmp_path / f"course-{lang}-{stage}.png"))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_course_in_the_page(browser, server, ws, tmp_path, lang):
    k = 0 if lang == "en" else 1
    first = STEPS[0]
    for page in open_page(browser, f"{server.url}?lang={lang}", tmp_path):
        settled(page)
        # --- it opens on the path, the current step's lesson open ------------------------------------
        assert page.locator(".course-step").count() == len(STEPS)
        assert page.locator(".course-step.open").get_attribute("id") == f"course-step-{first.id}"
        assert page.locator(".course-step.current").get_attribute("id") == f"course-step-{first.id}"
        assert page.locator("#course-progress").inner_text() == ("0 of 47 steps passed" if k == 0 else "已通过 0 / 47 步")
        lesson = lessons.lesson(first.id, lang)
        assert page.locator("#course-lesson .lesson-title").inner_text() == lesson.title
        assert page.locator("#course-lesson .lesson-section > h3").all_inner_texts() == [s.heading for s in lesson.sections]
        # the worked numbers, the figure that draws them and the widget that computes them wait for the answer
        assert page.locator("#course-lesson .lesson-figure").count() == 0
        assert page.locator("#course-lesson [data-reveal=hidden]").count() == 2
        anchor = lesson.widgets[0]
        assert page.locator(f"#course-below .lesson-widget #{anchor}").count() == 1          # below the question
        assert page.locator("#course-below").evaluate("(d) => d.open") is False           # closed
        assert "0.674" not in page.locator("#course").inner_text()
        assert page.locator(f"main > .widget-moved[data-anchor={anchor}]").count() == 1
        _no_overlaps(page)
        _shot(page, tmp_path, lang, "path", "body")
        # the predict questions keep their answers until asked
        q = page.locator(".lesson-q").first
        assert not q.locator(".lesson-answer").is_visible()
        q.locator(".lesson-reveal").click()
        assert lesson.questions[0].answer.split()[0].rstrip("。，,.") in q.locator(".lesson-answer").inner_text()
        # --- a Trace question: wrong, one hint, the worked solution on request, then right -------------------
        question = QUESTION_BY_ID[first.id]
        assert page.locator("#course-task .course-q").inner_text().replace("\n", " ").endswith(question.asks(lang))
        page.fill("#course-answer", "0.5")
        page.click("#course-submit")
        settled(page)
        assert page.locator("#course-feedback").get_attribute("data-result") == "wrong"
        hint = page.locator("#course-hint").inner_text()
        assert hint == ("Hint: " if k == 0 else "提示：") + question.hint[k]
        assert page.locator("#course-solution").count() == 0
        _no_overlaps(page)
        _shot(page, tmp_path, lang, "hint", "#course-task")
        page.click("#course-show-solution")
        settled(page)
        assert question.solution[k] in page.locator("#course-solution").inner_text()
        assert read_progress(ws)["steps"][first.id]["state"] == "started"
        page.fill("#course-answer", f"{question.answer()[0]:.4f}")
        page.click("#course-submit")
        settled(page)
        assert page.locator("#course-feedback").get_attribute("data-result") == "right"
        assert read_progress(ws)["steps"][first.id]["state"] == "passed"         # the CLI's progress
        assert page.locator(f"#course-step-{first.id}").get_attribute("data-state") == "passed"
        assert page.locator("#course-state").get_attribute("data-state") == "passed"
        assert page.locator("#course-progress").inner_text() == ("1 of 47 steps passed" if k == 0 else "已通过 1 / 47 步")
        _shot(page, tmp_path, lang, "right", "#course-task")
        # answered: the worked numbers, the figure and the widget, open, which still works
        assert page.locator("#course-lesson [data-reveal=shown]").count() == 2
        assert page.locator("#course-lesson .lesson-figure img").evaluate_all(
            "(imgs) => imgs.map((i) => i.complete && i.naturalWidth > 0)") == [True] * len(lesson.figures)
        assert page.locator("#course-below").evaluate("(d) => d.open") is True
        assert page.locator("#rec-table td").all_inner_texts()[3:6] == ["0.761594", "0.363399", "-0.674144"]
        page.click("#rec-back")
        assert page.locator("#rec-step-label").inner_text() == ("step 2 of 3" if k == 0 else "第 2 步，共 3 步")
        page.locator(f"#{anchor}").scroll_into_view_if_needed()
        _no_overlaps(page)
        _shot(page, tmp_path, lang, "widget")
        # --- an Implement step: a failed check's diagnosis with the link to the lesson's mistake ------------
        (ws / "scalar_recurrence.py").write_text(textwrap.dedent(NO_TANH), encoding="utf-8")
        page.click("#course-step-scalar_recurrence")
        page.wait_for_selector("#course-lesson[data-step=scalar_recurrence]")
        assert page.locator(f"#course-lesson .lesson-widget #{anchor}").count() == 1      # the same widget, in the lesson
        assert page.locator("#course-check-result").count() == 0                          # never checked
        page.click("#course-check-run")
        page.wait_for_selector("#course-diagnosis", timeout=30_000)
        settled(page)
        titles = [t for m in exercise("scalar_recurrence").mistakes if m.id == "no_tanh"
                  for t in (m.title, getattr(m, "title_zh", "")) if t]
        # the diagnosis, in the page's language where the catalogue has it
        diagnosis = page.locator("#course-diagnosis").inner_text()
        assert any(t.lower() in diagnosis.lower() for t in titles), diagnosis     # as the lesson names it
        record = next(m for m in exercise("scalar_recurrence").mistakes if m.id == "no_tanh")
        assert ((k and getattr(record, "explanation_zh", "")) or record.explanation) in diagnosis
        assert page.locator("#course-task > p.note").first.inner_text().count("--workspace") == 1
        link = page.locator("#course-read-link")
        assert link.get_attribute("href") == "#step/scalar_recurrence/mistake-no_tanh"
        assert page.locator("#course-check").get_attribute("data-passed") == "0"
        assert page.locator("#course-step-scalar_recurrence").get_attribute("data-state") == "started"
        assert read_progress(ws)["steps"]["scalar_recurrence"]["check"]["diagnosis"]["mistake"] == "no_tanh"
        _no_overlaps(page)
        _shot(page, tmp_path, lang, "diagnosis", "#course-task")
        link.click()
        page.wait_for_timeout(200)
        box = page.locator("#mistake-no_tanh").bounding_box()
        header = page.locator("header.top").bounding_box()
        assert box is not None and header["height"] <= box["y"] < 900, box     # scrolled to, below the header
        page.screenshot(path=str(tmp_path / f"course-{lang}-mistake.png"))       # what the reader sees
        if lang == "en":                      # a wider widget in a lesson: the attention step's
            page.click("#course-step-trace_attention_weights")
            page.wait_for_selector("#course-lesson[data-step=trace_attention_weights]")
            settled(page)
            assert page.locator("#course-below .lesson-widget #w-attention").count() == 1
            assert page.locator("#w-attention").is_hidden()                # closed until the weights are answered
            page.locator("#course-below > summary").click()                # the student opens it
            assert page.locator("#att-weights td").all_inner_texts() == ["0.669762", "0.330238"]
            _no_overlaps(page)
            page.locator("#w-attention").screenshot(path=str(tmp_path / "course-en-attention-widget.png"))
            # a language switch brings the lesson in 中文
            page.click("#lang-zh")
            settled(page)
            assert page.locator(".course-step.open .course-name").inner_text() == "注意力权重"
            assert page.locator("#course-task h3").inner_text() == "你的任务"
        assert page.problems == []


def test_the_widget_page_stays_reachable(browser, server, ws, tmp_path):
    for page in open_page(browser, f"{server.url}?view=widgets#w-attention", tmp_path):
        assert page.locator("#course").is_hidden()
        assert page.locator("main > #w-recurrence").count() == 1 and page.locator(".widget-moved").count() == 0
        assert page.locator("#att-weights td").all_inner_texts() == ["0.669762", "0.330238"]
        assert page.locator("a[data-i18n='nav.course']").get_attribute("href") == "/"
        assert page.problems == []


def test_no_trace_answer_is_on_the_page_before_it_is_asked_for(browser, server, ws, tmp_path):
    """Every Trace step, in both languages: the page's text (what a reader sees: folded and hidden
    parts are not in it) holds no answer; asking for the solution puts it there."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learn"))
    from answer_leaks import leaks
    from seqlab.learn.views import trace_question
    trace_steps = [(s.id, trace_question(s.id)) for s in STEPS if trace_question(s.id)]
    assert len(trace_steps) == 9
    for page in open_page(browser, f"{server.url}?lang=en", tmp_path):
        settled(page)
        for lang in ("en", "zh"):
            if lang == "zh":
                page.click("#lang-zh")
                settled(page)
            for step, asked in trace_steps:
                page.evaluate("(id) => { location.hash = '#step/' + id; }", step)
                page.wait_for_selector(f"#course-lesson[data-step={step}]")
                settled(page)
                assert leaks(page.locator("#course-lesson").inner_text(), QUESTION_BY_ID[asked]) == [], (step, lang)
        # it bites: the solution asked for, the worked numbers and the widget are on the page
        page.click("#course-step-trace_lstm_cell")
        page.wait_for_selector("#course-lesson[data-step=trace_lstm_cell]")
        page.fill("#course-answer", "1, 1")
        page.click("#course-submit")
        settled(page)
        page.click("#course-show-solution")
        settled(page)
        page.wait_for_selector("#course-lesson [data-reveal=shown]")
        assert leaks(page.locator("#course-lesson").inner_text(), QUESTION_BY_ID["trace_lstm_cell"])
        assert read_progress(ws)["steps"]["trace_lstm_cell"]["revealed"] is True
        assert page.problems == []


def test_a_card_is_written_then_shown_then_marked(browser, server, ws, tmp_path):
    for page in open_page(browser, f"{server.url}?lang=en#step/explain_order", tmp_path):
        page.wait_for_selector("#course-lesson[data-step=explain_order]")
        settled(page)
        assert page.locator("#course-card-answer").count() == 0            # nothing shown before an answer
        page.click("#course-card-submit")                                   # an empty answer: refused
        settled(page)
        assert page.locator("#course-card-answer").count() == 0 and "Write your answer first" in page.locator("#course-task").inner_text()
        mine = "the state is updated in order, so reordered inputs leave another state"
        page.fill("#course-card-written", mine)
        page.click("#course-card-submit")
        settled(page)
        assert page.locator("#course-card-answer").is_visible() and mine in page.locator("#course-card-yours").inner_text()
        assert read_progress(ws)["steps"]["explain_order"]["state"] == "started"     # seen, not passed
        _no_overlaps(page)
        _shot(page, tmp_path, "en", "card", "#course-task")
        page.click("#course-card-mark-same")
        settled(page)
        assert page.locator("#course-card-marked").inner_text().startswith("✓")
        assert read_progress(ws)["steps"]["explain_order"]["state"] == "passed"
        assert page.locator("#course-step-explain_order").get_attribute("data-state") == "passed"
        assert page.problems == []


def test_the_home_page_draws_the_course_before_any_widget(browser, server, ws, tmp_path):
    """At every frame from the page's start: no section of the widget page is on screen before the
    course's lesson is (benchmarks/learn.py --what first-paint times it; the script is the same)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("learn_benchmark", Path(__file__).resolve().parents[2] / "benchmarks" / "learn.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for k in range(2):                        # the server's first answers, then warm ones
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.add_init_script(bench.FIRST_PAINT)
        page.goto(server.url)
        page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        paint = page.evaluate("() => window.__paint")
        assert paint["course"] is not None and paint["widgetFirst"] is None, paint
        assert page.locator("body").get_attribute("data-view") == "course"
        assert page.locator("main > #w-attention").is_visible()            # the widget page follows, below
        context.close()
