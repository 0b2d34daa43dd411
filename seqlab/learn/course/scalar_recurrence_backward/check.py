"""scalar_recurrence_backward: the cases, the checks of its sentences, the gradients and per-step terms,
its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, central_differences, same_dtypes, same_values
from seqlab.learn.kit import left_at_zero, not_float64, recurrence_cases, same
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return recurrence_cases()


def _dtype_cases() -> list[Case]:
    return [Case(say("xs_float32"), (0.5, np.array([1.0, 0.0, -1.0], dtype=np.float32)), {"h0": 0.0}),
            Case(say("xs_integers"), (0.9, np.array([2, -1, 0, 1])), {"h0": 0.5})]


CHECKS = {"backward through tanh": Check(verify=same_values("xs", "h0")),
          "a summed over time": Check(verify=same_values("a")),
          "float64": Check(_dtype_cases, same_dtypes())}


def gradients(case):
    from seqlab.labs.recurrence import scalar_recurrence
    a, xs = case.args
    params = {"a": np.array(float(a)), "xs": np.array(xs, dtype=np.float64), "h0": np.array(float(case.kwargs["h0"]))}
    numeric = central_differences(
        lambda: float(scalar_recurrence(float(params["a"]), params["xs"], float(params["h0"]))[-1]), params)
    return numeric, same


def step_terms(case):
    """d h_T / d a, step by step: step t's own term (1 - h_t^2) h_{t-1}, times d h_T / d h_t."""
    from seqlab.labs.recurrence import scalar_recurrence, scalar_recurrence_backward
    a, xs = case.args
    xs, h0 = np.asarray(xs, dtype=np.float64), float(case.kwargs.get("h0", 0.0))
    hs = np.concatenate([[h0], scalar_recurrence(a, xs, h0)])
    return {"a": np.array([scalar_recurrence_backward(a, xs[t + 1:], hs[t + 1])["h0"] *
                           scalar_recurrence_backward(a, xs[t:t + 1], hs[t])["a"] for t in range(len(xs))])}


# --- mistakes -----------------------------------------------------------------------------------------
def _variant(a, xs, h0, *, summed=True, tanh_prime="h", a_term="h_prev", last_factor=True):
    from seqlab.labs.recurrence import scalar_recurrence
    xs = np.asarray(xs, dtype=np.float64)
    hs = scalar_recurrence(a, xs, h0)
    prev = np.concatenate([[float(h0)], hs[:-1]])
    dh, dxs, da = 1.0, np.zeros_like(xs), 0.0
    for t in reversed(range(len(xs))):
        derivative = {"h": 1 - hs[t] ** 2, "h_prev": 1 - prev[t] ** 2, "none": 1.0}[tanh_prime]
        dpre = dh * derivative
        term = dpre * (prev[t] if a_term == "h_prev" else hs[t])
        da = da + term if summed else term          # overwritten each step instead of summed
        dxs[t] = dpre
        dh = dpre * a if (last_factor or t > 0) else dpre
    return {"a": da, "xs": dxs, "h0": dh}


def a_not_summed(a, xs, h0=0.0):
    return _variant(a, xs, h0, summed=False)


def no_tanh_derivative(a, xs, h0=0.0):
    return _variant(a, xs, h0, tanh_prime="none")


def tanh_derivative_of_previous_state(a, xs, h0=0.0):
    return _variant(a, xs, h0, tanh_prime="h_prev")


def a_term_uses_h_t(a, xs, h0=0.0):
    return _variant(a, xs, h0, a_term="h")


def h0_without_last_factor(a, xs, h0=0.0):
    return _variant(a, xs, h0, last_factor=False)


def h0_ignored(a, xs, h0=0.0):
    return _variant(a, xs, 0.0)


MUTANTS = {"h0_ignored": h0_ignored, "a_not_summed": a_not_summed, "no_tanh_derivative": no_tanh_derivative,
           "tanh_derivative_of_previous_state": tanh_derivative_of_previous_state,
           "a_term_uses_h_t": a_term_uses_h_t, "h0_without_last_factor": h0_without_last_factor}
RECOGNISERS = {"a_not_summed": D.summed_over_time(("a",), say("gradient_of_a")),
               "h0_without_last_factor": D.factor_of(("h0",), lambda case: {"1/a": 1 / case.args[0]},
                                                     say("gradient_of_h0")),
               "gradient_left_at_zero": left_at_zero(), "not_float64": not_float64()}
axes = {"xs": ("time step",)}
