"""The explorer's course (POST /api/learn/path, lesson, answer, card, check): the same progress as
`seqlab learn`, the lesson without the task's answer, a check with its diagnosis recorded."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from seqlab.learn import lessons
from seqlab.learn.catalog import exercise
from seqlab.learn.path import PARTS, STEPS
from seqlab.learn.questions import CARD_BY_ID, QUESTION_BY_ID
from seqlab.learn.workspace import read_progress, set_state
from tests.explorer.conftest import client_for, serving

# the one-number recurrence written here without its tanh
NO_TANH = """
import numpy as np

def scalar_recurrence(a, xs, h0=0.0):
    out, h = [], h0
    for x in xs:
        h = a * h + x
        out.append(h)
    return np.array(out)
"""
RIGHT = """
import math
import numpy as np

def scalar_recurrence(a, xs, h0=0.0):
    out, h = [], float(h0)
    for x in xs:
        h = math.tanh(a * h + float(x))
        out.append(h)
    return np.array(out)
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    ws = tmp_path_factory.mktemp("course") / "ws"
    ws.mkdir()
    with serving() as server:
        server.workspace = str(ws)
        yield client_for(server), ws


def _steps(client) -> dict:
    return {s["id"]: s for s in client.ok("learn/path")["steps"]}


def test_the_path_has_every_step_its_part_and_the_workspaces_state(course):
    client, ws = course
    path = client.ok("learn/path")
    assert [s["id"] for s in path["steps"]] == [s.id for s in STEPS]
    assert [p["id"] for p in path["parts"]] == [p.id for p in PARTS]
    assert {s["id"]: s["part"] for s in path["steps"]} == {s.id: p.id for p in PARTS for s in p.steps}
    assert path["workspace"] == str(ws)
    set_state(ws, "explain_order", "started")
    steps = _steps(client)
    assert steps["explain_order"]["state"] == "started" and steps["scalar_recurrence"]["state"] in ("todo", "started",
                                                                                                     "passed")
    assert steps["trace_recurrence"]["lesson"] is lessons.has_lesson("trace_recurrence")


def test_the_lesson_keeps_the_tasks_answer_back_and_draws_its_figures(course):
    client, _ = course
    view = client.ok("learn/lesson", {"step": "trace_recurrence", "lang": "zh"})
    ls = lessons.lesson("trace_recurrence", "zh")
    assert view["title"] == ls.title and view["lang"] == "zh"
    assert [s["id"] for s in view["sections"]] == [s.id for s in ls.sections]
    q = QUESTION_BY_ID["trace_recurrence"]
    assert view["task"]["question"] == q.asks("zh") and "solution" not in view["task"] and "answer" not in view["task"]
    assert q.solution[1] not in json.dumps(view, ensure_ascii=False)
    assert view["revealed"] is False and view["below_task"] == [{"type": "widget", "anchor": "w-recurrence", "closed": True}]
    assert [b for s in view["sections"] for b in s["blocks"] if b["type"] == "reveal"] == [{"type": "reveal", "shown": False}] * 2
    view = client.ok("learn/lesson", {"step": "trace_recurrence", "lang": "zh", "revealed": True})   # asked for
    blocks = [x for s in view["sections"] for b in s["blocks"] for x in ([b, *b["blocks"]] if b["type"] == "reveal" else [b])]
    assert view["below_task"][0]["closed"] is False
    questions = [b for b in blocks if b["type"] == "question"]
    assert [b["id"] for b in questions] == [b.name for b in ls.questions] and all(b["answer"] for b in questions)
    figures = [b for b in blocks if b["type"] == "figure"]
    assert [f["name"] for f in figures] == [f.name for f in ls.figures]
    for f in figures:
        assert ET.fromstring(f["svg"]).tag.endswith("svg") and "<script" not in f["svg"]
    assert [b["anchor"] for b in view["below_task"]] == ls.widgets          # below the question, not in the lesson
    assert not [b for b in blocks if b["type"] == "widget"]


def test_a_trace_answer_gets_one_hint_then_passes_the_step_in_the_cli_progress(course):
    client, ws = course
    q = QUESTION_BY_ID["trace_clipping"]
    wrong = client.ok("learn/answer", {"question": "trace_clipping", "value": "0.5"})
    assert wrong["correct"] is False and wrong["hint"] == list(q.hint) and "solution" not in wrong
    assert read_progress(ws)["steps"]["trace_clipping"]["state"] == "started"
    known = client.ok("learn/answer", {"question": "trace_clipping", "value": "2.5"})       # norm / threshold
    assert known["wrong"]["title"][0].startswith("the ratio upside down") and "hint" not in known
    short = client.ok("learn/answer", {"question": "trace_recurrence", "value": "-0.67"})
    assert short["short"] and short["what"][0] == "right so far: give 3 significant digits" and "hint" not in short
    assert "revealed" not in read_progress(ws)["steps"]["trace_clipping"]
    assert client.ok("learn/answer", {"question": "trace_clipping", "solution": True})["solution"] == list(q.solution)
    assert read_progress(ws)["steps"]["trace_clipping"]["revealed"] is True       # asked for: the lesson shows it
    assert client.ok("learn/lesson", {"step": "trace_clipping"})["revealed"] is True
    right = client.ok("learn/answer", {"question": "trace_clipping", "value": str(q.answer()[0])})
    assert right == {"question": "trace_clipping", "correct": True, "what": ["", ""], "short": False, "recorded": True}
    assert read_progress(ws)["steps"]["trace_clipping"]["state"] == "passed"
    assert _steps(client)["trace_clipping"]["state"] == "passed"
    status, body = client.post("learn/answer", {"question": "trace_clipping", "value": "four"})
    assert status == 400 and body["code"] == "learn_not_numbers"


def test_a_card_shows_its_answer_only_after_one_is_written_and_passes_when_marked_the_same(course):
    client, ws = course
    for payload in ({"card": "explain_scale"}, {"card": "explain_scale", "written": "..."}):
        status, body = client.post("learn/card", payload)
        assert status == 400 and body["code"] == "learn_write_first" and "answer" not in body
    mine = "large dot products saturate the softmax, so divide by sqrt(d_k)"
    out = client.ok("learn/card", {"card": "explain_scale", "written": mine})
    assert out["answer"] == list(CARD_BY_ID["explain_scale"].answer) and out["recorded"]
    assert _steps(client)["explain_scale"]["state"] == "started"                   # seen, not passed
    assert read_progress(ws)["steps"]["explain_scale"]["written"] == mine
    assert client.ok("learn/card", {"card": "explain_scale", "written": mine, "mark": "missed"})["state"] == "started"
    assert _steps(client)["explain_scale"]["state"] == "started"
    assert client.ok("learn/card", {"card": "explain_scale", "written": mine, "mark": "same"})["state"] == "passed"
    assert _steps(client)["explain_scale"]["state"] == "passed"
    status, body = client.post("learn/card", {"card": "explain_scale", "written": mine, "mark": "maybe"})
    assert status == 400 and body["code"] == "learn_card_mark"


def test_a_check_runs_the_students_file_and_its_diagnosis_is_the_latest_check(course):
    client, ws = course
    status, body = client.post("learn/check", {"step": "scalar_recurrence"})
    assert status == 400 and body["code"] == "learn_no_file" and "seqlab learn start scalar_recurrence" in body["error"]
    (ws / "scalar_recurrence.py").write_text(textwrap.dedent(NO_TANH), encoding="utf-8")
    out = client.ok("learn/check", {"step": "scalar_recurrence"})
    latest = out["latest"]
    assert latest["passed"] is False and out["state"] == "started"
    assert any(not c["passed"] for c in latest["checks"])
    assert latest["diagnosis"]["mistake"] == "no_tanh"
    # the checks as `seqlab learn check` lists them: the sentences failed with the values, one row not quoting them
    grouped = [c["name"] for c in latest["checks"] if not c["passed"] and c.get("cause") == "values"]
    assert grouped and [name for _, name, message in latest["rows"]["en"] if message.startswith("the values on")] == \
        [", ".join(grouped)]
    sentences = [spec.sentence for spec in exercise("scalar_recurrence").spec if spec.id in grouped]
    assert not any(sentence in message for rows in latest["rows"].values() for _, _, message in rows for sentence in sentences)
    assert [row[0] for row in latest["rows"]["zh"]] == [row[0] for row in latest["rows"]["en"]]
    assert latest["rows"]["zh"][0][1] == "能运行" and latest["rows"]["en"][0][1] == "runs"   # the names in the language
    view = client.ok("learn/lesson", {"step": "scalar_recurrence"})
    assert view["latest"] == latest and view["present"]
    # the diagnosis's mistake is an anchor of the step's lesson (shown, or behind its "More mistakes" fold)
    blocks = [b for s in view["sections"] for f in s["blocks"] for b in (f["blocks"] if f["type"] == "fold" else [f])]
    anchors = [b["anchor"] for b in blocks if b["type"] == "mistake"]
    assert "mistake-no_tanh" in anchors
    assert {f"mistake-{m.id}" for m in exercise("scalar_recurrence").mistakes} <= set(anchors)
    (ws / "scalar_recurrence.py").write_text(textwrap.dedent(RIGHT), encoding="utf-8")
    out = client.ok("learn/check", {"step": "scalar_recurrence"})
    assert out["latest"]["passed"] and out["latest"]["diagnosis"] is None and out["state"] == "passed"
    assert read_progress(ws)["steps"]["scalar_recurrence"]["check"]["passed"] is True


def test_bad_requests_are_named(course):
    client, _ = course
    for name, payload, words in [
        ("learn/lesson", {"step": "no_such_step"}, "no step 'no_such_step'"),
        ("learn/lesson", {"step": "trace_recurrence", "lang": "fr"}, "lang must be one of en, zh"),
        ("learn/answer", {"question": "rnn_step", "value": "1"}, "no Trace question 'rnn_step'"),
        ("learn/card", {"card": "trace_recurrence"}, "no card 'trace_recurrence'"),
        ("learn/check", {"step": "trace_recurrence"}, "not an Implement exercise"),
        ("learn/path", {"extra": 1}, "unknown field(s): extra"),
    ]:
        status, body = client.post(name, payload)
        assert status == 400 and words in body["error"], (name, body)


def test_without_a_workspace_answers_are_graded_but_not_saved(client):
    out = client.ok("learn/answer", {"question": "trace_causal_count", "value": "6"})
    assert out["correct"] and out["recorded"] is False
    assert client.ok("learn/path")["workspace"] is None
    status, body = client.post("learn/check", {"step": "causal_mask"})
    assert status == 400 and body["code"] == "learn_no_workspace"
