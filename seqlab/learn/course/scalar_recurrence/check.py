"""scalar_recurrence: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes
from seqlab.learn.kit import not_float64, one_more_row, recurrence_cases
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return recurrence_cases()


def _dtype_cases() -> list[Case]:
    return [Case(say("xs_float32"), (0.5, np.array([1.0, 0.0, -1.0], dtype=np.float32)), {"h0": 0.0}),
            Case(say("xs_integers"), (0.9, np.array([2, -1, 0, 1])), {"h0": 0.5}),
            Case(say("xs_list"), (0.3, [0.5, -0.25]), {"h0": 0.1})]


def _empty_cases() -> list[Case]:
    return [Case(say("empty"), (0.5, np.zeros(0)), {"h0": 0.3})]


def _default_cases() -> list[Case]:
    return [Case(say("h0_left_out"), (0.8, np.array([0.5, -1.0, 2.0, 0.1])))]


CHECKS = {"float64": Check(_dtype_cases, same_dtypes()), "empty sequence": Check(_empty_cases),
          "h0 default": Check(_default_cases)}


# --- mistakes -----------------------------------------------------------------------------------------
def no_tanh(a, xs, h0=0.0):
    states, h = [], float(h0)
    for x in np.asarray(xs, dtype=np.float64):
        h = a * h + x
        states.append(h)
    return np.array(states)


def sigmoid_instead_of_tanh(a, xs, h0=0.0):
    states, h = [], float(h0)
    for x in np.asarray(xs, dtype=np.float64):
        h = 1 / (1 + np.exp(-(a * h + x)))
        states.append(h)
    return np.array(states)


def states_shifted(a, xs, h0=0.0):
    states, h = [], float(h0)
    for x in np.asarray(xs, dtype=np.float64):
        states.append(h)                 # records h_{t-1}, not h_t
        h = np.tanh(a * h + x)
    return np.array(states)


def h0_ignored(a, xs, h0=0.0):
    from seqlab.labs.recurrence import scalar_recurrence
    return scalar_recurrence(a, xs, 0.0)


MUTANTS = {"no_tanh": no_tanh, "sigmoid_instead_of_tanh": sigmoid_instead_of_tanh, "states_shifted": states_shifted,
           "h0_ignored": h0_ignored}
RECOGNISERS = {"states_shifted": D.shifted((), axis_name="time step"),
               "includes_h0": one_more_row(()),
               "not_float64": not_float64(),
               "empty_sequence_fails": D.failed_check("empty sequence", raises=True),
               "h0_default": D.failed_check("h0 default", raises=True)}
axes = {"": ("time step",)}
