"""Trace questions (numbers to compute by hand, checked at the precision each states) and Explain/Derive cards.

Each is a step folder's ``[question]`` or ``[card]`` (``seqlab.learn.courses``). A Trace answer is
computed by the lab code itself when asked (the folder's ``check.py``: ``answer()``), so a question
cannot drift from the reference. ``precision`` says what it wants ("3 significant digits", or
"exact" for counts): a number away from 0 is compared relatively (it must round to the answer at
that many digits), one near 0 absolutely (``near_zero``), a count exactly. An answer right at the
digits it gives but short of the precision is told "right so far". The known wrong answers
(``[[question.wrong]]``: value, title, the lesson's mistake) are named when given, as code mistakes are.

    verdict = grade(QUESTION_BY_ID["trace_recurrence"], "-0.75")
    verdict.correct, verdict.wrong.title     # False, ("the tanh forgotten ...", "...")
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable

from seqlab.learn.courses import CourseError, active
from seqlab.learn.words import pair


@dataclasses.dataclass(frozen=True)
class WrongAnswer:
    """A wrong answer a student is known to reach, and how (``mistake``: the lesson's anchor id)."""
    values: tuple[float, ...]
    title: tuple[str, str]
    mistake: str = ""


@dataclasses.dataclass(frozen=True)
class Precision:
    """"N significant digits" (``digits`` = N) or "exact" (``digits`` = 0: counts)."""
    digits: int
    near_zero: float = 1e-9          # below this size an answer is compared absolutely

    @property
    def exact(self) -> bool:
        return self.digits == 0

    def words(self) -> tuple[str, str]:
        return pair("questions.exact") if self.exact else pair("questions.digits", n=self.digits)

    def unit(self, expected: float, digits: int | None = None) -> float:
        """Half a unit in the last place of ``expected`` written to ``digits`` significant digits
        (default: the stated precision); near 0, half of ``near_zero``."""
        digits = self.digits if digits is None else digits
        if abs(expected) < self.near_zero:
            return self.near_zero / 2
        return 0.5 * 10 ** (math.floor(math.log10(abs(expected))) - digits + 1)


_PRECISION = re.compile(r"^\s*(?:(\d+)\s+significant\s+digits?|(exact))\s*$")


def parse_precision(text: str, near_zero: float = 1e-9, where: str = "") -> Precision:
    """"3 significant digits" or "exact"; CourseError naming ``where`` for anything else."""
    match = _PRECISION.match(str(text))
    if not match or (match.group(1) and int(match.group(1)) < 1):
        raise CourseError(f"{where}: precision must be \"N significant digits\" (N >= 1) or \"exact\", not {text!r}")
    return Precision(0 if match.group(2) else int(match.group(1)), float(near_zero))


@dataclasses.dataclass(frozen=True)
class Question:
    id: str
    title: tuple[str, str]                 # (English, Chinese)
    text: tuple[str, str]
    answer: Callable[[], list[float]]      # the expected numbers, from the labs
    hint: tuple[str, str]
    solution: tuple[str, str]
    precision: Precision = Precision(3)
    wrong: tuple[WrongAnswer, ...] = ()

    def asks(self, lang: str = "en") -> str:
        """The question with the precision it wants: "... What is h_3? (to 3 significant digits)"."""
        from seqlab.learn.words import say
        k = 1 if lang == "zh" else 0
        return self.text[k] + say("questions.asks", lang, precision=self.precision.words()[k])


@dataclasses.dataclass(frozen=True)
class Card:
    id: str
    kind: str                              # "explain" or "derive"
    title: tuple[str, str]
    question: tuple[str, str]
    answer: tuple[str, str]


def _pair(value: dict) -> tuple[str, str]:
    return (value.get("en", ""), value.get("zh") or value.get("en", ""))


def _values(value, where: str) -> tuple[float, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise CourseError(f"{where}: a wrong answer's value is a number or a list of numbers, not {value!r}")
    return tuple(float(v) for v in values)


def _question(folder) -> Question:
    q = folder.record["question"]
    where = str(folder.path / "step.toml")
    precision = parse_precision(q.get("precision", "3 significant digits"), q.get("near_zero", 1e-9), where)
    wrong = []
    for k, w in enumerate(q.get("wrong", [])):
        if not isinstance(w.get("title"), dict) or not w["title"].get("en"):
            raise CourseError(f"{where}: wrong answer {k + 1} needs a title, at least title.en = \"...\"")
        wrong.append(WrongAnswer(_values(w.get("value"), f"{where}, wrong answer {k + 1}"), _pair(w["title"]),
                                 str(w.get("mistake", ""))))
    return Question(folder.id, _pair(folder.record["title"]), _pair(q["text"]), folder.module().answer,
                    _pair(q["hint"]), _pair(q["solution"]), precision, tuple(wrong))


def _card(folder) -> Card:
    c = folder.record["card"]
    return Card(folder.id, c["kind"], _pair(folder.record["title"]), _pair(c["question"]), _pair(c["answer"]))


_FOLDERS = active().folders.values()
QUESTIONS: tuple[Question, ...] = tuple(_question(f) for f in _FOLDERS if "question" in f.record)
CARDS: tuple[Card, ...] = tuple(_card(f) for f in _FOLDERS if "card" in f.record)


@dataclasses.dataclass(frozen=True)
class Given:
    """A number as the student wrote it: its value and how many significant digits it shows."""
    value: float
    digits: int


_NUMBER = re.compile(r"^[+-]?(\d*)\.?(\d*)(?:e[+-]?\d+)?$", re.I)


def significant_digits(text: str) -> int:
    """The significant digits ``text`` shows: "0.00098" 2, "1024" 4, "-0.6741" 4, "9.77e-4" 3, "0" 1."""
    match = _NUMBER.match(text.strip())
    if not match:
        return 0
    digits = (match.group(1) + match.group(2)).lstrip("0")
    return max(len(digits), 1)


def parse_numbers(text: str) -> list[Given]:
    """"0.4" / "0.6698, 0.3302" / "3 x 2" -> the numbers with their digits; ValueError naming the
    part that is not a number (its argument: words said later, ``str()`` the English)."""
    from seqlab.learn.words import said
    text = text.replace("−", "-").replace("×", " ")
    parts = [p for p in re.sub(r"(?<=\d)\s*x\s*(?=[-+\d.])", " ", text).replace(",", " ").replace(";", " ").split() if p]
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(said("questions.not_a_number", part=repr(part))) from None
        if not math.isfinite(value):
            raise ValueError(said("questions.not_finite", part=repr(part)))
        values.append(Given(value, significant_digits(part)))
    if not values:
        raise ValueError(said("questions.no_number"))
    return values


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What an answer is: ``correct``; else ``what`` is wrong ({"en", "zh"}), ``short`` when every
    number is right at the digits given but some are short of the precision, ``wrong`` the known
    wrong answer it is."""
    correct: bool
    what: tuple[str, str] = ("", "")
    short: bool = False
    wrong: WrongAnswer | None = None


def _matches(given: Given, expected: float, precision: Precision, own_digits: bool = False) -> bool:
    if precision.exact:
        return given.value == expected
    if math.isclose(given.value, expected, rel_tol=0.0, abs_tol=precision.unit(expected) * (1 + 1e-9)):
        return True
    if own_digits and given.digits < precision.digits:
        return abs(given.value - expected) <= precision.unit(expected, given.digits) * (1 + 1e-9)
    return False


def grade(question: Question, given: str | list[Given] | list[float]) -> Verdict:
    """The verdict on an answer (the text the student wrote, or its numbers) at the question's precision."""
    if isinstance(given, str):
        given = parse_numbers(given)
    given = [g if isinstance(g, Given) else Given(float(g), 17) for g in given]
    expected = question.answer()
    precision = question.precision
    if len(given) != len(expected):
        return Verdict(False, pair("questions.count", n=len(expected), got=len(given)),
                       wrong=_known(question, given))
    if all(_matches(g, e, precision) for g, e in zip(given, expected)):
        return Verdict(True)
    if all(_matches(g, e, precision, own_digits=True) for g, e in zip(given, expected)):
        words = precision.words()
        return Verdict(False, (pair("questions.short", precision=words[0])[0], pair("questions.short", precision=words[1])[1]),
                       short=True)
    wrong = _known(question, given)
    bad = next(k for k, (g, e) in enumerate(zip(given, expected)) if not _matches(g, e, precision, own_digits=True))
    what = pair("questions.number_wrong", k=bad + 1, value=f"{given[bad].value:g}")
    return Verdict(False, what, wrong=wrong)


def _known(question: Question, given: list[Given]) -> WrongAnswer | None:
    """The known wrong answer ``given`` is, at the question's precision (or at the digits given)."""
    for wrong in question.wrong:
        if len(wrong.values) == len(given) and all(
                _matches(g, v, question.precision, own_digits=True) for g, v in zip(given, wrong.values)):
            return wrong
    return None


def answer_seen(progress: dict, question_id: str) -> bool:
    """Whether the workspace's progress says the question was answered right or its answer asked for
    (then every view shows the lesson's worked numbers and the widget that computes them)."""
    entry = progress.get("steps", {}).get(question_id)
    return isinstance(entry, dict) and (entry.get("state") == "passed" or entry.get("revealed") is True)


def verdict_words(question: Question, verdict: Verdict, lang: str) -> list[str]:
    """The lines that tell the student a verdict (after "not yet"): what is wrong, the known mistake
    or the hint."""
    from seqlab.learn.words import say
    k = 1 if lang == "zh" else 0
    if verdict.correct:
        return [say("questions.right", lang)]
    if verdict.short:
        return [say("questions.right_so_far", lang, precision=question.precision.words()[k])]
    lines = [say("questions.not_yet", lang, what=verdict.what[k])]
    if verdict.wrong is not None:
        lines.append(say("questions.known", lang, title=verdict.wrong.title[k]))
        if verdict.wrong.mistake:
            lines.append(say("questions.read_mistake", lang, step=question.id, anchor=f"mistake-{verdict.wrong.mistake}"))
    else:
        lines.append(say("questions.hint", lang, hint=question.hint[k]))
    return lines


QUESTION_BY_ID = {q.id: q for q in QUESTIONS}
CARD_BY_ID = {c.id: c for c in CARDS}
