"""The lessons' format and their worked numbers, checked against seqlab's own values computed now."""

from __future__ import annotations

import pytest

from seqlab.learn import lesson_checks, lessons
from seqlab.learn.path import STEPS

WRITTEN = [s.id for s in STEPS if lessons.has_lesson(s.id, "en") or lessons.has_lesson(s.id, "zh")]


@pytest.mark.parametrize("step", WRITTEN)
def test_a_written_lesson_is_complete_in_both_languages(step):
    assert lesson_checks.problems(step) == []


def _write(tmp_path, monkeypatch, en: str, zh: str, step: str = "trace_recurrence"):
    for lang, text in (("en", en), ("zh", zh)):
        (tmp_path / step).mkdir(exist_ok=True)
        (tmp_path / step / f"lesson.{lang}.md").write_text(text, encoding="utf-8")
    monkeypatch.setattr(lessons, "LESSON_DIR", tmp_path)
    lessons._parse_cached.cache_clear()


def _texts(step="trace_recurrence"):
    return (lessons.lesson_path(step, "en").read_text(encoding="utf-8"),
            lessons.lesson_path(step, "zh").read_text(encoding="utf-8"))


def test_a_printed_number_that_disagrees_with_the_lab_fails(tmp_path, monkeypatch):
    en, zh = _texts()
    _write(tmp_path, monkeypatch, en.replace("0.363399 -0.674144 =", "0.363399 -0.674145 =")
           .replace("| 3 | 0.5 · 0.363399 − 1 | −0.674144 |", "| 3 | 0.5 · 0.363399 − 1 | −0.674145 |"), zh)
    found = lesson_checks.problems("trace_recurrence")
    assert any("prints -0.674145" in p for p in found), found


def test_a_worked_number_missing_from_the_chinese_text_fails(tmp_path, monkeypatch):
    en, zh = _texts()
    _write(tmp_path, monkeypatch, en, zh.replace("0.380797", "0.3808"))
    found = lesson_checks.problems("trace_recurrence")
    assert any("zh" in p and "0.380797" in p for p in found), found


def test_missing_sections_questions_and_glossary_terms_are_named(tmp_path, monkeypatch):
    en, zh = _texts()
    broken_zh = zh.replace("## 先预测，再揭晓 {#predict}", "## 先预测 {#guess}").replace("隐藏状态", "状态")
    _write(tmp_path, monkeypatch, en, broken_zh)
    found = "\n".join(lesson_checks.problems("trace_recurrence"))
    assert "missing sections {#predict}" in found
    assert "'隐藏状态'" in found
    assert "differ from the English" in found


def test_a_malformed_block_names_the_file_and_line(tmp_path, monkeypatch):
    en, zh = _texts()
    _write(tmp_path, monkeypatch, en.replace(":::mistake tanh-forgotten Forgetting the tanh\n",
                                             ":::mistake tanh-forgotten\n"), zh)
    with pytest.raises(lessons.LessonError, match=r"trace_recurrence/lesson.en.md, line \d+: the mistake 'tanh-forgotten' needs a title"):
        lessons.lesson("trace_recurrence", "en")


def test_the_parsed_lesson_has_its_questions_hidden_answers_and_figures():
    ls = lessons.lesson("trace_recurrence", "en")
    assert [s.id for s in ls.sections][:4] == ["idea", "maths", "worked", "predict"]
    first = ls.questions[0]
    assert first.kind_of == "predict" and "h_3" in first.text and "0.674144" in first.answer
    assert "0.674144" not in first.text
    assert [f.name for f in ls.figures] == ["unrolled_scalar_recurrence"]
    assert ls.widgets == ["w-recurrence"]


def test_every_figure_renders_as_svg():
    import xml.etree.ElementTree as ET

    from seqlab.learn.figures import FIGURES
    for name, draw in FIGURES.items():
        for lang in ("en", "zh"):
            root = ET.fromstring(draw(lang))
            assert root.tag.endswith("svg"), name
