"""softmax_cross_entropy: the cases, the checks of its sentences, the gradients, its mutants and
recognisers (the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import rnn as _rnn
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, central_differences, same_dtypes, same_values
from seqlab.learn.kit import float32, not_float64, rng
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    made = [Case(said("cases.worked"), (np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]), np.array([0, 1])), {},
                 gradcheck=True)]
    for k, (seed, T, O) in enumerate(((2, 5, 5), (3, 6, 4)), 1):
        generator = rng(seed)
        made.append(Case(said("cases.random", k=k), (generator.normal(size=(T, O)) * 2, generator.integers(0, O, T)), {},
                         gradcheck=True))
    return made


def _normalizer_cases() -> list[Case]:
    generator = rng(41)
    logits, targets = generator.normal(size=(4, 3)), generator.integers(0, 3, 4)
    return [Case(say("normalizer_7"), (logits, targets), {"normalizer": 7}),
            Case(say("normalizer_1"), (logits, targets), {"normalizer": 1}),
            Case(say("normalizer_none"), (logits, targets), {"normalizer": None})]


def _large_cases() -> list[Case]:
    return [Case(say("large"), (np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]]),
                                                np.array([1, 2])))]


def _far_below_cases() -> list[Case]:
    """A target 900 below its row's maximum: its probability exp(-900) rounds to 0 in float64."""
    return [Case(say("far_below"), (np.array([[0.0, 900.0, 3.0], [2.0, 1.0, 0.0]]), np.array([0, 1])))]


CHECKS = {"probabilities": Check(verify=same_values(2)), "loss": Check(verify=same_values(0)),
          "normalizer": Check(_normalizer_cases), "large logits": Check(_large_cases),
          "target far below the maximum": Check(_far_below_cases),
          "float64": Check(lambda: [Case(say("float32"), float32(cases()[1].args, 0))], same_dtypes())}


def gradients(case):
    logits, targets = np.array(case.args[0], dtype=np.float64), case.args[1]
    numeric = central_differences(
        lambda: _rnn.softmax_cross_entropy(logits, targets, case.kwargs.get("normalizer"))[0], {"dlogits": logits})
    return numeric, lambda out: {"dlogits": out[1]}


def _normalizer(case):
    n = case.kwargs.get("normalizer")
    return len(case.args[0]) if n is None else n


# --- mistakes -----------------------------------------------------------------------------------------
def divided_twice(logits, targets, normalizer=None):
    loss, dlogits, probs = _rnn.softmax_cross_entropy(logits, targets, normalizer)
    n = len(logits) if normalizer is None else normalizer
    return loss, dlogits / n, probs


def wrong_softmax_axis(logits, targets, normalizer=None):
    logits = np.asarray(logits, dtype=np.float64)
    e = np.exp(logits - logits.max(axis=0, keepdims=True))
    probs = e / e.sum(axis=0, keepdims=True)           # over the rows instead of the classes
    n = len(logits) if normalizer is None else normalizer
    rows = np.arange(len(targets))
    d = probs.copy()
    d[rows, targets] -= 1
    return float(-np.log(probs[rows, targets]).sum() / n), d / n, probs


def not_averaged(logits, targets, normalizer=None):
    return _rnn.softmax_cross_entropy(logits, targets, 1)


def gradient_not_divided(logits, targets, normalizer=None):
    loss, dlogits, probs = _rnn.softmax_cross_entropy(logits, targets, normalizer)
    return loss, dlogits * _normalizer(Case("", (logits,), {"normalizer": normalizer})), probs


def _rounded_to_zero(ev):
    """The check of a target far below its row's maximum failed with an infinite loss, and the values are
    right on the exercise's own cases: the log of a probability that rounded to 0."""
    if "target far below the maximum" not in ev.failed or not D.own_values_right(ev):
        return None
    for i, case in enumerate(ev.cases):
        if case.spec == "target far below the maximum" and ev.raw[i] is not None:
            loss = ev.raw[i][0]
            if np.ndim(loss) == 0 and float(loss) == np.inf:     # -log(0), not a -inf from a log-sum-exp of zeros
                return say("rounded_to_zero", case=case.label, loss=str(float(loss)))
    return None


def gradient_sign(logits, targets, normalizer=None):
    loss, dlogits, probs = _rnn.softmax_cross_entropy(logits, targets, normalizer)
    return loss, -dlogits, probs


MUTANTS = {"divided_twice": divided_twice, "wrong_softmax_axis": wrong_softmax_axis, "not_averaged": not_averaged,
           "gradient_not_divided": gradient_not_divided, "gradient_sign": gradient_sign}
RECOGNISERS = {
    "divided_twice": D.factor_of((1,), lambda c: {"1/normalizer": 1 / _normalizer(c)}, say("divided_twice")),
    "wrong_softmax_axis": D.normalised_along(2, 0, say("column_over_rows"), say("wrong_axis")),
    "not_averaged": D.factor_of((0, 1), lambda c: {"normalizer": _normalizer(c)}, say("summed"),
                                every_part=True),
    "gradient_not_divided": D.factor_of((1,), lambda c: {"normalizer": _normalizer(c)}, say("gradient_only")),
    "gradient_sign": D.factor_of((1,), lambda c: {"-1": -1.0}, "dlogits"),
    "normalizer_ignored": D.failed_check("normalizer"),
    "max_not_subtracted": D.failed_check("large logits", raises=True),
    "log_of_rounded_probability": _rounded_to_zero,
    "not_float64": not_float64()}
axes = {1: ("row", "class"), 2: ("row", "class")}
