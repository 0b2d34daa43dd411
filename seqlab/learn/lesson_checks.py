"""Checks of a course's lessons against the path, the catalogue and seqlab's own values.

:func:`problems` lists everything that keeps a step's lesson from being complete in both languages:
the required sections, questions with answers, figures, the mistakes, the glossary's terms in the
Chinese text, step.toml's ``top``, and the worked numbers. The English file's front matter
``numbers:`` ties each printed number to an expression over seqlab's own code;
:func:`number_problems` recomputes them and finds each in both languages' text. A teacher runs them
on a course folder as the tests run them on the built-in one.
"""

from __future__ import annotations

import importlib
import math
import re

from seqlab.learn.lessons import (
    FOLD_AFTER, LANGS, REQUIRED, Lesson, LessonError, glossary, has_lesson, lesson, lesson_path, top_mistakes,
)


class _Lazy:
    """``seqlab.labs.recurrence.scalar_recurrence`` in a numbers expression: submodules import on use.
    The expressions are the project's own (lesson files), evaluated with the usual builtins."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        module = importlib.import_module(self._name)
        if hasattr(module, attr):
            value = getattr(module, attr)
            return _Lazy(value.__name__) if isinstance(value, type(math)) else value
        return _Lazy(f"{self._name}.{attr}")


def _namespace() -> dict:
    import numpy as np

    from seqlab.learn.catalog import mutant, reference
    from seqlab.learn.questions import QUESTION_BY_ID
    return {"seqlab": _Lazy("seqlab"), "np": np, "math": math, "reference": reference, "mistake": mutant,
            "answer": lambda qid: QUESTION_BY_ID[qid].answer()}


def _flatten(value) -> list[float]:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flatten(v)]
    return [float(value)]


_NUMBER = re.compile(r"[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _printed_numbers(shown: str) -> list[str]:
    return _NUMBER.findall(shown)


def _close(printed: str, value: float) -> bool:
    text = printed.replace("−", "-")
    decimals = len(text.split(".")[1].split("e")[0]) if "." in text else 0
    if "e" in text:
        return math.isclose(float(text), value, rel_tol=10 ** -max(decimals, 1))
    return abs(float(text) - value) <= 0.5 * 10 ** -decimals + 1e-12


def _appears(printed: str, text: str) -> bool:
    body = text.replace("−", "-")
    number = printed.replace("−", "-")
    pattern = r"(?<![\d.])" + re.escape(number) + r"(?![\d])"
    if re.search(pattern, body):
        return True
    return number.startswith("-") and re.search(r"(?<![\d.])[−-]" + re.escape(number[1:]) + r"(?![\d])", text) is not None


def number_values(step: str) -> list[list[float] | str]:
    """Each ``numbers:`` line's values computed now, in order (a string where the expression raised).

    Plain floats, so a test can compute them in a child process with another BLAS kernel or thread
    count and compare them with the printed numbers here (``printed_mismatches``)."""
    namespace = _namespace()
    found: list[list[float] | str] = []
    for _shown, expression in lesson(step, "en").numbers:
        try:
            found.append(_flatten(eval(expression, namespace)))  # noqa: S307 - the project's own lesson files
        except Exception as error:  # noqa: BLE001 - reported with the line
            found.append(f"raised {type(error).__name__}: {error}")
    return found


def printed_mismatches(step: str, values: list[list[float] | str]) -> list[str]:
    """Where ``values`` (from ``number_values``) disagree with the numbers the lesson prints, each at
    its printed precision."""
    en = lesson(step, "en")
    found = []
    for (shown, expression), got in zip(en.numbers, values):
        printed = _printed_numbers(shown)
        if isinstance(got, str):
            found.append(f"{en.path}: numbers '{shown} = {expression}' {got}")
        elif len(got) != len(printed):
            found.append(f"{en.path}: numbers '{shown}' lists {len(printed)} numbers but {expression} gives "
                         f"{len(got)}: {got}")
        else:
            found += [f"{en.path}: the lesson prints {p} but {expression} gives {v!r}"
                      for p, v in zip(printed, got) if not _close(p, v)]
    return found


def number_problems(step: str) -> list[str]:
    """Where the lesson's printed worked numbers disagree with the values seqlab computes now, or are
    missing from a language's text."""
    en = lesson(step, "en")
    found = printed_mismatches(step, number_values(step))
    texts = {lang: lesson(step, lang).text() for lang in LANGS if has_lesson(step, lang)}
    for shown, expression in en.numbers:
        printed = _printed_numbers(shown)
        for lang, text in texts.items():
            missing = [p for p in printed if not _appears(p, text)]
            if missing:
                found.append(f"{lesson_path(step, lang)}: the worked numbers {', '.join(missing)} "
                             f"(from '{shown} = {expression}') do not appear in the text")
    return found


def problems(step: str) -> list[str]:
    """Everything that keeps the lesson of ``step`` from being complete, in both languages."""
    from seqlab.learn.path import STEP_BY_ID
    found: list[str] = []
    step_record = STEP_BY_ID.get(step)
    if step_record is None:
        return [f"{step!r} is not a step of the path"]
    lessons = {}
    for lang in LANGS:
        try:
            lessons[lang] = lesson(step, lang)
        except LessonError as error:
            found.append(str(error))
    if len(lessons) < len(LANGS):
        return found
    required = REQUIRED + (("hints",) if step_record.kind == "implement" else ())
    for lang, ls in lessons.items():
        ids = [s.id for s in ls.sections]
        missing = [r for r in required if r not in ids]
        if missing:
            found.append(f"{ls.path}: missing sections {', '.join('{#' + m + '}' for m in missing)}")
        for s in ls.sections:
            if not s.blocks:
                found.append(f"{ls.path}: the section {{#{s.id}}} is empty")
        if not any(q.kind_of == "predict" for q in ls.questions):
            found.append(f"{ls.path}: no 'predict before revealing' question (:::question ID in {{#predict}})")
        for q in ls.questions:
            if not q.answer:
                found.append(f"{ls.path}, line {q.line}: the question {q.name!r} has no :::answer")
        if not ls.figures:
            found.append(f"{ls.path}: no figure ([[figure NAME | caption]])")
        if step_record.kind == "implement":
            if not ls.blocks("mistakes"):
                found.append(f"{ls.path}: an Implement step shows its catalogued mistakes: [[mistakes]] in {{#mistakes}}")
            if len(ls.hints) < 3:
                found.append(f"{ls.path}: {{#hints}} needs three numbered hints (the idea, the shapes, the key line)")
        elif not ls.blocks("mistake"):
            found.append(f"{ls.path}: {{#mistakes}} needs at least one :::mistake block")
    from seqlab.learn.questions import QUESTION_BY_ID
    asked = step if step_record.kind == "trace" else step_record.then
    for ls in lessons.values():
        for b in ls.blocks("reveal"):
            if asked not in QUESTION_BY_ID:
                found.append(f"{ls.path}, line {b.line}: a :::reveal waits for the step's Trace question, and "
                             f"{step} has none")
    en, zh = lessons["en"], lessons["zh"]
    if [s.id for s in en.sections] != [s.id for s in zh.sections]:
        found.append(f"{zh.path}: its sections {[s.id for s in zh.sections]} differ from the English "
                     f"{[s.id for s in en.sections]}")
    for kind in ("question", "mistake", "figure", "widget", "reveal"):
        names_en = [b.name for b in en.blocks(kind)]
        names_zh = [b.name for b in zh.blocks(kind)]
        if names_en != names_zh:
            found.append(f"{zh.path}: its {kind}s {names_zh} differ from the English {names_en}")
    if len(en.hints) != len(zh.hints):
        found.append(f"{zh.path}: {len(zh.hints)} hints against the English {len(en.hints)}")
    if zh.numbers:
        found.append(f"{zh.path}: the numbers front matter belongs in the English file only")
    words_en, words_zh = en.text().lower(), zh.text()
    for english, chinese in glossary():
        if re.search(r"\b" + re.escape(english.lower()) + r"s?\b", words_en) and chinese not in words_zh:
            found.append(f"{zh.path}: the English lesson says '{english}' but this one never uses the glossary's "
                         f"'{chinese}'")
    found += _top_problems(step, en)
    from seqlab.learn.figures import FIGURES
    for b in en.figures:
        if b.name not in FIGURES:
            found.append(f"{en.path}, line {b.line}: no figure {b.name!r} in seqlab.learn.figures")
    found += number_problems(step)
    return found


def _top_problems(step: str, en: Lesson) -> list[str]:
    """step.toml's ``top`` (the mistakes shown before the lesson's fold) names at most FOLD_AFTER of the
    lesson's mistakes, catalogued or its own, each once."""
    from seqlab.learn.catalog import exercise
    top = top_mistakes(step)
    if top is None:
        return []
    ex = exercise(step)
    known = [m.id for m in (ex.mistakes if ex is not None else ())] + [b.name for b in en.blocks("mistake")]
    found = [f"{step}/step.toml: top names {t!r}, which is not one of the lesson's mistakes ({', '.join(known)})"
             for t in top if t not in known]
    if len(top) > FOLD_AFTER or len(set(top)) != len(top):
        found.append(f"{step}/step.toml: top lists {len(top)} mistakes; at most {FOLD_AFTER}, each once")
    return found
