"""Trace questions: each states its precision and is compared at it (relatively away from 0,
absolutely near 0, exactly for counts); an answer short of the digits is "right so far"; the known
wrong answers are named."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from seqlab.cli import main
from seqlab.learn import lessons
from seqlab.learn.courses import CourseError
from seqlab.learn.questions import QUESTION_BY_ID, QUESTIONS, Precision, grade, parse_numbers, parse_precision


def _cli(capsys, *args) -> tuple[int, str]:
    code = main(["learn", *map(str, args)])
    return code, capsys.readouterr().out


def test_precision_is_read_from_the_step_and_a_bad_one_names_the_file():
    assert parse_precision("3 significant digits") == Precision(3)
    assert parse_precision("1 significant digit").digits == 1 and parse_precision("exact").exact
    for bad in ("3 decimals", "0 significant digits", "", "about right"):
        with pytest.raises(CourseError, match=r"step\.toml: precision must be"):
            parse_precision(bad, where="course/x/step.toml")
    assert QUESTION_BY_ID["trace_causal_count"].precision.exact
    assert QUESTION_BY_ID["trace_head_shapes"].precision.exact
    assert all(q.precision.digits == 3 for q in QUESTIONS if not q.precision.exact)


def test_every_question_states_its_precision_in_both_languages():
    for q in QUESTIONS:
        assert q.asks("en").startswith(q.text[0]) and "(to " in q.asks("en")
        assert q.asks("zh").startswith(q.text[1]) and "要求" in q.asks("zh")
        words = "the exact number" if q.precision.exact else f"{q.precision.digits} significant digits"
        assert words in q.asks("en")


def test_relative_away_from_zero_short_answers_are_right_so_far():
    q = QUESTION_BY_ID["trace_recurrence"]
    h = 0.0
    for x in (1.0, 0.0, -1.0):
        h = math.tanh(0.5 * h + x)                  # the oracle: h_3, written out
    assert grade(q, f"{h:.3g}").correct and grade(q, f"{h:.6f}").correct
    assert grade(q, f"{h:.3g}".replace("674", "675")).correct is False
    short = grade(q, f"{h:.2g}")                    # -0.67: right at the digits given
    assert not short.correct and short.short and short.what[0] == "right so far: give 3 significant digits"
    assert grade(q, "-0.7").short                   # one digit: -0.674 rounds to -0.7, right so far
    assert not grade(q, "-0.6").correct and not grade(q, "-0.6").short      # -0.6 is not how it rounds
    # relative: the same three digits are asked of a small number and of a large one
    v = QUESTION_BY_ID["trace_vanishing"]
    assert grade(v, "0.000977, 1024").correct and grade(v, "9.77e-4, 1.02e3").correct
    assert grade(v, "0.00098, 1024").short          # "about a thousandth" is right, but short of 3 digits
    assert not grade(v, "0.000976, 1024").correct   # 0.0009765625 rounds to 0.000977
    assert not grade(v, "0.001, 1024").correct or grade(v, "0.001, 1024").short


def test_counts_are_exact_and_zero_is_compared_absolutely():
    c = QUESTION_BY_ID["trace_causal_count"]
    assert grade(c, "6").correct and grade(c, "6.0").correct
    assert not grade(c, "6.01").correct and not grade(c, "6.01").short
    shapes = QUESTION_BY_ID["trace_head_shapes"]
    assert grade(shapes, "3x2, 3x3, 3 × 4").correct and not grade(shapes, "3x2, 3x3, 3x5").correct
    assert grade(shapes, "3, 2, 3").what[0] == "expected 6 number(s), got 3"
    near = Precision(3, near_zero=1e-6)
    assert near.unit(0.0) == 0.5e-6 and near.unit(1e-9) == 0.5e-6 and near.unit(0.5) == 0.0005
    # the GRU question's known wrong value is 0 itself: named from "0", "0.0" or a float's rounding
    gru = QUESTION_BY_ID["trace_gru_mix"]
    z_new = 0.25 * 0.6 + 0.75 * -0.2            # the other convention: z as the candidate's share
    for text in ("0", "0.0", repr(z_new)):
        assert grade(gru, text).wrong.mistake == "z-means-new"


def test_numbers_keep_the_digits_written():
    assert [(g.value, g.digits) for g in parse_numbers("−0.6741, 0.00098; 1024 9.77e-4")] == [
        (-0.6741, 4), (0.00098, 2), (1024.0, 4), (9.77e-4, 3)]
    with pytest.raises(ValueError, match="'abc' is not a number"):
        parse_numbers("0.4, abc")
    with pytest.raises(ValueError, match="not a finite number"):
        parse_numbers("nan")


def test_the_known_wrong_answers_of_the_issue_are_named():
    q = QUESTION_BY_ID["trace_recurrence"]
    no_tanh, states = 0.0, []
    for x in (1.0, 0.0, -1.0):
        no_tanh = 0.5 * no_tanh + x                 # the tanh forgotten
    h = 0.0
    for x in (1.0, 0.0, -1.0):
        states.append(h)                            # the state appended before it is updated
        h = math.tanh(0.5 * h + x)
    shifted = math.tanh(0.5 * math.tanh(1.0))       # what a loop one step late ends with: h_2
    assert no_tanh == -0.75 and states[-1] == pytest.approx(shifted)
    assert grade(q, "-0.75").wrong.mistake == "tanh-forgotten"
    assert grade(q, f"{shifted:.4f}").wrong.mistake == "state-shifted"          # 0.3634
    assert grade(q, "0.5").wrong is None                                          # not a known one: the hint
    # the other steps' catalogued wrong answers, each computed here
    softmax = lambda s: np.exp(s) / np.exp(s).sum()
    assert grade(QUESTION_BY_ID["trace_attention_weights"], ", ".join(f"{v:.4f}" for v in softmax(np.array([1.0, 0.0])))
                 ).wrong.mistake == "scale-forgotten"
    assert grade(QUESTION_BY_ID["trace_lstm_cell"], f"0.9, {0.5 * 0.9}").wrong.title[0].startswith("the tanh of c")
    assert grade(QUESTION_BY_ID["trace_causal_count"], str(3 * 3 / 2)).wrong.mistake == "half-of-n-squared"
    assert grade(QUESTION_BY_ID["trace_vanishing"], f"{0.5 ** 9}, {2 ** 9}").wrong.title[0].startswith("nine factors")


def test_every_catalogued_wrong_answer_is_wrong_and_its_mistake_is_in_the_lesson():
    for q in QUESTIONS:
        for w in q.wrong:
            verdict = grade(q, list(w.values))
            assert not verdict.correct and verdict.wrong == w, (q.id, w.title[0])
            assert w.title[0] and w.title[1] != w.title[0]                         # both languages
            if w.mistake:
                for lang in lessons.LANGS:
                    names = [b.name for b in lessons.lesson(q.id, lang).blocks("mistake")]
                    assert w.mistake in names, f"{q.id}: no :::mistake {w.mistake} in its {lang} lesson"


def test_answer_in_the_terminal_names_the_mistake_or_says_right_so_far(capsys, tmp_path):
    ws = tmp_path / "ws"
    code, out = _cli(capsys, "answer", "trace_recurrence", "-0.75", "--workspace", ws)
    assert code == 1
    assert "the tanh forgotten" in out and "mistake-tanh-forgotten" in out
    assert QUESTION_BY_ID["trace_recurrence"].hint[0] not in out        # the mistake, not the generic hint
    code, out = _cli(capsys, "answer", "trace_vanishing", "0.00098, 1024", "--workspace", ws)
    assert code == 1 and "right so far: give 3 significant digits" in out
    code, out = _cli(capsys, "answer", "trace_recurrence", "-0.75", "--workspace", ws, "--lang", "zh")
    assert "漏掉了 tanh" in out
    code, out = _cli(capsys, "answer", "trace_recurrence", "-0.674", "--workspace", ws)
    assert code == 0 and out.startswith("right.")
    progress = json.loads((ws / "progress.json").read_text())["steps"]
    assert progress["trace_recurrence"]["state"] == "passed" and progress["trace_vanishing"]["state"] == "started"
    code, out = _cli(capsys, "answer", "trace_recurrence")
    assert "(to 3 significant digits)" in out


def test_a_course_folder_question_with_a_bad_wrong_answer_names_its_file(tmp_path):
    from types import SimpleNamespace

    from seqlab.learn.questions import _question
    record = {"title": {"en": "T"}, "question": {"text": {"en": "?"}, "hint": {"en": "h"}, "solution": {"en": "s"},
                                                 "wrong": [{"value": "three", "title": {"en": "w"}}]}}
    folder = SimpleNamespace(id="t", path=tmp_path / "t", record=record, module=lambda: SimpleNamespace(answer=list))
    with pytest.raises(CourseError, match=r"t/step\.toml, wrong answer 1: a wrong answer's value is a number"):
        _question(folder)
