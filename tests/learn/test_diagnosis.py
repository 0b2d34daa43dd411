"""The diagnosis framework (seqlab.learn.diagnosis) and the checks' records (Spec, Mistake, Report):
the generic recognisers on arrays, and whole checks of a small exercise made here, with the student's
calls given directly (no child process)."""

from __future__ import annotations

import numpy as np
import pytest

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Exercise, Mistake, Spec
from seqlab.learn.judge import Expected, _report
from seqlab.learn.runner import CallResult, StudentRun


# --- relations between arrays ----------------------------------------------------------------------------
def test_a_constant_factor_is_found_and_named():
    e = np.arange(1.0, 7.0).reshape(2, 3)
    assert D.factor(e, e / 4) == pytest.approx(0.25)
    assert D.factor(e, e) is None and D.factor(e, e + 1) is None
    assert D.named_factor(0.5, {"1/sqrt(d_k)": 0.5, "1/d_k": 0.25}) == "1/sqrt(d_k)"
    assert D.named_factor(0.3, {"1/T": 0.25}) is None
    assert "minus the reference" in D.relation(e, -e)
    assert "constant factor 0.25" in D.relation(e, e / 4)


def test_a_transpose_a_shift_and_the_positions_that_differ():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(4, 4))
    assert D.is_transposed(e, e.T) and not D.is_transposed(e, e)
    late = np.vstack([np.zeros((1, 4)), e[:-1]])
    assert D.shift(e, late) == 1 and D.shift(e, np.vstack([e[1:], np.zeros((1, 4))])) == -1
    assert D.shift(e, e * 2) is None
    bad = e.copy()
    bad[[1, 3]] += 1
    assert D.differing(e, bad) == [1, 3]
    assert D.positions(e, bad, "time step") == "time steps 1, 3 differ (time steps 0, 2 are right)"
    assert "is shifted by one time step (late" in D.relation(e, late, axis_names=("time step",))
    assert "is the reference transposed" in D.relation(e, e.T)
    nan = e.copy()
    nan[2, 1] = np.nan
    assert D.relation(e, nan) == "holds NaN where the reference is finite (first at [2, 1])"


def test_a_gradient_that_is_part_of_its_sum_over_time_says_which_part():
    terms = np.random.default_rng(1).normal(size=(5, 3, 2))
    assert D.partial_sum(terms, terms[-1]) == "only the last step's contribution"
    assert D.partial_sum(terms, terms[0]) == "only the first step's contribution"
    assert D.partial_sum(terms, terms[2]) == "only step 2's contribution"
    assert D.partial_sum(terms, terms[1:4].sum(0)) == "the sum over steps 1..3 only"
    assert D.partial_sum(terms, terms.mean(0)) == "the mean over the time steps instead of the sum"
    assert D.partial_sum(terms, terms.sum(0) * 2) is None


# --- a small exercise: y = scale * x @ w, checked on calls given here ------------------------------------
def _reference(x, w, scale=1.0):
    return {"y": scale * np.asarray(x, dtype=np.float64) @ w, "n": len(x)}


def _transposed(x, w, scale=1.0):
    return {"y": scale * (np.asarray(x) @ w).T, "n": len(x)}


DOC = """y = scale * x @ w for x (n, d) and w (d, k). Returns {"y": (n, k), "n": n}.
    The scale defaults to 1. The output is float64."""


def _cases():
    rng = np.random.default_rng(2)
    return [Case("the worked example", (np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]))),
            Case("random inputs 1", (rng.normal(size=(3, 3)), rng.normal(size=(3, 3))), {"scale": 2.0})]


def _scale_cases():
    return [Case("a scale of 3", (np.eye(2), np.ones((2, 2))), {"scale": 3.0})]


def _float64(case, out, ref, extra):
    return None if np.asarray(out["y"]).dtype == np.float64 else f"y has dtype {np.asarray(out['y']).dtype}, not float64"


def _exercise(**options):
    fields = dict(
        spec=(Spec("scale", "The scale defaults to 1.", _scale_cases),
              Spec("float64", "The output is float64.", verify=_float64)),
        mistakes=(Mistake("transposed", "y transposed", "rows are x's rows", _transposed,
                          recognise=D.transposed("y")),
                  Mistake("halved", "y halved", "no factor 1/2", recognise=D.factor_of(("y",), lambda c: {"1/2": 0.5}))),
        axes={"y": ("row", "column")}, step="rnn_step")
    fields.update(options)
    return Exercise("tiny", "tiny", "小", "tiny(x, w, scale=1.0)", DOC, lambda: _reference, _cases, **fields)


def _check(ex: Exercise, student) -> object:
    ref = Expected(ex, ex.cases())
    calls = []
    for case in ref.cases:
        call = CallResult()
        try:
            call.output = student(*case.args, **case.kwargs)
        except Exception as error:  # noqa: BLE001
            call.error = repr(error)
        call.extra = {"ops": 7}
        calls.append(call)
    return _report(ex, "tiny.py", StudentRun(calls=calls), ref)


def test_every_sentence_of_the_spec_is_a_named_check_and_its_cases_are_checked():
    ex = _exercise()
    assert [c.spec for c in ex.cases()] == ["", "", "scale"]
    report = _check(ex, _reference)
    assert report.passed and report.diagnosis is None
    assert [c["name"] for c in report.checks] == ["runs", "inputs unchanged", "shapes and types",
                                                  "values (worked example)", "values (random inputs)",
                                                  "scale", "float64"]
    ignores_scale = _check(ex, lambda x, w, scale=1.0: _reference(x, w, 2.0 if scale == 3.0 else scale))
    failed = {c["name"]: c["message"] for c in ignores_scale.checks if not c["passed"]}
    assert list(failed) == ["scale"] and 'the contract: "The scale defaults to 1."' in failed["scale"]
    float32 = _check(ex, lambda x, w, scale=1.0: {"y": _reference(x, w, scale)["y"].astype(np.float32), "n": len(x)})
    assert [c["name"] for c in float32.checks if not c["passed"]] == ["float64"]


def test_a_sentence_must_be_in_the_docstring_and_have_a_check():
    with pytest.raises(ValueError, match="not in the docstring"):
        _exercise(spec=(Spec("x", "A sentence the stub does not say.", _scale_cases),))
    with pytest.raises(ValueError, match="needs cases or a verify"):
        _exercise(spec=(Spec("x", "The scale defaults to 1."),))
    assert _exercise(spec=(Spec("inputs unchanged", "The output is float64."),)).spec


def test_a_verify_gets_the_extra_data_of_its_call():
    seen = []
    ex = _exercise(spec=(Spec("float64", "The output is float64.",
                              verify=lambda case, out, ref, extra: seen.append(extra) or None),))
    assert _check(ex, _reference).passed and seen == [{"ops": 7}] * 2


def test_an_exact_mutant_a_recognised_family_and_the_read_link():
    ex = _exercise()
    exact = _check(ex, _transposed).diagnosis
    assert exact["mistake"] == "transposed" and exact["exact"] and "transposed" in exact["where"]
    assert exact["read"] == {"step": "rnn_step", "anchor": "mistake-transposed", "widget": "w-charlm"}
    halved = _check(ex, lambda x, w, scale=1.0: {"y": _reference(x, w, scale)["y"] / 2, "n": len(x)}).diagnosis
    assert halved["mistake"] == "halved" and not halved["exact"]
    assert halved["where"] == "output['y'] = the reference times 1/2"


def test_a_partial_match_is_never_the_headline_only_the_closest_under_no_mistake():
    """The transposed mutant explains the worked example and the scale's case, and a slip of the student's
    own makes random inputs 1 differ from it too: no mistake is named, and the record keeps the closest
    one with how many checked values it explains (the reference explains fewer)."""
    def transposed_and_a_slip(x, w, scale=1.0):
        out = _transposed(x, w, scale)
        if len(x) == 3:                        # random inputs 1 only
            out["y"][0, 0] += 1.0
        return out
    d = _check(_exercise(), transposed_and_a_slip).diagnosis
    assert d["mistake"] is None and d["title"] == "no catalogued mistake matches"
    assert d["closest"] == {"mistake": "transposed", "explains": [5, 6]}
    assert "explains" not in d
    # the mutant itself is still named whole, and a record without a partial match has no closest
    assert _check(_exercise(), _transposed).diagnosis["mistake"] == "transposed"

    def slip(x, w, scale=1.0):
        out = _reference(x, w, scale)
        out["y"][-1] += 1.0
        return out
    assert _check(_exercise(), slip).diagnosis["closest"] is None


def test_when_nothing_fits_the_diagnosis_says_what_is_right_and_where_it_differs():
    def slip(x, w, scale=1.0):
        out = _reference(x, w, scale)
        out["y"][-1] += 1.0
        return out
    d = _check(_exercise(), slip).diagnosis
    assert d["mistake"] is None and d["read"]["anchor"] == "" and d["read"]["widget"] == "w-charlm"
    assert "Right: output['n']" in d["explanation"]
    assert "output['y'] row 1 differs (row 0 is right)" in d["where"]
    assert "First difference" in d["explanation"]


def test_an_accepted_convention_passes_with_a_note_and_another_fails_by_name():
    def doubled(x, w, scale=1.0):
        return _reference(x, w, 2 * scale)
    accepted = Mistake("doubled", "y doubled", "both readings are allowed", doubled, convention="the doubled reading",
                       accepted=True)
    report = _check(_exercise(mistakes=(accepted,)), doubled)
    assert report.passed and report.notes == ["y doubled: both readings are allowed"]
    refused = Mistake("doubled", "y doubled", "this exercise uses y = x w; your code uses y = 2 x w", doubled,
                      convention="the doubled reading")
    report = _check(_exercise(mistakes=(refused,)), doubled)
    assert not report.passed and report.diagnosis["convention"] == "the doubled reading"
    assert "this exercise uses" in report.diagnosis["explanation"]


def test_an_input_changed_in_place_and_a_broken_rule_are_named():
    ex = _exercise()
    ref = Expected(ex, ex.cases())
    calls = [CallResult(output=_reference(*c.args, **c.kwargs)) for c in ref.cases]
    calls[1].mutated = ["x"]
    report = _report(ex, "tiny.py", StudentRun(calls=calls), ref)
    assert report.diagnosis["mistake"] == "inputs_changed_in_place" and "changed its input x" in report.diagnosis["where"]
    calls[1].mutated = []
    calls[0] = CallResult(error="RuleBroken: torch.nn.functional.softmax is not allowed here")
    calls[0].broke_rule = "torch.nn.functional.softmax is not allowed here"
    report = _report(ex, "tiny.py", StudentRun(calls=calls), ref)
    failed = [c["name"] for c in report.checks if not c["passed"]]
    assert failed == ["rules"] and report.diagnosis["mistake"] == "rule_broken"


def test_an_input_changed_in_place_comes_before_what_its_values_look_like():
    """A student who writes into x, which another argument shares, gets values that look like another
    mistake (here y halved); the input changed in place is named first, whatever the values."""
    ex = _exercise()
    ref = Expected(ex, ex.cases())
    calls = [CallResult(output={"y": 0.5 * _reference(*c.args, **c.kwargs)["y"], "n": len(c.args[0])})
             for c in ref.cases]
    halved = _report(ex, "tiny.py", StudentRun(calls=calls), ref)
    assert halved.diagnosis["mistake"] == "halved"                   # the values alone: y halved
    calls[0].mutated = ["x"]
    report = _report(ex, "tiny.py", StudentRun(calls=calls), ref)
    assert report.diagnosis["mistake"] == "inputs_changed_in_place", report.diagnosis
    assert "changed its input x in place" in report.diagnosis["where"]
