"""A lesson a student reads in one sitting: its "Common mistakes" show at most five mistakes (step.toml's
``top``, else the first five), and the rest sit behind one fold, "More mistakes", in every view (the
JSON, the terminal, the notebook; the explorer's page in tests/explorer/test_lesson_fold_browser.py),
each still reachable by its anchor mistake-ID, which is where a diagnosis's link points."""

from __future__ import annotations

import pytest

from seqlab.learn import lesson_checks, lessons, views
from seqlab.learn.feedback import reading
from seqlab.learn.notebooks import part_notebook
from seqlab.learn.path import PART_OF, STEPS

# steps 23-44: the attention and Transformer half (issue 47)
SECOND_HALF = [s.id for s in STEPS[22:44]]


def _mistakes_section(view: dict) -> dict:
    return next(s for s in view["sections"] if s["id"] == "mistakes")


def _every_mistake(step: str) -> list[str]:
    """The lesson's mistakes as written: the catalogue's, then the lesson's own blocks."""
    return [m["id"] for m in views.mistake_records(step)] + [b.name for b in lessons.lesson(step).blocks("mistake")]


def test_the_second_half_is_steps_23_to_44():
    assert SECOND_HALF[0] == "trace_attention_weights" and SECOND_HALF[-1] == "get_batch" and len(SECOND_HALF) == 22


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("step", SECOND_HALF)
def test_at_most_five_mistakes_before_the_fold_and_every_one_reachable(step, lang):
    view = views.step_view(step, lang)
    blocks = _mistakes_section(view)["blocks"]
    shown = [b for b in blocks if b["type"] == "mistake"]
    folds = [b for b in blocks if b["type"] == "fold"]
    assert len(shown) <= views.FOLD_AFTER, [b["id"] for b in shown]
    assert len(folds) <= 1 and all(b is blocks[-1] for b in folds)        # one fold, at the section's end
    folded = [b for f in folds for b in f["blocks"]]
    assert all(b["type"] == "mistake" for b in folded)
    # nothing is lost: every mistake of the lesson is in the view once, shown or folded, with its anchor
    every = _every_mistake(step)
    assert sorted(b["id"] for b in shown + folded) == sorted(every)
    assert [m["anchor"] for m in view["mistakes"]] == [f"mistake-{b['id']}" for b in shown + folded]
    assert [m["folded"] for m in view["mistakes"]] == [False] * len(shown) + [True] * len(folded)
    if len(every) > views.FOLD_AFTER:
        # a step with more than five chose its most common ones (step.toml's top), and shows them first
        top = views.top_mistakes(step)
        assert top is not None and 3 <= len(top) <= views.FOLD_AFTER, f"{step}/step.toml needs top = [...]"
        assert {b["id"] for b in shown} == set(top)
        assert folds and folds[0]["title"] == views.label("more_mistakes", lang, n=len(folded))
        catalogued = [b["id"] for b in shown if b["catalogued"]]
        assert catalogued == [t for t in top if t in catalogued]             # in top's order


def test_the_catalogue_order_is_top_first_and_the_fold_keeps_the_rest_in_order():
    step = "attention"
    top = views.top_mistakes(step)
    view = views.step_view(step)
    fold = _mistakes_section(view)["blocks"][-1]
    assert fold["type"] == "fold" and fold["id"] == "more-mistakes"
    rest = [m for m in _every_mistake(step) if m not in top]
    assert [b["id"] for b in fold["blocks"]] == rest


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_terminal_prints_the_rest_under_more_mistakes(lang):
    step = "attention"
    view = views.step_view(step, lang)
    text = views.text(view)
    section = text[text.index(view["sections"][[s["id"] for s in view["sections"]].index("mistakes")]["heading"]):]
    heading = views.plain(views.label("more_mistakes", lang, n=sum(m["folded"] for m in view["mistakes"])))
    heading = heading.upper() if lang == "en" else heading
    at = section.index(heading)
    for m in view["mistakes"]:                       # each by its anchor, on the right side of the heading
        where = section.index(f"[{m['anchor']}]")
        assert (where > at) == m["folded"], m["id"]


def test_the_notebook_folds_them_in_a_details_element():
    step = "attention"
    notebook = part_notebook(PART_OF[step].id, "en")
    source = "\n".join(c["source"] for c in notebook["cells"] if c["cell_type"] == "markdown")
    view = views.step_view(step)
    n = sum(m["folded"] for m in view["mistakes"])
    opened = source.index(f"<details><summary>{views.label('more_mistakes', 'en', n=n)}</summary>")
    closed = source.index("</details>", opened)
    for m in view["mistakes"]:
        where = source.index(m["title"], source.index(view["title"]))
        assert (opened < where < closed) == m["folded"], m["id"]


def test_a_diagnosis_of_a_folded_mistake_links_to_its_anchor():
    step = "attention"
    folded = next(m for m in views.step_view(step)["mistakes"] if m["folded"] and m["catalogued"])
    said = reading({"mistake": folded["id"], "read": {"step": step, "anchor": folded["anchor"]}}, step)
    assert said["url"] == views.step_url(step, folded["anchor"]) and said["url"].endswith("/mistake-" + folded["id"])
    assert said["heading"] == folded["title"]


def test_without_top_the_first_five_are_shown(monkeypatch):
    monkeypatch.setattr(views, "top_mistakes", lambda step: None)
    view = views.step_view("attention")
    assert [m["id"] for m in view["mistakes"] if not m["folded"]] == _every_mistake("attention")[:5]


def test_a_lesson_with_five_or_fewer_has_no_fold():
    view = views.step_view("trace_attention_weights")
    assert all(b["type"] != "fold" for b in _mistakes_section(view)["blocks"])
    assert not any(m["folded"] for m in view["mistakes"])


@pytest.mark.parametrize("top, said", [
    (("softmax_over_queries", "no_such_mistake"), "top names 'no_such_mistake'"),
    (("softmax_over_queries", "missing_scale", "divided_by_d", "mask_after_softmax", "mask_inverted", "square_only"),
     "top lists 6 mistakes; at most 5"),
    (("missing_scale", "missing_scale"), "each once"),
])
def test_a_wrong_top_is_named(monkeypatch, top, said):
    monkeypatch.setattr(lesson_checks, "top_mistakes", lambda step: top)
    assert any(said in p for p in lesson_checks.problems("attention")), lesson_checks.problems("attention")
