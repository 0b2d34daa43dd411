"""No Trace answer appears before it is asked for, in any view, for every Trace step: the terminal
(`seqlab learn show` and `next`), the JSON, the explorer's lesson (its API, figures included; the
page itself in tests/explorer/test_course_browser.py), the notebooks and the static site (its pages
in Chromium in tests/learn/test_site.py). Each check is shown to bite: once the question is answered,
or its answer asked for, the same view shows the answer where answer_leaks finds it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.learn.path import STEPS
from seqlab.learn.questions import QUESTION_BY_ID
from seqlab.learn.views import trace_question

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_leaks import leaks  # noqa: E402

TRACE_STEPS = [(s.id, trace_question(s.id)) for s in STEPS if trace_question(s.id)]
LANGS = ("en", "zh")


def _cli(capsys, *args) -> tuple[int, str]:
    code = main(["learn", *map(str, args)])
    return code, capsys.readouterr().out


def _svg_text(svg: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))


def _without_answers(value):
    """A view's data less what a click shows: the lesson questions' answers (behind "reveal the answer"),
    as blocks and in the list of questions."""
    if isinstance(value, dict):
        asked = value.get("type") == "question" or {"id", "kind", "question"} <= set(value)
        return {k: _without_answers(v) for k, v in value.items() if not (k == "answer" and asked)}
    if isinstance(value, list):
        return [_without_answers(v) for v in value]
    return value


def _figures_text(value) -> str:
    found = []
    if isinstance(value, dict):
        if value.get("type") == "figure" and "svg" in value:
            found.append(_svg_text(value["svg"]))
        found += [_figures_text(v) for v in value.values()]
    elif isinstance(value, list):
        found += [_figures_text(v) for v in value]
    return " ".join(f for f in found if f)


def test_every_trace_step_is_covered():
    assert {q for _, q in TRACE_STEPS} == {"trace_recurrence", "trace_vanishing", "trace_clipping", "trace_lstm_cell",
                                           "trace_gru_mix", "trace_attention_weights", "trace_causal_count",
                                           "trace_head_shapes", "trace_perplexity"}
    assert ("train_small", "trace_perplexity") in TRACE_STEPS          # a command step's question too


@pytest.mark.parametrize("step, asked", TRACE_STEPS)
def test_the_terminal_and_the_json_keep_the_answer_until_it_is_answered(capsys, tmp_path, step, asked):
    q = QUESTION_BY_ID[asked]
    ws = tmp_path / "ws"
    for lang in LANGS:
        code, out = _cli(capsys, "show", step, "--workspace", ws, "--lang", lang)
        assert code == 0 and leaks(out, q) == [], (step, lang)
        code, out = _cli(capsys, "show", step, "--workspace", ws, "--lang", lang, "--json")
        assert code == 0 and leaks(json.dumps(_without_answers(json.loads(out)), ensure_ascii=False), q) == [], (step, lang)
    # the same views give it once asked for (--show), and once the question is answered right
    code, out = _cli(capsys, "show", step, "--workspace", ws, "--show")
    assert leaks(out, q)
    answer = ", ".join(f"{v:.6g}" for v in q.answer())
    assert _cli(capsys, "answer", asked, answer, "--workspace", ws)[0] == 0
    code, out = _cli(capsys, "show", step, "--workspace", ws)
    assert "(it computes this step's answer" not in out                      # the widget is open now
    if asked != "trace_perplexity":       # train_small's lesson has no worked perplexity to give away
        assert leaks(out, q), step


def test_next_keeps_the_first_steps_answer(capsys, tmp_path):
    q = QUESTION_BY_ID["trace_recurrence"]
    code, out = _cli(capsys, "next", "--workspace", tmp_path / "ws")
    assert code == 0 and "trace_recurrence" in out and leaks(out, q) == []


def test_asking_for_the_solution_reveals_the_lesson_s_numbers(capsys, tmp_path):
    ws = tmp_path / "ws"
    q = QUESTION_BY_ID["trace_lstm_cell"]
    assert leaks(_cli(capsys, "show", "trace_lstm_cell", "--workspace", ws)[1], q) == []
    assert _cli(capsys, "answer", "trace_lstm_cell", "--show", "--workspace", ws)[0] == 0
    assert leaks(_cli(capsys, "show", "trace_lstm_cell", "--workspace", ws)[1], q)
    state = json.loads((ws / "progress.json").read_text())["steps"]["trace_lstm_cell"]
    assert state["state"] == "started" and state["revealed"] is True          # asked for, not passed


@pytest.mark.parametrize("step, asked", TRACE_STEPS)
def test_the_explorer_s_lesson_keeps_the_answer_until_it_is_answered(step, asked):
    from seqlab.explorer.course_api import lesson
    q = QUESTION_BY_ID[asked]
    for lang in LANGS:
        view = lesson({"step": step, "lang": lang}, None)
        shown = _without_answers(view)
        assert leaks(json.dumps(shown, ensure_ascii=False), q) == [], (step, lang)
        assert leaks(_figures_text(shown), q) == [], (step, lang)
        assert all(w["closed"] for w in view["below_task"])
    revealed = _without_answers(lesson({"step": step, "lang": "en", "revealed": True}, None))
    if asked != "trace_perplexity":       # train_small's lesson has no worked perplexity to give away
        assert leaks(json.dumps(revealed, ensure_ascii=False) + _figures_text(revealed), q), step


def _visible_by_step(notebook: dict) -> dict[int, str]:
    """Each step's Markdown in the notebook (by its number), less what <details> folds, with the text
    of the figures it shows."""
    attachments = {name: data["image/svg+xml"] for c in notebook["cells"] for name, data in c.get("attachments", {}).items()}
    steps: dict[int, str] = {}
    number = 0
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        heading = re.match(r"## (?:Step (\d+)|第 (\d+) 步)", source)
        if heading:
            number = int(heading.group(1) or heading.group(2))
        steps.setdefault(number, "")
        steps[number] += "\n" + source
    for number, text in steps.items():
        folded = re.sub(r"<details>.*?</details>", "", text, flags=re.S)
        figures = re.findall(r"\(attachment:([\w.-]+)\)", folded)
        steps[number] = folded + " ".join(_svg_text(attachments[f]) for f in figures)
    return steps


def test_the_notebooks_fold_every_trace_answer():
    from seqlab.learn.notebooks import part_notebook
    from seqlab.learn.path import PART_OF
    numbers = {s.id: k for k, s in enumerate(STEPS, 1)}
    for lang in LANGS:
        for part in {PART_OF[step].id for step, _ in TRACE_STEPS}:
            steps = _visible_by_step(part_notebook(part, lang, "https://example.org/seqlab.git"))
            for step, asked in TRACE_STEPS:
                if PART_OF[step].id == part:
                    assert leaks(steps[numbers[step]], QUESTION_BY_ID[asked]) == [], (step, lang)
    # it bites: unfolded, the first step's Markdown gives h_3
    nb = part_notebook("recurrence", "en", "https://example.org/seqlab.git")
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = cell["source"].replace("<details>", "").replace("</details>", "")
    assert leaks(_visible_by_step(nb)[1], QUESTION_BY_ID["trace_recurrence"])
