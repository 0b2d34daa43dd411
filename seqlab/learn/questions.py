"""Trace questions (a number to compute by hand, checked with a tolerance) and Explain/Derive cards.

Each is a step folder's ``[question]`` or ``[card]`` (``seqlab.learn.courses``). A Trace answer is
computed by the lab code itself when asked (the folder's ``check.py``: ``answer()``), so a question
cannot drift from the reference. A wrong answer gets its hint; the worked solution is shown only on request.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from seqlab.learn.courses import active


@dataclasses.dataclass(frozen=True)
class Question:
    id: str
    title: tuple[str, str]                 # (English, Chinese)
    text: tuple[str, str]
    answer: Callable[[], list[float]]      # the expected numbers, from the labs
    hint: tuple[str, str]
    solution: tuple[str, str]
    tolerance: float = 1e-3                # absolute, per number


@dataclasses.dataclass(frozen=True)
class Card:
    id: str
    kind: str                              # "explain" or "derive"
    title: tuple[str, str]
    question: tuple[str, str]
    answer: tuple[str, str]


def _pair(value: dict) -> tuple[str, str]:
    return (value.get("en", ""), value.get("zh") or value.get("en", ""))


def _question(folder) -> Question:
    q = folder.record["question"]
    return Question(folder.id, _pair(folder.record["title"]), _pair(q["text"]), folder.module().answer,
                    _pair(q["hint"]), _pair(q["solution"]), float(q.get("tolerance", 1e-3)))


def _card(folder) -> Card:
    c = folder.record["card"]
    return Card(folder.id, c["kind"], _pair(folder.record["title"]), _pair(c["question"]), _pair(c["answer"]))


_FOLDERS = active().folders.values()
QUESTIONS: tuple[Question, ...] = tuple(_question(f) for f in _FOLDERS if "question" in f.record)
CARDS: tuple[Card, ...] = tuple(_card(f) for f in _FOLDERS if "card" in f.record)


def parse_numbers(text: str) -> list[float]:
    """"0.4" / "0.6698, 0.3302" / "3 x 2" -> floats; ValueError naming the part that is not a number."""
    parts = [p for p in text.replace("×", " ").replace("x", " ").replace(",", " ").replace(";", " ").split() if p]
    values = []
    for part in parts:
        try:
            values.append(float(part))
        except ValueError:
            raise ValueError(f"{part!r} is not a number; answer with numbers separated by commas") from None
    if not values:
        raise ValueError("no number given; answer with numbers separated by commas")
    return values


def grade(question: Question, given: list[float]) -> tuple[bool, str]:
    """(correct, what is wrong) of an answer: the count of numbers, then each within the tolerance."""
    expected = question.answer()
    if len(given) != len(expected):
        return False, f"expected {len(expected)} number(s), got {len(given)}"
    tolerance = max(question.tolerance, 1e-12)
    for k, (g, e) in enumerate(zip(given, expected)):
        if not math.isclose(g, e, abs_tol=tolerance, rel_tol=0.0):
            return False, f"number {k + 1} ({g:g}) is not right"
    return True, ""


QUESTION_BY_ID = {q.id: q for q in QUESTIONS}
CARD_BY_ID = {c.id: c for c in CARDS}
