"""`seqlab learn show` / `learn next`: the lesson as text and as JSON, the step's task in full, the
catalogued mistakes from the exercise's records, and the path's parts."""

from __future__ import annotations

import json

import pytest

from seqlab.cli import main
from seqlab.learn import lessons, views
from seqlab.learn.catalog import exercise
from seqlab.learn.path import PARTS, STEP_BY_ID, STEPS
from seqlab.learn.questions import CARD_BY_ID, QUESTION_BY_ID


def _cli(capsys, *args) -> tuple[int, str]:
    code = main(["learn", *map(str, args)])
    return code, capsys.readouterr().out


def _one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def lesson_dir(tmp_path, monkeypatch):
    """A lessons folder of our own: the written lessons plus those a test writes."""
    import shutil
    shutil.copytree(lessons.LESSON_DIR, tmp_path, dirs_exist_ok=True)
    monkeypatch.setattr(lessons, "LESSON_DIR", tmp_path)
    lessons._parse_cached.cache_clear()
    yield tmp_path
    lessons._parse_cached.cache_clear()


IMPLEMENT_LESSON = """# Implement the recurrence

## The idea {#idea}
Write the **loop** over `xs`; see [the paper](https://example.org/elman).

## The mathematics {#maths}
```
h_t = tanh(a · h_{t-1} + x_t)      h_t: ()
```

## A worked calculation {#worked}
| t | h_t |
| --- | --- |
| 1 | 0.761594 |

[[figure unrolled_scalar_recurrence | Three steps.]]

## Predict before revealing {#predict}
:::question first kind=predict
What is h_1 for x_1 = 1?
:::answer
tanh(1), the secret answer.
:::

## Common mistakes {#mistakes}
[[mistakes]]

## Hints {#hints}
1. The idea.
2. The shapes.
3. The key line.

## Further reading {#reading}
- Elman (1990).
"""


def test_show_prints_the_lesson_without_answers_then_the_trace_question_in_full(capsys):
    code, out = _cli(capsys, "show", "trace_recurrence")
    assert code == 0
    ls = lessons.lesson("trace_recurrence", "en")
    flat = _one_line(out)
    assert ls.title + "\n" + "=" * len(ls.title) in out
    for s in ls.sections:
        assert f"\n{s.heading}\n{'-' * len(s.heading)}\n" in out
    assert "    h_t = tanh(a · h_{t-1} + x_t)" in out                    # the maths, as written
    table = "0.5 · 0.761594 + 0 = 0.380797 | tanh(0.380797) = 0.363399"     # the worked table, in columns
    figure = ls.figures[0]
    assert table not in flat and _one_line(f"[Figure: {figure.caption}]") not in flat    # they give h_3 away
    assert views.label("reveal_hidden", "en") in flat
    assert "http://127.0.0.1:8000/#w-recurrence" in flat
    assert flat.index("http://127.0.0.1:8000/#w-recurrence") > flat.index("seqlab learn answer trace_recurrence VALUE")
    for q in ls.questions:                                          # asked, never answered
        assert _one_line(q.text.replace("`", "")) in flat
        assert _one_line(q.answer.replace("`", "")) not in flat
    assert "Only the sign" not in out
    q = QUESTION_BY_ID["trace_recurrence"]
    assert _one_line(f"{q.title[0]}: {q.asks('en')}") in flat            # the step's own question in full
    assert "seqlab learn answer trace_recurrence VALUE" in out and q.solution[0] not in flat
    # every line of prose fits 88 columns (the code keeps its own lines)
    assert all(views.width_of(line) <= 88 for line in out.splitlines() if not line.startswith("    ")
               and "http" not in line and "|" not in line)

    code, shown = _cli(capsys, "show", "trace_recurrence", "--show")
    flat = _one_line(shown)
    assert "Only the sign" in shown and _one_line(q.solution[0]) in flat
    assert all(_one_line(q.answer.replace("`", "")) in flat for q in ls.questions)
    assert table in flat and _one_line(f"[Figure: {figure.caption}]") in flat
    assert "http://127.0.0.1:8000/#step/trace_recurrence" in flat


def test_show_in_chinese_breaks_lines_between_characters_and_joins_them_without_spaces(capsys):
    code, out = _cli(capsys, "show", "trace_recurrence", "--lang", "zh")
    ls = lessons.lesson("trace_recurrence", "zh")
    assert code == 0 and ls.title in out and "第 1 步，共 47 步" in out
    assert "你的任务" in out and QUESTION_BY_ID["trace_recurrence"].text[1] in out.replace("\n", "")
    prose = [line for line in out.splitlines() if line and not line.startswith("    ") and "http" not in line]
    assert max(views.width_of(line) for line in prose) <= 88
    assert max(views.width_of(line) for line in prose) > 80             # 中文 lines are filled, not cut short
    # a paragraph's lines are joined without a space where 中文 meets the break
    first = ls.section("idea").blocks[0].text
    assert "前馈网络" in first and " " not in first.split("**")[0]


def test_json_is_the_stable_structure_and_answers_only_with_show(capsys):
    code, out = _cli(capsys, "show", "trace_recurrence", "--json")
    view = json.loads(out)
    assert code == 0
    assert {"name", "title", "kind", "sections", "questions", "figures", "reading"} <= set(view)
    ls = lessons.lesson("trace_recurrence", "en")
    assert (view["name"], view["title"], view["kind"]) == ("trace_recurrence", ls.title, "trace")
    assert [s["heading"] for s in view["sections"]] == [s.heading for s in ls.sections]
    assert all(isinstance(s["text"], str) and s["text"] for s in view["sections"])
    assert [q["id"] for q in view["questions"]] == [q.name for q in ls.questions] + ["trace_recurrence"]
    assert all("answer" not in q for q in view["questions"])
    assert view["questions"][-1]["question"] == QUESTION_BY_ID["trace_recurrence"].asks("en")
    assert view["figures"] == []                # the one figure draws h_3: it waits for the answer
    assert view["reading"] == [views.plain(r) for r in ls.reading]
    assert "solution" not in view["task"] and "Only the sign" not in out
    code, shown = _cli(capsys, "show", "trace_recurrence", "--json", "--show")
    assert json.loads(shown)["figures"] == [{"name": f.name, "caption": f.caption} for f in ls.figures]

    code, out = _cli(capsys, "show", "trace_recurrence", "--json", "--show")
    view = json.loads(out)
    by_id = {q["id"]: q for q in view["questions"]}
    assert by_id["reversed-inputs"]["answer"].startswith("Only the sign")
    assert by_id["trace_recurrence"]["answer"] == QUESTION_BY_ID["trace_recurrence"].solution[0]
    assert view["task"]["answer"] == QUESTION_BY_ID["trace_recurrence"].answer()


def test_the_catalogued_mistakes_come_from_the_exercise_records(capsys, lesson_dir):
    for lang in lessons.LANGS:
        (lesson_dir / "scalar_recurrence" / f"lesson.{lang}.md").write_text(IMPLEMENT_LESSON, encoding="utf-8")
    records = exercise("scalar_recurrence").mistakes
    code, out = _cli(capsys, "show", "scalar_recurrence")
    flat = _one_line(out)
    assert code == 0 and len(records) >= 2
    for m in records:
        why = getattr(m, "why", ("", ""))[0] or m.explanation
        assert f"[mistake-{m.id}]" in out and _one_line(why) in flat
        assert m.title[1:] in flat
    # inline Markdown is plain text in the terminal, the hints wait for `learn hint`, the answer for --show
    assert "Write the loop over xs; see the paper (https://example.org/elman)." in flat
    assert "The key line" not in out and "secret answer" not in out
    # the task: the stub's contract and the commands
    ex = exercise("scalar_recurrence")
    assert f"Implement {ex.signature}" in out and "seqlab learn check scalar_recurrence" in out
    assert ex.doc.strip().splitlines()[0].strip() in out
    view = json.loads(_cli(capsys, "show", "scalar_recurrence", "--json")[1])
    assert [m["id"] for m in view["mistakes"]] == [m.id for m in records]
    assert all(m["catalogued"] and m["anchor"] == f"mistake-{m['id']}" for m in view["mistakes"])
    assert view["task"]["type"] == "implement" and view["task"]["signature"] == ex.signature


def test_a_step_whose_lesson_is_not_written_shows_its_read_line_and_task(capsys, lesson_dir):
    for lang in lessons.LANGS:
        for name in ("trace_clipping", "rnn_step", "stacked"):
            (lesson_dir / name / f"lesson.{lang}.md").unlink(missing_ok=True)
    step = STEP_BY_ID["trace_clipping"]
    for lang, k in (("en", 0), ("zh", 1)):
        code, out = _cli(capsys, "show", "trace_clipping", "--lang", lang)
        assert code == 0
        assert step.title[k] in out and _one_line(step.read[k]) in _one_line(out)
        flat = _one_line(out) if lang == "en" else out.replace("\n  ", "").replace("\n", "")
        assert QUESTION_BY_ID["trace_clipping"].text[k] in flat
        assert f"#{step.look}" in out
    # an Implement step without a lesson still lists its catalogued mistakes, where diagnoses link
    view = views.step_view("rnn_step", "en")
    assert [m["anchor"] for m in view["mistakes"]] == [f"mistake-{m.id}" for m in exercise("rnn_step").mistakes]
    command = STEP_BY_ID["stacked"]
    code, out = _cli(capsys, "show", "stacked")
    assert command.command in out and CARD_BY_ID[command.then].question[0] in _one_line(out)


def test_next_opens_the_current_step_with_its_trace_question(tmp_path, capsys):
    ws = tmp_path / "ws"
    code, out = _cli(capsys, "next", "--workspace", ws)
    assert code == 0 and out.startswith("Step 1 of 47")
    assert _one_line(QUESTION_BY_ID["trace_recurrence"].text[0]) in _one_line(out)
    assert _cli(capsys, "answer", "trace_recurrence", "-0.674144", "--workspace", ws)[0] == 0
    code, out = _cli(capsys, "next", "--workspace", ws, "--json")
    assert json.loads(out)["name"] == STEPS[1].id
    assert _cli(capsys, "show", "no_such_step")[0] == 2


def test_the_parts_cover_the_path_in_order():
    assert [p.id for p in PARTS] == ["recurrence", "gated", "attention", "transformer", "training", "seq2seq"]
    assert [s for p in PARTS for s in p.steps] == list(STEPS)
    assert all(p.steps and p.title[0] and p.title[1] for p in PARTS)
    view = views.step_view("trace_lstm_cell", "zh")
    assert view["part"] == {"id": "gated", "title": PARTS[1].title[1]}


WRITTEN = [s.id for s in STEPS if lessons.has_lesson(s.id, "en") and lessons.has_lesson(s.id, "zh")]


def test_every_step_has_a_lesson_in_both_languages():
    without = [s.id for s in STEPS if s.id not in WRITTEN]
    assert not without, f"steps without a lesson in both languages: {without}"
    assert len(WRITTEN) == len(STEPS) == 47


@pytest.mark.parametrize("step", WRITTEN)
def test_every_written_lesson_renders_everywhere(step):
    from seqlab.explorer.server import STATIC_DIR
    from seqlab.learn.notebooks import _Cells, _markdown
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    for lang in lessons.LANGS:
        view = views.step_view(step, lang, show=True, svg=True)
        assert view["lesson"] and view["lesson_lang"] == lang
        anchors = [m["anchor"] for m in view["mistakes"]]
        assert len(anchors) == len(set(anchors)), anchors                 # a diagnosis links to exactly one
        for anchor in view["widgets"]:                                    # the explorer has every widget
            assert f'id="{anchor}"' in page, anchor
        assert views.text(view)                                          # the terminal
        cells = _Cells()                                                 # the notebook
        for section in view["sections"]:
            _markdown(section["blocks"], cells, lang)
        cells.flush()
        assert cells.cells
